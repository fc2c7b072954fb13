package linux

import (
	"path"
	"strings"

	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/node"
)

// linuxImagesStep is the images step, when there is something to preload.
func linuxImagesStep(p Plan) (node.Step, bool) {
	if p.Images.Empty() {
		return node.Step{}, false
	}
	return node.Step{Name: node.StepImages, Script: linuxImages(p)}, true
}

// linuxImages imports the archives, pulls pull_images (through the
// registry mirrors' hosts directory) and kubeadm's images, labels them
// pinned, and lists each with its digest, failing for one that is missing.
// An archive whose images carry its sha256 label is not imported again.
func linuxImages(p Plan) []byte {
	s := newSh("container images preloaded into containerd's " + node.ContainerdK8sNS + " namespace")
	for _, kv := range proxyEnv(p.Proxy) {
		s.line("export %s", q(kv))
	}
	// has REF LABEL...: containerd has REF, with every LABEL (k=v).
	s.line(`has() {`)
	s.line(`  line=$(ctr -n %s images ls | awk -v r="$1" '$1 == r')`, node.ContainerdK8sNS)
	s.line(`  [ -n "$line" ] || return 1`)
	s.line(`  shift`)
	s.line(`  for l in "$@"; do case "$line" in *"$l"*) ;; *) return 1 ;; esac; done`)
	s.line(`}`)
	s.line(`pin() { ctr -n %s images label "$1" %s >/dev/null; }`, node.ContainerdK8sNS, q(node.PinnedLabel))
	for _, a := range p.Images.Archives {
		label := node.ArchiveLabelKey + "=" + a.SHA256
		var checks []string
		for _, r := range a.Refs {
			checks = append(checks, "has "+q(r)+" "+q(label)+" "+q(node.PinnedLabel))
		}
		s.line("if %s; then", strings.Join(checks, " && "))
		s.line("  echo %s", q("ok: "+a.FileName+" imported ("+strings.Join(a.Refs, ", ")+")"))
		s.line("else")
		// The default platform (the guest's, linux/amd64): an index's other
		// platforms need not be in the archive.
		s.line("  ctr -n %s images import %s", node.ContainerdK8sNS, q(path.Join(p.Staging, a.FileName)))
		for _, r := range a.Refs {
			s.line("  ctr -n %s images label %s %s %s >/dev/null || { echo %s >&2; exit 1; }", node.ContainerdK8sNS, q(r), q(label), q(node.PinnedLabel),
				q("image "+r+" is not in containerd's "+node.ContainerdK8sNS+" namespace after importing "+a.FileName+": the archive does not hold the image it names"))
		}
		s.line("  echo %s", q("changed: "+a.FileName+" imported ("+strings.Join(a.Refs, ", ")+")"))
		s.line("fi")
	}
	for _, r := range p.Images.Pull {
		s.line("if has %s %s; then echo %s; else ctr -n %s images pull --hosts-dir %s %s >/dev/null; pin %s; echo %s; fi",
			q(r), q(node.PinnedLabel), q("ok: "+r+" pulled"), node.ContainerdK8sNS, q(linuxCertsDir), q(r), q(r), q("changed: "+r+" pulled"))
	}
	s.line("expected=%s", q(strings.Join(p.Images.Refs(), " ")))
	if p.Images.Kubeadm {
		v := q(p.KubernetesVersion)
		s.line("kubeadm_images=$(kubeadm config images list --kubernetes-version %s)", v)
		s.line(`missing=''; for r in $kubeadm_images; do has "$r" || missing="$missing $r"; done`)
		s.line(`if [ -n "$missing" ]; then`)
		s.line("  kubeadm config images pull --kubernetes-version %s --cri-socket unix:///run/containerd/containerd.sock", v)
		s.line(`  echo "changed: kubeadm's images pulled:$missing"`)
		s.line(`else echo "ok: kubeadm's images pulled"; fi`)
		s.line(`for r in $kubeadm_images; do has "$r" %s || { pin "$r"; echo "changed: $r pinned"; }; done`, q(node.PinnedLabel))
		s.line(`expected="$expected $kubeadm_images"`)
	}
	s.line(`failed=''`)
	s.line(`for r in $expected; do`)
	s.line(`  d=$(ctr -n %s images ls | awk -v r="$r" '$1 == r { print $3 }')`, node.ContainerdK8sNS)
	s.line(`  if [ -n "$d" ]; then echo "%s$r $d"; else echo "image $r is not in containerd's %s namespace after the import and pulls" >&2; failed=1; fi`, node.ImageListedPrefix, node.ContainerdK8sNS)
	s.line(`done`)
	s.line("[ -z \"$failed\" ] || { echo %s >&2; exit 1; }", q("an archive must hold the references it names; see: ctr -n "+node.ContainerdK8sNS+" images ls"))
	return s.bytes()
}
