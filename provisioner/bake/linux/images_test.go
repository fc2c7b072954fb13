// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package linux

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/internal/golden"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/guesttest"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/node"
)

// fakeCtr is a ctr that keeps the k8s.io namespace in a file, one
// "REF DIGEST LABELS" line per image, and knows which references each
// archive holds; `kubeadm config images list|pull` is faked beside it.
const fakeCtr = `#!/bin/sh
set -eu
db=$FAKE_DIR/images; touch "$db"
[ "$1 $2" = "-n k8s.io" ] || { echo "fake ctr: want -n k8s.io" >&2; exit 2; }
shift 2
echo "ctr $*" >> "$FAKE_DIR/calls"
# add REF: a new image, or the same one updated (containerd keeps its labels).
add() { grep -q "^$1 " "$db" || echo "$1 sha256:$(printf %s "$1" | sha256sum | cut -c1-64) -" >> "$db"; }
case "$1 $2" in
"images ls")
  printf 'REF TYPE DIGEST SIZE PLATFORMS LABELS\n'
  while read -r ref digest labels; do printf '%s application/vnd.oci.image.manifest.v1+json %s 311.4 KiB linux/amd64 %s\n' "$ref" "$digest" "$labels"; done < "$db" ;;
"images import")
  for ref in $(cat "$3.refs"); do add "$ref"; done ;;
"images pull")
  [ "$3" = --hosts-dir ] || exit 2
  add "$5" ;;
"images label")
  ref=$3; shift 3
  line=$(grep "^$ref " "$db") || { echo "ctr: image $ref: not found" >&2; exit 1; }
  labels=$(echo "$line" | cut -d' ' -f3); for l in "$@"; do case ",$labels," in *",$l,"*) ;; *) labels="$labels,$l" ;; esac; done
  labels=$(echo "$labels" | sed 's/^-,//')
  grep -v "^$ref " "$db" > "$db.new" || true; echo "$ref $(echo "$line" | cut -d' ' -f2) $labels" >> "$db.new"; mv "$db.new" "$db" ;;
*) echo "fake ctr: $*" >&2; exit 2 ;;
esac
`

const fakeKubeadm = `#!/bin/sh
echo "kubeadm $*" >> "$FAKE_DIR/calls"
case "$1 $2 $3" in
"config images list") printf 'registry.k8s.io/kube-apiserver:v1.33.13\nregistry.k8s.io/pause:3.10\n' ;;
"config images pull") for r in registry.k8s.io/kube-apiserver:v1.33.13 registry.k8s.io/pause:3.10; do ctr -n k8s.io images pull --hosts-dir x "$r"; done ;;
esac
`

// The Linux images step, run against a fake ctr and kubeadm: it imports
// and pulls, pins, lists every image with its digest; a second run
// changes nothing; an image an archive does not hold fails the step.
func TestLinuxImagesStep(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	require.NoError(t, os.MkdirAll(bin, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(bin, "ctr"), []byte(fakeCtr), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(bin, "kubeadm"), []byte(fakeKubeadm), 0o755))
	p := testPlan()
	p.Staging = dir
	p.Images = guesttest.Images()
	p.Images.Kubeadm = node.KubeadmPull
	for _, a := range p.Images.Archives {
		require.NoError(t, os.WriteFile(filepath.Join(dir, a.FileName+".refs"), []byte(strings.Join(a.Refs, "\n")), 0o644))
	}
	step, ok := imagesStep(p)
	require.True(t, ok)
	script := filepath.Join(dir, "images.sh")
	require.NoError(t, os.WriteFile(script, step.Script, 0o644))
	run := func() (string, error) {
		cmd := exec.Command("sh", script)
		cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "FAKE_DIR="+dir)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run()
	require.NoError(t, err, out)
	assert.Contains(t, out, "changed: image-2-tools.tar imported (docker.io/library/busybox:1.36, example.com/it's:v1)")
	assert.Contains(t, out, "changed: registry.k8s.io/kube-proxy:v1.33.13 pulled")
	assert.Contains(t, out, "changed: kubeadm's images pulled: registry.k8s.io/kube-apiserver:v1.33.13")
	listed := node.ParseImageListing(out)
	var names []string
	for _, img := range listed {
		names = append(names, img.Name)
		assert.Regexp(t, `^sha256:[0-9a-f]{64}$`, img.Digest, img.Name)
	}
	assert.Equal(t, []string{"registry.k8s.io/pause:3.10", "docker.io/library/busybox:1.36", "example.com/it's:v1", "registry.k8s.io/kube-proxy:v1.33.13",
		"registry.k8s.io/kube-apiserver:v1.33.13"}, names, "every expected image once, kubeadm's pause too")
	db, err := os.ReadFile(filepath.Join(dir, "images"))
	require.NoError(t, err)
	for _, line := range strings.Split(strings.TrimSpace(string(db)), "\n") {
		assert.Contains(t, line, node.PinnedLabel, "every image pinned: %s", line)
	}
	assert.Contains(t, string(db), "registry.k8s.io/pause:3.10 sha256:")
	assert.Contains(t, string(db), node.ArchiveLabelKey+"="+strings.Repeat("1", 64))

	again, err := run()
	require.NoError(t, err, again)
	assert.NotContains(t, again, "changed: ", "a second bake changes nothing")
	assert.Equal(t, listed, node.ParseImageListing(again))

	// A new archive for the same reference is imported again.
	p.Images.Archives[0].SHA256 = strings.Repeat("3", 64)
	step, _ = imagesStep(p)
	require.NoError(t, os.WriteFile(script, step.Script, 0o644))
	third, err := run()
	require.NoError(t, err, third)
	assert.Contains(t, third, "changed: image-1-pause.tar imported")
	assert.NotContains(t, third, "changed: image-2-tools.tar")

	// An archive that does not hold what it names fails, naming the image.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "image-2-tools.tar.refs"), []byte("docker.io/library/busybox:1.36"), 0o644))
	require.NoError(t, os.Remove(filepath.Join(dir, "images")))
	out, err = run()
	require.Error(t, err)
	assert.Contains(t, out, "image example.com/it's:v1 is not in containerd's k8s.io namespace")
}

// No images, no step; the step comes after the kubelet's and crictl's
// (kubeadm is installed, containerd running), before the self-check, on
// both OSes.
func TestImagesStepPlace(t *testing.T) {
	p := testPlan()
	assert.NotContains(t, guesttest.StepNames(Steps(p)), node.StepImages)
	p.Images = guesttest.Images()
	assert.Equal(t, []string{"settle", "prerequisites", "node-basics", "kernel", "containerd", "cni", "kubernetes", "crictl", "images", "joiner", "self-check", "generalize", "cleanup"}, guesttest.StepNames(Steps(p)))
}

// renderedImages are the images step's golden.
func renderedImages() map[string][]byte {
	p := testPlan()
	p.Images = guesttest.Images()
	p.Images.Kubeadm = node.KubeadmPull
	return map[string][]byte{"images/linux-images.sh": images(p)}
}

func TestImagesGolden(t *testing.T) {
	for name, got := range renderedImages() {
		t.Run(name, func(t *testing.T) { golden.Assert(t, name, got) })
	}
}

// The Linux script is valid shell.
func TestLinuxImagesScriptParses(t *testing.T) {
	file := filepath.Join(t.TempDir(), "images.sh")
	require.NoError(t, os.WriteFile(file, renderedImages()["images/linux-images.sh"], 0o644))
	out, err := exec.Command("sh", "-n", file).CombinedOutput()
	assert.NoError(t, err, string(out))
}

// kubeadm_images = "archives": kubeadm's images come from the archives
// alone. When the archives hold every one, nothing is pulled, each is
// pinned and named as kubeadm's; when one is missing, the step fails
// naming it, still pulling nothing.
func TestLinuxKubeadmImagesFromArchives(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	require.NoError(t, os.MkdirAll(bin, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(bin, "ctr"), []byte(fakeCtr), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(bin, "kubeadm"), []byte(fakeKubeadm), 0o755))
	p := testPlan()
	p.Staging = dir
	p.Images = node.Images{Kubeadm: node.KubeadmArchives, Archives: []node.ImageFile{
		{FileName: "image-1-control-plane.tar", SHA256: strings.Repeat("1", 64), Refs: []string{"registry.k8s.io/kube-apiserver:v1.33.13", "registry.k8s.io/pause:3.10"}},
	}}
	refs := filepath.Join(dir, "image-1-control-plane.tar.refs")
	require.NoError(t, os.WriteFile(refs, []byte(strings.Join(p.Images.Archives[0].Refs, "\n")), 0o644))
	step, ok := imagesStep(p)
	require.True(t, ok)
	script := filepath.Join(dir, "images.sh")
	require.NoError(t, os.WriteFile(script, step.Script, 0o644))
	run := func() (string, error) {
		cmd := exec.Command("sh", script)
		cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "FAKE_DIR="+dir)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run()
	require.NoError(t, err, out)
	assert.Contains(t, out, "ok: kubeadm's images imported")
	assert.Equal(t, []string{"registry.k8s.io/kube-apiserver:v1.33.13", "registry.k8s.io/pause:3.10"}, node.ParseKubeadmImages(out))
	calls, err := os.ReadFile(filepath.Join(dir, "calls"))
	require.NoError(t, err)
	assert.NotContains(t, string(calls), "pull", "nothing is pulled")
	db, err := os.ReadFile(filepath.Join(dir, "images"))
	require.NoError(t, err)
	for _, line := range strings.Split(strings.TrimSpace(string(db)), "\n") {
		assert.Contains(t, line, node.PinnedLabel, "every image pinned: %s", line)
	}

	// An archive of the pause image alone.
	p.Images.Archives[0].Refs = []string{"registry.k8s.io/pause:3.10"}
	step, _ = imagesStep(p)
	require.NoError(t, os.WriteFile(script, step.Script, 0o644))
	require.NoError(t, os.WriteFile(refs, []byte("registry.k8s.io/pause:3.10"), 0o644))
	require.NoError(t, os.Remove(filepath.Join(dir, "images")))
	require.NoError(t, os.Remove(filepath.Join(dir, "calls")))
	out, err = run()
	require.Error(t, err, out)
	assert.Contains(t, out, "kubeadm config images list names images no images archive holds: registry.k8s.io/kube-apiserver:v1.33.13")
	assert.Contains(t, out, `kubeadm_images = "pull"`)
	calls, _ = os.ReadFile(filepath.Join(dir, "calls"))
	assert.NotContains(t, string(calls), "pull", "nothing is pulled")
}

// The self-check verifies kubeadm's list: each image present and pinned.
func TestLinuxSelfCheckKubeadmImages(t *testing.T) {
	bin := t.TempDir()
	fakes := map[string]string{
		"kubeadm": `case "$1 $2 $3" in "config images list") printf 'registry.k8s.io/kube-apiserver:v1.33.13\nregistry.k8s.io/etcd:3.5.21-0\nregistry.k8s.io/pause:3.10\n' ;; *) echo v1.33.13 ;; esac`,
		"ctr": `[ "$*" = "-n k8s.io images ls" ] || exit 0
echo 'REF TYPE DIGEST SIZE PLATFORMS LABELS'
echo 'registry.k8s.io/kube-apiserver:v1.33.13 x sha256:1 1 linux/amd64 io.cri-containerd.pinned=pinned'
echo 'registry.k8s.io/pause:3.10 x sha256:2 1 linux/amd64 -'`,
	}
	for name, body := range fakes {
		require.NoError(t, os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755))
	}
	p := testPlan()
	p.Images = node.Images{Kubeadm: node.KubeadmArchives}
	script := filepath.Join(t.TempDir(), "self-check.sh")
	require.NoError(t, os.WriteFile(script, SelfCheck(p.selfCheck()), 0o644))
	cmd := exec.Command("sh", script)
	cmd.Env = append(os.Environ(), "PATH="+bin+":/usr/bin:/bin")
	out, _ := cmd.CombinedOutput()
	got := string(out)
	assert.Contains(t, got, "ok: kubeadm's image registry.k8s.io/kube-apiserver:v1.33.13 (pinned)")
	assert.Contains(t, got, "problem: kubeadm's image registry.k8s.io/etcd:3.5.21-0 is not in containerd")
	assert.Contains(t, got, "problem: kubeadm's image registry.k8s.io/pause:3.10 is not pinned")

	p.Images = node.Images{}
	assert.NotContains(t, string(SelfCheck(p.selfCheck())), "kubeadm config images list", "not checked without kubeadm_images")
}
