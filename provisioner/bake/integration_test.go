// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build integration

package bake_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/internal/attest/attesttest"
	"github.com/kubenode/packer-plugin-kubenode/internal/baked"
	"github.com/kubenode/packer-plugin-kubenode/internal/harness"
)

// TestLinuxBakeInATCGGuest bakes a Debian guest (the harness's base disk,
// booted by kubenode-libvirt under TCG) into a Cluster API node image from
// local artifacts and release files: the cached kubelet/kubeadm/kubectl
// of scripts/k8s-binaries.sh's release, containerd's release tarball, runc
// and the CNI plugins from a mirror on this host serving them in their
// upstream layout, the lab's images, and one pulled through a registry
// mirror. It
// bakes twice (the second bake must change nothing), reboots, runs
// testdata/check-linux.sh inside the guest, whose every failed check fails
// the build, and exports a qcow2 and a containerDisk, which the Cluster API
// end-to-end test boots again (harness.BakeLinux). The build runs on Packer
// 1.9.4 (KUBENODE_PACKER_MPL), the last MPL-2.0 release, with the plugin
// installed as `packer init` would; TestEndToEnd builds with the pinned
// current packer, so both lines run a real build.
func TestLinuxBakeInATCGGuest(t *testing.T) {
	b := harness.BakeLinux(t, true)
	t.Logf("built with %s (%s)", b.PackerVersion, b.Packer)
	assert.Equal(t, [2]int{1, 9}, [2]int{b.PackerVersion.Major, b.PackerVersion.Minor}, "the bake's build runs Packer's last MPL-2.0 line: %s", b.PackerVersion)
	log, version, pause, k8s, images := b.Log, b.Version, b.PauseImage, b.KubernetesDir, b.Images

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
	assert.Equal(t, 6+len(images)-1, files, "kubelet, kubeadm, kubectl, containerd, runc, the CNI plugins and the image archives (the pulled image has none)")
	assert.Equal(t, 2*files, strings.Count(log, "ok: artifact "), "each artifact's sha256 checked in the guest, in both bakes:\n%s", log)
	t.Logf("artifact transfer figures: %s files, %s MiB: HTTP %ss (%s MiB/s), communicator (SSH) %ss (%s MiB/s)", moved[0][2], moved[0][3], moved[0][4], moved[0][5], moved[1][4], moved[1][5])
	steps := []string{"prerequisites", "node-basics", "kernel", "containerd", "cni", "kubernetes", "images", "cluster-api", "self-check", "generalize", "cleanup"}
	for _, step := range steps {
		assert.Contains(t, log, "kubenode-bake ["+step+"]")
	}
	// Every in-guest check ran and passed.
	script, err := os.ReadFile(b.CheckScript)
	require.NoError(t, err)
	want := strings.Count(string(script), "\ncheck \"") + 2 + len(images) // plus the loops over two units and the images
	assert.Equal(t, want, strings.Count(log, "CHECK ok: "), log)
	for _, im := range images {
		assert.Contains(t, log, "CHECK ok: image "+im.Ref+" in containerd's k8s.io namespace after the reboot")
	}
	assert.NotContains(t, log, "CHECK FAILED")

	// kubenode-export's manifest says what was baked.
	data, err := os.ReadFile(filepath.Join(b.Dir, "kubenode-manifest.json"))
	require.NoError(t, err)
	var m struct {
		OS struct {
			Family     string `json:"family"`
			ID         string `json:"id"`
			Version    string `json:"version"`
			Name       string `json:"name"`
			SeedFlavor string `json:"seed_flavor"`
		} `json:"os"`
		Baked   *baked.Facts `json:"baked"`
		Outputs []struct {
			File   string `json:"file"`
			Format string `json:"format"`
		} `json:"outputs"`
		SBOM       *struct{ File, SHA256 string } `json:"sbom"`
		Provenance *struct{ File, SHA256 string } `json:"provenance"`
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
	assert.Equal(t, b.Containerd, strings.TrimPrefix(m.Baked.Containerd, "v"), "containerd's release tarball: %s", data)
	assert.NotEmpty(t, m.Baked.CNIPlugins)
	assert.Equal(t, "cluster-api", m.Baked.Bootstrap)
	assert.Empty(t, m.Baked.Joiner, "no joiner in a Cluster API image")
	assert.NotContains(t, m.Baked.Checksums, "joiner")
	for name, path := range map[string]string{"kubelet": filepath.Join(k8s, "kubelet"), "kubeadm": filepath.Join(k8s, "kubeadm"), "kubectl": filepath.Join(k8s, "kubectl")} {
		assert.Equal(t, fileSum(t, path), m.Baked.Checksums[name], name)
	}
	var formats []string
	for _, o := range m.Outputs {
		formats = append(formats, o.Format)
	}
	assert.ElementsMatch(t, []string{"qcow2", "containerdisk"}, formats)
	assertPreloaded(t, images, m.Baked.Images)

	// The SBOM beside the image parses with the SPDX library and names the
	// kubelet (the release's binary), containerd and runc (Debian's
	// packages) at the versions the guest reported; the provenance's
	// subject is the qcow2, by its sha256.
	require.NotNil(t, m.SBOM, "the manifest lists the SBOM: %s", data)
	require.NotNil(t, m.Provenance, "the manifest lists the provenance: %s", data)
	doc := attesttest.SBOM(t, filepath.Join(b.Dir, m.SBOM.File))
	assert.Equal(t, fileSum(t, filepath.Join(b.Dir, m.SBOM.File)), m.SBOM.SHA256)
	require.NotEmpty(t, m.Baked.Runc, "%s", data)
	attesttest.Baked(t, doc, "kubelet", m.Baked.Kubernetes)
	attesttest.Baked(t, doc, "containerd", m.Baked.Containerd)
	attesttest.Baked(t, doc, "runc", m.Baked.Runc)
	st := attesttest.Provenance(t, filepath.Join(b.Dir, m.Provenance.File))
	var qcow2 string
	for _, o := range m.Outputs {
		if o.Format == "qcow2" {
			qcow2 = o.File
		}
	}
	require.NotEmpty(t, qcow2)
	assert.Equal(t, fileSum(t, filepath.Join(b.Dir, qcow2)), st.SubjectDigest(qcow2), "the provenance's subject digest is the qcow2's sha256")
}

// assertPreloaded checks the manifest's baked.images: each archive's image
// listed by containerd with the digest expected of it, nothing else.
func assertPreloaded(t *testing.T, images []harness.Preloaded, got []baked.Image) {
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
