//go:build integration

package bake_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/kubenode/packer-plugin-kubenode/internal/baked"

	"github.com/kubenode/packer-plugin-kubenode/internal/harness"
	"github.com/kubenode/packer-plugin-kubenode/internal/labimages"
	"github.com/kubenode/packer-plugin-kubenode/internal/versions"
)

// TestLinuxBakeInATCGGuest bakes a Debian guest (the harness's base disk,
// booted by kubenode-libvirt under TCG) from local artifacts: the cached
// kubelet/kubeadm/kubectl of scripts/k8s-binaries.sh's release, Debian's containerd, runc and CNI
// plugins, and a joiner built here. It bakes twice (the second bake must
// change nothing), reboots, and runs testdata/check-linux.sh inside the
// guest, whose every failed check fails the build.
func TestLinuxBakeInATCGGuest(t *testing.T) {
	harness.Libvirtd(t)
	base := harness.BaseDisk(t)
	k8s := harness.Kubernetes(t)
	plugins := harness.PluginDir(t)
	work := t.TempDir()
	joiner := harness.JoinerAsReleased(t, filepath.Join(work, "kubenode-joiner"))

	// Image archives preloaded by the bake (the lab's pause and busybox
	// images, built here), with the digests containerd must list for them.
	// The release the harness built, and the pause image the version
	// table names for it.
	v, err := exec.Command(filepath.Join(k8s, "kubeadm"), "version", "-o", "short").Output()
	require.NoError(t, err)
	version := strings.TrimSpace(string(v))
	release, err := versions.LookupKubernetes(version)
	require.NoError(t, err)
	pause := release.PauseImage
	src, err := labimages.KubernetesSourceDir(context.Background(), version)
	require.NoError(t, err)
	built, err := labimages.Build(context.Background(), labimages.Options{PauseRef: pause, KubernetesSourceDir: src})
	require.NoError(t, err)
	var images []preloaded
	var refs []string
	for _, im := range built {
		images = append(images, preloaded{Ref: im.Ref, Archive: im.Archive, SHA256: im.SHA256, Digest: im.Digest})
		refs = append(refs, fmt.Sprintf("%q", im.Ref))
	}
	// A registry on this host (go-containerregistry's, in memory) holding
	// the busybox image: the bake pulls it by a name no DNS resolves,
	// through the registry mirror it configures for that name.
	mirror, pulled := serveMirror(t, built[1])
	images = append(images, pulled)
	refs = append(refs, fmt.Sprintf("%q", pulled.Ref))

	began := time.Now()
	cmd := exec.Command(harness.Packer(t), "build", "-color=false",
		"-var", "base_disk="+base, "-var", "vm_name=kubenode-bake-it",
		"-var", "output_directory="+filepath.Join(work, "output"),
		"-var", "kubernetes_dir="+k8s, "-var", "joiner="+joiner,
		"-var", "kubernetes_version="+version, "-var", "pause_image="+pause,
		"-var", "images="+labimages.TemplateVar(built), "-var", "expect_images=["+strings.Join(refs, ", ")+"]",
		"-var", "mirror_endpoint="+mirror, "-var", fmt.Sprintf("pull_images=[%q]", pulled.Ref),
		filepath.Join(harness.Root(), "provisioner", "bake", "testdata", "bake-linux.pkr.hcl"))
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "PACKER_PLUGIN_PATH="+plugins, "PACKER_CHECKPOINT_DISABLE=1", "TMPDIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	log := string(out)
	t.Logf("packer build (bake twice, reboot, checks): %s", time.Since(began).Round(time.Second))
	require.NoError(t, err, "packer build failed:\n%s", log)

	// The first bake changed things, the second nothing.
	done := regexp.MustCompile(`kubenode-bake: done, (\d+) changes`).FindAllStringSubmatch(log, -1)
	require.Len(t, done, 2, log)
	assert.NotEqual(t, "0", done[0][1], "the first bake installs")
	assert.Equal(t, "0", done[1][1], "the second bake changes nothing:\n%s", log)
	assert.Equal(t, 2, strings.Count(log, "ok: self-check passed"), "each bake ends with a passing self-check:\n%s", log)
	// The seed's runcmd left the dpkg lock held for 18 s: the first bake
	// waited for cloud-init, then for the lock, and installed after it.
	settled := regexp.MustCompile(`ok: waited (\d+)s for cloud-init \(status: done\)`).FindAllStringSubmatch(log, -1)
	require.Len(t, settled, 1, "the first bake waits for cloud-init, which ends without errors:\n%s", log)
	assert.Contains(t, log, "ok: cloud-init does not run in this boot (status: not run)", "the second bake: the first one's generalize cleaned cloud-init's state")
	locks := regexp.MustCompile(`ok: waited (\d+)s for the dpkg lock`).FindAllStringSubmatch(log, -1)
	require.Len(t, locks, 2, log)
	held, _ := strconv.Atoi(locks[0][1])
	assert.GreaterOrEqual(t, held, 10, "the first bake found the dpkg lock held and waited for it")
	t.Logf("settle: cloud-init %ss, then the dpkg lock %ss; second bake: the dpkg lock %ss", settled[0][1], locks[0][1], locks[1][1])
	assert.NotContains(t, log, "Could not get lock")
	// The first bake's guest downloaded the artifacts from the bake's
	// server (and checked each sha256), the second's came through SSH: the
	// same files, both ways, in one build.
	moved := regexp.MustCompile(`kubenode-bake: artifacts on the guest over (HTTP|the communicator): (\d+) files, ([0-9.]+) MiB in ([0-9.]+)s \(([0-9.]+) MiB/s\)`).FindAllStringSubmatch(log, -1)
	require.Len(t, moved, 2, log)
	assert.Equal(t, "HTTP", moved[0][1])
	assert.Equal(t, "the communicator", moved[1][1])
	assert.Equal(t, moved[0][2:4], moved[1][2:4], "the same artifacts")
	assert.Contains(t, log, "kubenode-bake [fetch-artifacts]: the guest downloads")
	files, _ := strconv.Atoi(moved[0][2])
	assert.Equal(t, 4+len(built), files, "kubelet, kubeadm, kubectl, the joiner and the image archives")
	assert.Equal(t, 2*files, strings.Count(log, "ok: artifact "), "each artifact's sha256 checked in the guest, in both bakes:\n%s", log)
	t.Logf("artifact transfer figures: %s files, %s MiB: HTTP %ss (%s MiB/s), communicator (SSH) %ss (%s MiB/s)", moved[0][2], moved[0][3], moved[0][4], moved[0][5], moved[1][4], moved[1][5])
	steps := []string{"prerequisites", "node-basics", "kernel", "containerd", "cni", "kubernetes", "joiner", "self-check", "generalize", "cleanup"}
	if len(images) > 0 {
		steps = append(steps, "images")
	}
	for _, step := range steps {
		assert.Contains(t, log, "kubenode-bake ["+step+"]")
	}
	// Every in-guest check ran and passed.
	script, err := os.ReadFile(filepath.Join(harness.Root(), "provisioner", "bake", "testdata", "check-linux.sh"))
	require.NoError(t, err)
	want := strings.Count(string(script), "\ncheck \"") + 3 + len(images) // plus the loops over three units and the images
	assert.Equal(t, want, strings.Count(log, "CHECK ok: "), log)
	for _, im := range images {
		assert.Contains(t, log, "CHECK ok: image "+im.Ref+" in containerd's k8s.io namespace after the reboot")
	}
	assert.NotContains(t, log, "CHECK FAILED")

	// kubenode-export's manifest says what was baked.
	data, err := os.ReadFile(filepath.Join(work, "output", "kubenode-manifest.json"))
	require.NoError(t, err)
	var m struct {
		OS struct {
			Family     string `json:"family"`
			ID         string `json:"id"`
			Version    string `json:"version"`
			Name       string `json:"name"`
			SeedFlavor string `json:"seed_flavor"`
		} `json:"os"`
		Baked *baked.Facts `json:"baked"`
	}
	require.NoError(t, json.Unmarshal(data, &m))
	// The OS is what the guest reported (/etc/os-release), not the seed.
	assert.Equal(t, "linux", m.OS.Family)
	assert.Equal(t, "debian", m.OS.ID, "%s", data)
	assert.Equal(t, "12", m.OS.Version, "%s", data)
	assert.True(t, strings.HasPrefix(m.OS.Name, "Debian GNU/Linux 12"), "%s", data)
	assert.Equal(t, "cloud-init", m.OS.SeedFlavor)
	require.NotNil(t, m.Baked, "baked is set: %s", data)
	assert.Equal(t, version, m.Baked.Kubernetes)
	assert.Equal(t, pause, m.Baked.PauseImage)
	assert.True(t, strings.HasPrefix(m.Baked.Containerd, "1.6."), "Debian 12's containerd: %q", m.Baked.Containerd)
	assert.NotEmpty(t, m.Baked.CNIPlugins)
	assert.NotEmpty(t, m.Baked.Joiner)
	for name, path := range map[string]string{"kubelet": filepath.Join(k8s, "kubelet"), "kubeadm": filepath.Join(k8s, "kubeadm"), "kubectl": filepath.Join(k8s, "kubectl"), "joiner": joiner} {
		assert.Equal(t, fileSum(t, path), m.Baked.Checksums[name], name)
	}
	assertPreloaded(t, images, m.Baked.Images)
}

// serveMirror serves a registry on 127.0.0.1, which the guest reaches as
// 10.0.2.2, holding img under registry.kubenode.test's path; it returns
// the mirror's endpoint for the guest and the image as the bake must list
// it after pulling it.
func serveMirror(t *testing.T, img labimages.Image) (string, preloaded) {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	image, _, err := img.Load(t.TempDir())
	require.NoError(t, err)
	_, tag, _ := strings.Cut(strings.TrimPrefix(img.Ref, "localhost/"), ":")
	path := "kubenode-lab/busybox:" + tag
	dest, err := name.NewTag(host+"/"+path, name.Insecure)
	require.NoError(t, err)
	require.NoError(t, remote.Write(dest, image))
	_, port, _ := strings.Cut(host, ":")
	return "http://10.0.2.2:" + port, preloaded{Ref: "registry.kubenode.test/" + path, Digest: img.Digest}
}

// preloaded is an image archive the bake imports: the reference it holds,
// the archive and its sha256, and the digest containerd lists for it.
type preloaded struct{ Ref, Archive, SHA256, Digest string }

// assertPreloaded checks the manifest's baked.images: each archive's image
// listed by containerd with the digest expected of it, nothing else.
func assertPreloaded(t *testing.T, images []preloaded, got []baked.Image) {
	t.Helper()
	require.NotNil(t, got, "baked.images is a list, empty when nothing was preloaded")
	want := []baked.Image{}
	for _, im := range images {
		want = append(want, baked.Image{Name: im.Ref, Digest: im.Digest})
	}
	assert.ElementsMatch(t, want, got)
}

func fileSum(t *testing.T, path string) string {
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:])
}
