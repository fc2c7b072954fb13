package bake

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/hashicorp/hcl/v2/hclparse"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/internal/baked"
	"github.com/kubenode/packer-plugin-kubenode/internal/golden"
)

// dockerArchive writes a `docker save` style archive of a small random
// image under the given tags.
func dockerArchive(t *testing.T, dir string, tags ...string) string {
	t.Helper()
	img, err := random.Image(64, 1)
	require.NoError(t, err)
	refs := map[name.Reference]v1.Image{}
	for _, tag := range tags {
		ref, err := name.NewTag(tag)
		require.NoError(t, err)
		refs[ref] = img
	}
	file := filepath.Join(dir, strings.NewReplacer("/", "_", ":", "_").Replace(strings.Join(tags, "+"))+".tar")
	require.NoError(t, tarball.MultiRefWriteToFile(file, refs))
	return file
}

// ociArchive writes an OCI layout tar whose index.json has one manifest per
// annotation set.
func ociArchive(t *testing.T, dir, base string, annotations ...map[string]string) string {
	t.Helper()
	idx := v1.IndexManifest{SchemaVersion: 2, MediaType: "application/vnd.oci.image.index.v1+json"}
	for i, a := range annotations {
		idx.Manifests = append(idx.Manifests, v1.Descriptor{
			MediaType: "application/vnd.oci.image.manifest.v1+json", Size: int64(i + 1),
			Digest: v1.Hash{Algorithm: "sha256", Hex: strings.Repeat(string(rune('a'+i)), 64)}, Annotations: a,
		})
	}
	index, err := json.Marshal(idx)
	require.NoError(t, err)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range []struct {
		name string
		data []byte
	}{{"oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)}, {"./index.json", index}} {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.data)), Typeflag: tar.TypeReg}))
		_, err := tw.Write(f.data)
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	file := filepath.Join(dir, base)
	require.NoError(t, os.WriteFile(file, buf.Bytes(), 0o644))
	return file
}

func fileSHA(t *testing.T, file string) string {
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

func TestNormalizeRef(t *testing.T) {
	for in, want := range map[string]string{
		"busybox":                            "docker.io/library/busybox:latest",
		"busybox:1.36":                       "docker.io/library/busybox:1.36",
		"docker.io/busybox:1.36":             "docker.io/library/busybox:1.36",
		"index.docker.io/library/busybox":    "docker.io/library/busybox:latest",
		"example/app:v1":                     "docker.io/example/app:v1",
		"registry.k8s.io/pause:3.10":         "registry.k8s.io/pause:3.10",
		"localhost:5000/pause":               "localhost:5000/pause:latest",
		"localhost/kubenode-lab/busybox:1":   "localhost/kubenode-lab/busybox:1",
		"registry.k8s.io/coredns/coredns:v1": "registry.k8s.io/coredns/coredns:v1",
		"registry.k8s.io/pause@sha256:" + strings.Repeat("ab", 32):      "registry.k8s.io/pause@sha256:" + strings.Repeat("ab", 32),
		"registry.k8s.io/pause:3.10@sha256:" + strings.Repeat("ab", 32): "registry.k8s.io/pause@sha256:" + strings.Repeat("ab", 32),
	} {
		got, err := NormalizeRef(in)
		if assert.NoError(t, err, in) {
			assert.Equal(t, want, got, in)
		}
	}
	for _, bad := range []string{"", " busybox", "Busy Box", "registry.k8s.io/pause:", "a\nb", "registry.k8s.io/pause@sha256:12"} {
		_, err := NormalizeRef(bad)
		assert.Error(t, err, "%q", bad)
	}
}

// ArchiveRefs names images as containerd's importer does.
func TestArchiveRefs(t *testing.T) {
	dir := t.TempDir()
	gz := filepath.Join(dir, "image.tar.gz")
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	data, err := os.ReadFile(dockerArchive(t, dir, "busybox:1.36"))
	require.NoError(t, err)
	_, _ = zw.Write(data)
	require.NoError(t, zw.Close())
	require.NoError(t, os.WriteFile(gz, buf.Bytes(), 0o644))
	notTar := filepath.Join(dir, "not.tar")
	require.NoError(t, os.WriteFile(notTar, []byte(strings.Repeat("x", 1024)), 0o644))
	var empty bytes.Buffer
	tw := tar.NewWriter(&empty)
	require.NoError(t, tw.WriteHeader(&tar.Header{Name: "README", Size: 1, Mode: 0o644, Typeflag: tar.TypeReg}))
	_, _ = tw.Write([]byte("x"))
	require.NoError(t, tw.Close())
	other := filepath.Join(dir, "other.tar")
	require.NoError(t, os.WriteFile(other, empty.Bytes(), 0o644))

	for _, c := range []struct {
		name    string
		file    string
		want    []string
		wantErr string
	}{
		{"docker save, two tags", dockerArchive(t, dir, "busybox:1.36", "registry.k8s.io/pause:3.10"),
			[]string{"docker.io/library/busybox:1.36", "registry.k8s.io/pause:3.10"}, ""},
		{"OCI, containerd's annotation wins", ociArchive(t, dir, "a.tar",
			map[string]string{"io.containerd.image.name": "registry.k8s.io/pause:3.10", "org.opencontainers.image.ref.name": "3.10"}),
			[]string{"registry.k8s.io/pause:3.10"}, ""},
		{"OCI, full ref.name", ociArchive(t, dir, "b.tar",
			map[string]string{"org.opencontainers.image.ref.name": "example.com/app:v1"}, map[string]string{"org.opencontainers.image.ref.name": "busybox:1.36"}),
			[]string{"example.com/app:v1", "docker.io/library/busybox:1.36"}, ""},
		{"OCI, a tag alone names nothing", ociArchive(t, dir, "c.tar", map[string]string{"org.opencontainers.image.ref.name": "latest"}), []string{}, ""},
		{"gzip", gz, nil, "gzip-compressed"},
		{"not a tar", notTar, nil, "not a tar archive"},
		{"a tar of something else", other, nil, "neither oci-layout"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := ArchiveRefs(c.file)
			if c.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), c.wantErr)
				return
			}
			require.NoError(t, err)
			// A docker archive's tags come in the order its writer chose.
			assert.ElementsMatch(t, c.want, got)
			assert.NotNil(t, got)
		})
	}
}

// Prepare lists every problem of images and pull_images at once, each
// naming its key.
func TestPrepareImagesNamesEveryProblem(t *testing.T) {
	dir := t.TempDir()
	good := dockerArchive(t, dir, "registry.k8s.io/pause:3.10")
	noRefs := ociArchive(t, dir, "norefs.tar", map[string]string{"org.opencontainers.image.ref.name": "latest"})
	var c Config
	err := c.Prepare(map[string]any{
		"download_cache_dir": t.TempDir(),
		"images": []map[string]any{
			{"path": good, "sha256": "SHA256:" + strings.ToUpper(fileSHA(t, good))},
			{"path": filepath.Join(dir, "missing.tar"), "sha256": fileSHA(t, good)},
			{"path": good, "sha256": "abc"},
			{"path": good, "sha256": strings.Repeat("0", 64)},
			{"path": noRefs, "sha256": fileSHA(t, noRefs)},
		},
		"pull_images":         []string{"registry.k8s.io/kube-proxy:v1.33.13", "not a ref"},
		"pull_kubeadm_images": true,
		"guest_os_type":       "windows",
	})
	require.Error(t, err)
	msg := err.Error()
	assert.NotContains(t, msg, "images[0]", "the good archive, its checksum given as sha256:UPPER")
	assert.Contains(t, msg, "images[1]: path: stat "+filepath.Join(dir, "missing.tar"))
	assert.Contains(t, msg, `images[2].sha256: "abc" is not 64 hex digits`)
	assert.Contains(t, msg, "images[3]: "+good+" has sha256 "+fileSHA(t, good)+", sha256 says "+strings.Repeat("0", 64))
	assert.Contains(t, msg, "images[4].path: "+noRefs+" names no image")
	assert.Contains(t, msg, `pull_images[1]: "not a ref" is not an image reference`)
	assert.NotContains(t, msg, "pull_images[0]")
	assert.Contains(t, msg, "pull_kubeadm_images: kubeadm's images are the Linux control plane's")
	assert.Equal(t, fileSHA(t, good), c.Images[0].SHA256, "normalized")
}

// A build whose archive went missing or changed after `packer validate`
// fails before anything reaches the guest.
func TestProvisionChecksImagesBeforeUpload(t *testing.T) {
	for name, spoil := range map[string]func(string) error{
		"missing":    os.Remove,
		"mismatched": func(f string) error { return os.WriteFile(f, []byte("other bytes"), 0o644) },
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			a := dockerArchive(t, dir, "registry.k8s.io/pause:3.10")
			b := dockerArchive(t, dir, "busybox:1.36")
			var p Provisioner
			require.NoError(t, p.Prepare(map[string]any{
				"download_cache_dir": t.TempDir(), "guest_os_type": "linux",
				"images": []map[string]any{{"path": a, "sha256": fileSHA(t, a)}, {"path": b, "sha256": fileSHA(t, b)}},
			}))
			require.NoError(t, spoil(b))
			comm := &packersdk.MockCommunicator{}
			err := p.Provision(context.Background(), newTestUI(), comm, nil)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "nothing was uploaded")
			assert.Contains(t, err.Error(), "images[1]: ")
			assert.NotContains(t, err.Error(), "images[0]")
			assert.False(t, comm.UploadCalled, "nothing uploaded")
			assert.False(t, comm.StartCalled, "nothing run on the guest")
		})
	}
}

func TestWarnPauseImage(t *testing.T) {
	archive := Images{Archives: []ImageFile{{Refs: []string{"registry.k8s.io/pause:3.10"}}}}
	for _, c := range []struct {
		name   string
		im     Images
		pause  string
		warned bool
	}{
		{"nothing preloaded", Images{}, "registry.k8s.io/pause:3.10", true},
		{"in an archive", archive, "registry.k8s.io/pause:3.10", false},
		{"another pause in the archive", archive, "registry.k8s.io/pause:3.9", true},
		{"pulled, written unnormalized", Images{Pull: []string{"docker.io/library/pause:1"}}, "pause:1", false},
		{"kubeadm's", Images{Kubeadm: true}, "registry.k8s.io/pause:3.10", false},
		{"not kubeadm's", Images{Kubeadm: true}, "example.com/pause:3.10", true},
	} {
		ui := &packersdk.MockUi{}
		warnPauseImage(ui, c.im, c.pause, "registry.k8s.io/pause:3.10")
		assert.Equal(t, c.warned, ui.ErrorCalled, c.name)
		if c.warned {
			assert.Contains(t, ui.ErrorMessage, "warning: the pause image "+c.pause+" is not preloaded", c.name)
			assert.Contains(t, ui.ErrorMessage, "air-gapped", c.name)
		}
	}
}

func testImages() Images {
	return Images{
		Archives: []ImageFile{
			{FileName: "image-1-pause.tar", SHA256: strings.Repeat("1", 64), Refs: []string{"registry.k8s.io/pause:3.10"}},
			{FileName: "image-2-tools.tar", SHA256: strings.Repeat("2", 64), Refs: []string{"docker.io/library/busybox:1.36", "example.com/it's:v1"}},
		},
		Pull: []string{"registry.k8s.io/kube-proxy:v1.33.13"},
	}
}

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
	p.Images = testImages()
	p.Images.Kubeadm = true
	for _, a := range p.Images.Archives {
		require.NoError(t, os.WriteFile(filepath.Join(dir, a.FileName+".refs"), []byte(strings.Join(a.Refs, "\n")), 0o644))
	}
	step, ok := linuxImagesStep(p)
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
	listed := parseImageListing(out)
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
		assert.Contains(t, line, pinnedLabel, "every image pinned: %s", line)
	}
	assert.Contains(t, string(db), "registry.k8s.io/pause:3.10 sha256:")
	assert.Contains(t, string(db), archiveLabelKey+"="+strings.Repeat("1", 64))

	again, err := run()
	require.NoError(t, err, again)
	assert.NotContains(t, again, "changed: ", "a second bake changes nothing")
	assert.Equal(t, listed, parseImageListing(again))

	// A new archive for the same reference is imported again.
	p.Images.Archives[0].SHA256 = strings.Repeat("3", 64)
	step, _ = linuxImagesStep(p)
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

func TestParseImageListing(t *testing.T) {
	d := "sha256:" + strings.Repeat("a", 64)
	out := "ok: x\r\nimage: registry.k8s.io/pause:3.10 " + d + "\r\nimage: broken\nimage: registry.k8s.io/pause:3.10 " + d + "\n"
	assert.Equal(t, []baked.Image{{Name: "registry.k8s.io/pause:3.10", Digest: d}}, parseImageListing(out))
	assert.Equal(t, []baked.Image{}, parseImageListing(""), "none: an empty list, not null")
}

// No images, no step; the step comes after the kubelet's and crictl's
// (kubeadm is installed, containerd running), before the self-check, on
// both OSes.
func TestImagesStepPlace(t *testing.T) {
	names := func(steps []Step) []string {
		var out []string
		for _, s := range steps {
			out = append(out, s.Name)
		}
		return out
	}
	p := testPlan()
	assert.NotContains(t, names(LinuxSteps(p)), stepImages)
	p.Images = testImages()
	assert.Equal(t, []string{"settle", "prerequisites", "node-basics", "kernel", "containerd", "cni", "kubernetes", "crictl", "images", "joiner", "self-check", "generalize", "cleanup"}, names(LinuxSteps(p)))

	w := basePlan(t)
	steps, err := WindowsSteps(w)
	require.NoError(t, err)
	assert.NotContains(t, names(steps), stepImages)
	w.Images = testImages()
	w.Images.Kubeadm = false
	steps, err = WindowsSteps(w)
	require.NoError(t, err)
	got := names(steps)
	i := strings.Index(strings.Join(got, " "), "kubelet crictl images ")
	assert.GreaterOrEqual(t, i, 0, "images right after kubelet and crictl: %v", got)
}

// renderedImages are the images steps' goldens.
func renderedImages(t *testing.T) map[string][]byte {
	p := testPlan()
	p.Images = testImages()
	p.Images.Kubeadm = true
	w := basePlan(t).withDefaults()
	w.Images = testImages()
	w.Proxy = Proxy{HTTPS: "http://proxy.example:3128"}
	return map[string][]byte{"images/linux-images.sh": linuxImages(p), "images/windows-images.ps1": windowsImages(w)}
}

func TestImagesGolden(t *testing.T) {
	for name, got := range renderedImages(t) {
		t.Run(name, func(t *testing.T) { golden.Assert(t, name, got) })
	}
}

// The Linux script is valid shell.
func TestLinuxImagesScriptParses(t *testing.T) {
	file := filepath.Join(t.TempDir(), "images.sh")
	require.NoError(t, os.WriteFile(file, renderedImages(t)["images/linux-images.sh"], 0o644))
	out, err := exec.Command("sh", "-n", file).CombinedOutput()
	assert.NoError(t, err, string(out))
}

// The blocks decode from HCL as users write them (the generated spec),
// through Prepare.
func TestImagesAndMirrorsFromHCL(t *testing.T) {
	dir := t.TempDir()
	a := dockerArchive(t, dir, "registry.k8s.io/pause:3.10")
	src := fmt.Sprintf(`
download_cache_dir = %q
images {
  path   = %q
  sha256 = %q
}
pull_images         = ["registry.k8s.io/coredns/coredns:v1.12.0"]
pull_kubeadm_images = true
registry_mirrors {
  registry    = "docker.io"
  endpoints   = ["https://mirror.example.com"]
  skip_verify = true
}
registry_mirrors {
  registry  = "_default"
  endpoints = ["http://10.0.2.2:5000"]
}
`, t.TempDir(), a, fileSHA(t, a))
	f, diags := hclparse.NewParser().ParseHCL([]byte(src), "bake.pkr.hcl")
	require.False(t, diags.HasErrors(), diags.Error())
	var p Provisioner
	v, diags := hcldec.Decode(f.Body, p.ConfigSpec(), nil)
	require.False(t, diags.HasErrors(), diags.Error())
	require.NoError(t, p.Prepare(v))
	c := p.config
	assert.Equal(t, []ImageArchive{{Path: a, SHA256: fileSHA(t, a)}}, c.Images)
	assert.Equal(t, []string{"registry.k8s.io/coredns/coredns:v1.12.0"}, c.PullImages)
	assert.True(t, c.PullKubeadmImages)
	assert.Equal(t, []RegistryMirror{
		{Registry: "docker.io", Endpoints: []string{"https://mirror.example.com"}, SkipVerify: true},
		{Registry: "_default", Endpoints: []string{"http://10.0.2.2:5000"}},
	}, c.RegistryMirrors)
}
