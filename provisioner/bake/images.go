package bake

import (
	"archive/tar"
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"github.com/distribution/reference"
	"io"
	"os"
	"path"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"

	"github.com/kubenode/packer-plugin-kubenode/internal/baked"
	"github.com/kubenode/packer-plugin-kubenode/internal/filehash"
	"github.com/kubenode/packer-plugin-kubenode/internal/powershell"
)

// Step name of the image preload, on Linux and Windows.
const stepImages = "images"

// Labels the images step sets on every image it preloads. containerd's CRI
// plugin reports an image labelled io.cri-containerd.pinned=pinned as
// pinned (containerd 1.7.3 and later: pkg/cri/store/image/image.go reads
// labels.PinnedImageLabelKey), and the kubelet's image garbage collection
// never removes a pinned image. The archive label lets a second bake see
// that an archive is imported already.
const (
	pinnedLabel       = "io.cri-containerd.pinned=pinned"
	archiveLabelKey   = "kubenode.io/archive-sha256"
	containerdK8sNS   = "k8s.io"
	imageListedPrefix = "image: "
)

// Images is what the images step puts into containerd's k8s.io namespace.
type Images struct {
	// Archives are uploaded to the staging directory.
	Archives []ImageFile
	// Pull are references pulled in the guest (normalized).
	Pull []string
	// Kubeadm pulls kubeadm's images for the plan's Kubernetes version
	// (`kubeadm config images pull`); Linux only.
	Kubeadm bool
}

// ImageFile is one uploaded archive.
type ImageFile struct {
	// FileName is its name in the staging directory.
	FileName string
	// SHA256 is its checksum (hex).
	SHA256 string
	// Refs are the (normalized) references it holds.
	Refs []string
}

// empty says there is nothing to preload: no images step.
func (im Images) empty() bool { return len(im.Archives) == 0 && len(im.Pull) == 0 && !im.Kubeadm }

// refs are every reference the images step must leave in containerd
// (kubeadm's are known on the guest only).
func (im Images) refs() []string {
	var out []string
	for _, a := range im.Archives {
		out = append(out, a.Refs...)
	}
	return append(out, im.Pull...)
}

// NormalizeRef writes an image reference the way containerd stores it
// (and `ctr images ls` prints it): docker.io/library/ for a bare Docker
// Hub name, :latest when neither tag nor digest is given, and only the
// digest when both are (distribution/reference's ParseDockerRef, which
// containerd's importer and the CRI plugin use).
func NormalizeRef(ref string) (string, error) {
	if ref == "" || strings.TrimSpace(ref) != ref || oneLine(ref) != "" {
		return "", fmt.Errorf("%q is not an image reference", ref)
	}
	// containerd's own normalization (github.com/distribution/reference):
	// "localhost" and names with a "." or ":" are registries.
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return "", fmt.Errorf("%q is not an image reference: %w", ref, err)
	}
	// With a digest the tag goes, as containerd's ParseDockerRef drops it.
	if c, ok := named.(reference.Canonical); ok {
		if named, err = reference.WithDigest(reference.TrimNamed(named), c.Digest()); err != nil {
			return "", fmt.Errorf("%q is not an image reference: %w", ref, err)
		}
	}
	return reference.TagNameOnly(named).String(), nil
}

// ArchiveRefs reads the image references an archive holds, as containerd's
// importer names them: an OCI layout's index.json by its manifests'
// io.containerd.image.name annotation, else org.opencontainers.image.ref.name
// when that is a full reference (a tag alone would be imported under a
// made-up name); a Docker archive's manifest.json by its RepoTags.
func ArchiveRefs(file string) ([]string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	head := make([]byte, 2)
	if n, _ := io.ReadFull(f, head); n == 2 && head[0] == 0x1f && head[1] == 0x8b {
		return nil, errors.New("it is gzip-compressed: give the plain tar (gunzip it), which `ctr images import` of containerd 1.x reads")
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	var ociLayout, dockerManifest bool
	var index []byte
	tr := tar.NewReader(bufio.NewReader(f))
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("it is not a tar archive: %w", err)
		}
		switch path.Clean(hdr.Name) {
		case "oci-layout":
			ociLayout = true
		case "manifest.json":
			dockerManifest = true
		case "index.json":
			if index, err = io.ReadAll(io.LimitReader(tr, 16<<20)); err != nil {
				return nil, err
			}
		}
	}
	var refs []string
	switch {
	case ociLayout:
		if index == nil {
			return nil, errors.New("its oci-layout has no index.json")
		}
		idx, err := v1.ParseIndexManifest(bytes.NewReader(index))
		if err != nil {
			return nil, fmt.Errorf("its index.json: %w", err)
		}
		for _, m := range idx.Manifests {
			ref := m.Annotations["io.containerd.image.name"]
			if ref == "" && strings.ContainsAny(m.Annotations[v1AnnotationRefName], "/:@") {
				ref = m.Annotations[v1AnnotationRefName]
			}
			if ref != "" {
				refs = append(refs, ref)
			}
		}
	case dockerManifest:
		m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(file) })
		if err != nil {
			return nil, fmt.Errorf("its manifest.json: %w", err)
		}
		for _, d := range m {
			refs = append(refs, d.RepoTags...)
		}
	default:
		return nil, errors.New("it has neither oci-layout (OCI image layout) nor manifest.json (docker save): it is not an image archive")
	}
	out := make([]string, 0, len(refs))
	for _, r := range refs {
		n, err := NormalizeRef(r)
		if err != nil {
			return nil, fmt.Errorf("it names an image %w", err)
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out, nil
}

// v1AnnotationRefName is the OCI image spec's reference-name annotation.
const v1AnnotationRefName = "org.opencontainers.image.ref.name"

// prepareImages checks `images`, `pull_images` and `pull_kubeadm_images`:
// every archive exists, has the sha256 given and names at least one image;
// every reference parses. It hashes the archives, so a wrong one fails
// `packer validate` before any machine boots.
func (c *Config) prepareImages() []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	for i := range c.Images {
		im := &c.Images[i]
		key := fmt.Sprintf("images[%d]", i)
		im.SHA256 = strings.TrimPrefix(strings.ToLower(strings.TrimSpace(im.SHA256)), "sha256:")
		if !isSHA256(im.SHA256) {
			add("%s.sha256: %q is not 64 hex digits of a sha256 (sha256sum %s prints it)", key, im.SHA256, orElse(im.Path, "FILE"))
		}
		if im.Path == "" {
			add("%s.path: required: a local image archive (docker save or OCI layout tar)", key)
			continue
		}
		if err := im.check(); err != nil {
			add("%s: %v", key, err)
			continue
		}
		if refs, err := ArchiveRefs(im.Path); err != nil {
			add("%s.path: %s: %v", key, im.Path, err)
		} else if len(refs) == 0 {
			add("%s.path: %s names no image (no RepoTags in manifest.json, no io.containerd.image.name or full org.opencontainers.image.ref.name in index.json), "+
				"so containerd would import it under a made-up name; tag the image when you save it (docker save REPO:TAG)", key, im.Path)
		}
	}
	for i, ref := range c.PullImages {
		if _, err := NormalizeRef(ref); err != nil {
			add("pull_images[%d]: %v", i, err)
		}
	}
	if c.PullKubeadmImages && c.GuestOS == "windows" {
		add(`pull_kubeadm_images: kubeadm's images are the Linux control plane's, which a Windows node never runs; remove it for guest_os_type = "windows" (preload the pause image with images or pull_images)`)
	}
	return errs
}

// check says whether the archive is there and has its sha256 (when that is
// well-formed).
func (im ImageArchive) check() error {
	if fi, err := os.Stat(im.Path); err != nil {
		return fmt.Errorf("path: %w", err)
	} else if !fi.Mode().IsRegular() {
		return fmt.Errorf("path: %s is not a file", im.Path)
	}
	if !isSHA256(im.SHA256) {
		return nil
	}
	got, err := filehash.SHA256(im.Path)
	if err != nil {
		return fmt.Errorf("path: %w", err)
	}
	if got != im.SHA256 {
		return fmt.Errorf("%s has sha256 %s, sha256 says %s: give the archive this checksum is of, or its checksum", im.Path, got, im.SHA256)
	}
	return nil
}

// checkImageArchives checks every archive again, before anything goes to
// the guest: a file may change between `packer validate` and the build.
func (c *Config) checkImageArchives() error {
	var errs *packersdk.MultiError
	for i, im := range c.Images {
		if err := im.check(); err != nil {
			errs = packersdk.MultiErrorAppend(errs, fmt.Errorf("images[%d]: %w", i, err))
		}
	}
	if errs != nil {
		return fmt.Errorf("nothing was uploaded: %w", errs)
	}
	return nil
}

// imagePlan reads the archives' references and names their files in the
// staging directory; it returns the uploads too (as artifacts named
// `image:<file>`, whose checksums the manifest records).
func (c *Config) imagePlan(kubeadm bool) (Images, []Artifact, error) {
	im := Images{Kubeadm: kubeadm}
	var arts []Artifact
	for i, a := range c.Images {
		refs, err := ArchiveRefs(a.Path)
		if err == nil && len(refs) == 0 {
			err = errors.New("names no image")
		}
		if err != nil {
			return Images{}, nil, fmt.Errorf("images[%d].path: %s: %w", i, a.Path, err)
		}
		file := fmt.Sprintf("image-%d-%s", i+1, safeFileName(path.Base(strings.ReplaceAll(a.Path, `\`, "/"))))
		im.Archives = append(im.Archives, ImageFile{FileName: file, SHA256: a.SHA256, Refs: refs})
		arts = append(arts, Artifact{Name: "image:" + file, FileName: file, Local: a.Path, SHA256: a.SHA256})
	}
	for _, ref := range c.PullImages {
		n, err := NormalizeRef(ref)
		if err != nil {
			return Images{}, nil, fmt.Errorf("pull_images: %w", err)
		}
		if !slices.Contains(im.Pull, n) {
			im.Pull = append(im.Pull, n)
		}
	}
	return im, arts, nil
}

// safeFileName keeps letters, digits, dot, dash and underscore.
func safeFileName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	return string(b)
}

// warnPauseImage warns when nothing puts the pause image into the image:
// every node would pull it when it starts its first Pod, which an
// air-gapped node cannot. kubeadmPause is kubeadm's pause image for the
// Kubernetes version, which pull_kubeadm_images pulls.
func warnPauseImage(ui packersdk.Ui, im Images, pause, kubeadmPause string) {
	want, err := NormalizeRef(pause)
	if err != nil {
		return
	}
	if slices.Contains(im.refs(), want) {
		return
	}
	if kp, err := NormalizeRef(kubeadmPause); im.Kubeadm && err == nil && kp == want {
		return
	}
	ui.Error(fmt.Sprintf("kubenode-bake: warning: the pause image %s is not preloaded (no images archive holds it, pull_images does not name it, pull_kubeadm_images does not pull it): "+
		"every node will pull it when it starts its first Pod, which fails on an air-gapped node; add an images archive with it, or list it in pull_images", pause))
}

// parseImageListing reads the "image: REF DIGEST" lines the images step
// prints after its import.
func parseImageListing(out string) []baked.Image {
	images := []baked.Image{}
	for _, line := range strings.Split(out, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), imageListedPrefix)
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) != 2 || !strings.HasPrefix(fields[1], "sha256:") {
			continue
		}
		img := baked.Image{Name: fields[0], Digest: fields[1]}
		if !slices.Contains(images, img) {
			images = append(images, img)
		}
	}
	return images
}

// linuxImagesStep is the images step, when there is something to preload.
func linuxImagesStep(p LinuxPlan) (Step, bool) {
	if p.Images.empty() {
		return Step{}, false
	}
	return Step{stepImages, linuxImages(p)}, true
}

// linuxImages imports the archives, pulls pull_images (through the
// registry mirrors' hosts directory) and kubeadm's images, labels them
// pinned, and lists each with its digest, failing for one that is missing.
// An archive whose images carry its sha256 label is not imported again.
func linuxImages(p LinuxPlan) []byte {
	s := newSh("container images preloaded into containerd's " + containerdK8sNS + " namespace")
	for _, kv := range p.Proxy.env() {
		s.line("export %s", q(kv))
	}
	// has REF LABEL...: containerd has REF, with every LABEL (k=v).
	s.line(`has() {`)
	s.line(`  line=$(ctr -n %s images ls | awk -v r="$1" '$1 == r')`, containerdK8sNS)
	s.line(`  [ -n "$line" ] || return 1`)
	s.line(`  shift`)
	s.line(`  for l in "$@"; do case "$line" in *"$l"*) ;; *) return 1 ;; esac; done`)
	s.line(`}`)
	s.line(`pin() { ctr -n %s images label "$1" %s >/dev/null; }`, containerdK8sNS, q(pinnedLabel))
	for _, a := range p.Images.Archives {
		label := archiveLabelKey + "=" + a.SHA256
		var checks []string
		for _, r := range a.Refs {
			checks = append(checks, "has "+q(r)+" "+q(label)+" "+q(pinnedLabel))
		}
		s.line("if %s; then", strings.Join(checks, " && "))
		s.line("  echo %s", q("ok: "+a.FileName+" imported ("+strings.Join(a.Refs, ", ")+")"))
		s.line("else")
		// The default platform (the guest's, linux/amd64): an index's other
		// platforms need not be in the archive.
		s.line("  ctr -n %s images import %s", containerdK8sNS, q(path.Join(p.Staging, a.FileName)))
		for _, r := range a.Refs {
			s.line("  ctr -n %s images label %s %s %s >/dev/null || { echo %s >&2; exit 1; }", containerdK8sNS, q(r), q(label), q(pinnedLabel),
				q("image "+r+" is not in containerd's "+containerdK8sNS+" namespace after importing "+a.FileName+": the archive does not hold the image it names"))
		}
		s.line("  echo %s", q("changed: "+a.FileName+" imported ("+strings.Join(a.Refs, ", ")+")"))
		s.line("fi")
	}
	for _, r := range p.Images.Pull {
		s.line("if has %s %s; then echo %s; else ctr -n %s images pull --hosts-dir %s %s >/dev/null; pin %s; echo %s; fi",
			q(r), q(pinnedLabel), q("ok: "+r+" pulled"), containerdK8sNS, q(linuxCertsDir), q(r), q(r), q("changed: "+r+" pulled"))
	}
	s.line("expected=%s", q(strings.Join(p.Images.refs(), " ")))
	if p.Images.Kubeadm {
		v := q(p.KubernetesVersion)
		s.line("kubeadm_images=$(kubeadm config images list --kubernetes-version %s)", v)
		s.line(`missing=''; for r in $kubeadm_images; do has "$r" || missing="$missing $r"; done`)
		s.line(`if [ -n "$missing" ]; then`)
		s.line("  kubeadm config images pull --kubernetes-version %s --cri-socket unix:///run/containerd/containerd.sock", v)
		s.line(`  echo "changed: kubeadm's images pulled:$missing"`)
		s.line(`else echo "ok: kubeadm's images pulled"; fi`)
		s.line(`for r in $kubeadm_images; do has "$r" %s || { pin "$r"; echo "changed: $r pinned"; }; done`, q(pinnedLabel))
		s.line(`expected="$expected $kubeadm_images"`)
	}
	s.line(`failed=''`)
	s.line(`for r in $expected; do`)
	s.line(`  d=$(ctr -n %s images ls | awk -v r="$r" '$1 == r { print $3 }')`, containerdK8sNS)
	s.line(`  if [ -n "$d" ]; then echo "%s$r $d"; else echo "image $r is not in containerd's %s namespace after the import and pulls" >&2; failed=1; fi`, imageListedPrefix, containerdK8sNS)
	s.line(`done`)
	s.line("[ -z \"$failed\" ] || { echo %s >&2; exit 1; }", q("an archive must hold the references it names; see: ctr -n "+containerdK8sNS+" images ls"))
	return s.bytes()
}

// windowsImagesStep is the images step, when there is something to preload.
func windowsImagesStep(p WindowsPlan) (Step, bool) {
	if p.Images.empty() {
		return Step{}, false
	}
	return Step{stepImages, windowsImages(p)}, true
}

// psImageHelpers find an image in `ctr images ls` (its line, or $null) and
// test it for labels.
const psImageHelpers = `function Get-KubenodeImage {
    param([string]$Ref)
    $ErrorActionPreference = 'Continue'
    $out = & $ctr -n k8s.io images ls 2>&1
    if ($LASTEXITCODE -ne 0) {
        throw ('ctr images ls failed with exit code {0}: {1}' -f $LASTEXITCODE, ($out -join ' '))
    }
    foreach ($line in $out) {
        $fields = ([string]$line).Trim() -split '\s+'
        if ($fields[0] -ceq $Ref) {
            return [string]$line
        }
    }
    return $null
}
function Test-KubenodeImage {
    param([string]$Ref, [string[]]$Labels)
    $line = Get-KubenodeImage -Ref $Ref
    if (-not $line) {
        return $false
    }
    foreach ($label in $Labels) {
        if (-not $line.Contains($label)) {
            return $false
        }
    }
    return $true
}`

// windowsImages is linuxImages for Windows: ctr.exe imports the archives
// and pulls pull_images (through the registry mirrors' hosts directory),
// every image is labelled pinned, and each is listed with its digest.
func windowsImages(p WindowsPlan) []byte {
	s := newWinScript("container images preloaded into containerd's "+containerdK8sNS+" namespace", psNative, psImageHelpers)
	for _, kv := range p.Proxy.windowsEnv() {
		k, v, _ := strings.Cut(kv, "=")
		s.Line("$env:%s = %s", k, powershell.Quote(v))
	}
	s.Line("$ctr = %s", powershell.Quote(windowsContainerdDir+`\ctr.exe`))
	ns := []any{"-n", containerdK8sNS}
	for _, a := range p.Images.Archives {
		label := archiveLabelKey + "=" + a.SHA256
		var checks []string
		for _, r := range a.Refs {
			checks = append(checks, "(Test-KubenodeImage -Ref "+powershell.Quote(r)+" -Labels "+psList([]string{label, pinnedLabel})+")")
		}
		refs := strings.Join(a.Refs, ", ")
		s.Line("if (%s) {", strings.Join(checks, " -and "))
		say(s, "    ", "ok: "+a.FileName+" imported ("+refs+")")
		s.Line("} else {")
		native(s, "    ", "ctr images import "+a.FileName, psExpr("$ctr"), append(ns, "images", "import", p.Staging+`\`+a.FileName)...)
		for _, r := range a.Refs {
			native(s, "    ", "ctr images label "+r, psExpr("$ctr"), append(ns, "images", "label", r, label, pinnedLabel)...)
		}
		say(s, "    ", "changed: "+a.FileName+" imported ("+refs+")")
		s.Line("}")
	}
	for _, r := range p.Images.Pull {
		s.Line("if (Test-KubenodeImage -Ref %s -Labels %s) {", powershell.Quote(r), psList([]string{pinnedLabel}))
		say(s, "    ", "ok: "+r+" pulled")
		s.Line("} else {")
		native(s, "    ", "ctr images pull "+r, psExpr("$ctr"), append(ns, "images", "pull", "--hosts-dir", windowsCertsDir, r)...)
		native(s, "    ", "ctr images label "+r, psExpr("$ctr"), append(ns, "images", "label", r, pinnedLabel)...)
		say(s, "    ", "changed: "+r+" pulled")
		s.Line("}")
	}
	s.Line("$failed = @()")
	s.Line("foreach ($ref in %s) {", psList(p.Images.refs()))
	s.Line("    $line = Get-KubenodeImage -Ref $ref")
	s.Line("    if ($line) {")
	s.Line("        Write-Host (%s + $ref + ' ' + (($line.Trim() -split '\\s+')[2]))", powershell.Quote(imageListedPrefix))
	s.Line("    } else {")
	s.Line("        $failed += $ref")
	s.Line("    }")
	s.Line("}")
	s.Line("if ($failed.Count -gt 0) {")
	s.Line("    throw (%s + ($failed -join ', ') + %s)", powershell.Quote("not in containerd's "+containerdK8sNS+" namespace after the import and pulls: "),
		powershell.Quote("; an archive must hold the references it names (see ctr -n "+containerdK8sNS+" images ls)"))
	s.Line("}")
	return s.Bytes()
}

// linuxImages adds the images and registry hosts to the Linux plan, warns
// when the pause image is not preloaded, and appends the archives to the
// uploads (after resolve: they are local files, checked in Prepare).
func (c *Config) linuxImages(ui packersdk.Ui, plan *LinuxPlan, arts []Artifact) ([]Artifact, error) {
	im, imageArts, err := c.imagePlan(c.PullKubeadmImages)
	if err != nil {
		return nil, err
	}
	hosts, err := c.registryHosts()
	if err != nil {
		return nil, err
	}
	plan.Images, plan.RegistryHosts = im, hosts
	k8s, err := LookupKubernetes(c.KubernetesVersion)
	if err != nil {
		return nil, err
	}
	warnPauseImage(ui, im, plan.PauseImage, k8s.PauseImage)
	return append(arts, imageArts...), nil
}

// windowsImages adds the registry hosts to the Windows plan and refuses
// pull_kubeadm_images for a guest found to run Windows.
func (c *Config) windowsImages(plan *WindowsPlan) error {
	if c.PullKubeadmImages {
		return errors.New(`pull_kubeadm_images: the guest runs Windows, and kubeadm's images are the Linux control plane's, which a Windows node never runs; remove pull_kubeadm_images from this build`)
	}
	hosts, err := c.registryHosts()
	if err != nil {
		return err
	}
	plan.RegistryHosts = hosts
	return nil
}

// windowsImageUploads adds the images to the Windows plan, warns when its
// pause image is not preloaded, and returns the archives to upload.
func (c *Config) windowsImageUploads(ui packersdk.Ui, plan *WindowsPlan) ([]Artifact, error) {
	im, arts, err := c.imagePlan(false)
	if err != nil {
		return nil, err
	}
	plan.Images = im
	warnPauseImage(ui, im, plan.PauseImage, "")
	return arts, nil
}
