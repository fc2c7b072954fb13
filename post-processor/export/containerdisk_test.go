// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package export

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/internal/baked"
)

// blankQcow2 is a small empty qcow2 made by qemu-img.
func blankQcow2(t *testing.T) string {
	t.Helper()
	requireTool(t, "qemu-img")
	p := filepath.Join(t.TempDir(), "blank.qcow2")
	run(t, "qemu-img", "create", "-q", "-f", "qcow2", p, "64M")
	return p
}

// tarEntry is a tar header as a test compares it.
type tarEntry struct {
	Name     string
	Type     byte
	Mode     int64
	UID, GID int
	Size     int64
	ModTime  int64
}

// readTar lists r's entries; the content of the entry named keep, if any,
// is written to keepTo.
func readTar(t *testing.T, r io.Reader, keep, keepTo string) []tarEntry {
	t.Helper()
	var entries []tarEntry
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return entries
		}
		require.NoError(t, err)
		entries = append(entries, tarEntry{h.Name, h.Typeflag, h.Mode, h.Uid, h.Gid, h.Size, h.ModTime.Unix()})
		if h.Name == keep {
			f, err := os.OpenFile(keepTo, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
			require.NoError(t, err)
			_, err = io.Copy(f, tr)
			require.NoError(t, err)
			require.NoError(t, f.Close())
		}
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	require.NoError(t, err)
	return st.Size()
}

// The layer is what KubeVirt reads: disk/ and disk/<name>.qcow2, owned by
// its qemu user 107:107, dated epoch, the disk's bytes, and nothing else.
func TestContainerDiskLayer(t *testing.T) {
	disk := blankQcow2(t)
	var gz bytes.Buffer
	var steps []int
	diffID, err := writeDiskLayer(context.Background(), &gz, disk, "node.qcow2", func(pct int) { steps = append(steps, pct) })
	require.NoError(t, err)
	assert.Equal(t, 100, steps[len(steps)-1], "progress reaches 100%%: %v", steps)

	zr, err := gzip.NewReader(bytes.NewReader(gz.Bytes()))
	require.NoError(t, err)
	raw, err := io.ReadAll(zr)
	require.NoError(t, err)
	sum := sha256.Sum256(raw)
	assert.Equal(t, "sha256:"+hex.EncodeToString(sum[:]), diffID.String(), "the diffID is the sha256 of the uncompressed tar")

	out := filepath.Join(t.TempDir(), "out.qcow2")
	entries := readTar(t, bytes.NewReader(raw), "disk/node.qcow2", out)
	assert.Equal(t, []tarEntry{
		{Name: "disk/", Type: tar.TypeDir, Mode: 0o555, UID: 107, GID: 107, ModTime: 0},
		{Name: "disk/node.qcow2", Type: tar.TypeReg, Mode: 0o440, UID: 107, GID: 107, Size: fileSize(t, disk), ModTime: 0},
	}, entries)
	want, err := os.ReadFile(disk)
	require.NoError(t, err)
	got, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(want, got), "the layer holds the disk's bytes")
}

// The same disk gives the same layer, image digest and archive.
func TestContainerDiskIsReproducible(t *testing.T) {
	disk := blankQcow2(t)
	ref := func(d v1.Hash) (name.Tag, error) { return name.NewTag("localhost/kubenode/node:" + d.Hex[:12]) }
	var digests []v1.Hash
	var sums []string
	for i := 0; i < 2; i++ {
		dir := t.TempDir()
		archive := filepath.Join(dir, "node.containerdisk.tar")
		img, named, _, err := writeContainerDisk(context.Background(), disk, "node.qcow2", ref, archive, dir, 0o600, nil, nil)
		require.NoError(t, err)
		d, err := img.Digest()
		require.NoError(t, err)
		assert.Equal(t, "localhost/kubenode/node:"+d.Hex[:12], named.String(), "named by its digest")
		digests = append(digests, d)
		sum, err := hashFile(archive)
		require.NoError(t, err)
		sums = append(sums, sum)
		// Seconds apart would show in a timestamp.
		time.Sleep(1100 * time.Millisecond)
	}
	assert.Equal(t, digests[0], digests[1], "image digest")
	assert.Equal(t, sums[0], sums[1], "archive sha256")
}

func hashFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:]), nil
}

// loadArchive unpacks an OCI layout archive and reads its one named image
// back with go-containerregistry, with its index annotations; every other
// manifest in the index is a referrer of it.
func loadArchive(t *testing.T, archive string) (v1.Image, v1.Descriptor) {
	t.Helper()
	img, desc, _ := loadArchiveReferrers(t, archive)
	return img, desc
}

// loadArchiveReferrers is loadArchive, with the index's referrers of the
// image by artifact type: their one blob's bytes.
func loadArchiveReferrers(t *testing.T, archive string) (v1.Image, v1.Descriptor, map[string][]byte) {
	t.Helper()
	dir := t.TempDir()
	run(t, "tar", "-xf", archive, "-C", dir)
	p, err := layout.FromPath(dir)
	require.NoError(t, err)
	index, err := p.ImageIndex()
	require.NoError(t, err)
	m, err := index.IndexManifest()
	require.NoError(t, err)
	require.NotEmpty(t, m.Manifests)
	desc := m.Manifests[0]
	require.NotEmpty(t, desc.Annotations["io.containerd.image.name"], "the image comes first, named")
	img, err := index.Image(desc.Digest)
	require.NoError(t, err)
	referrers := map[string][]byte{}
	for _, d := range m.Manifests[1:] {
		assert.Empty(t, d.Annotations, "a referrer is not named: importers do not take it for an image")
		r, err := index.Image(d.Digest)
		require.NoError(t, err)
		rm, err := r.Manifest()
		require.NoError(t, err)
		require.NotNil(t, rm.Subject, "every other manifest refers to the image")
		assert.Equal(t, desc.Digest, rm.Subject.Digest)
		assert.Equal(t, desc.Size, rm.Subject.Size)
		assert.Equal(t, desc.MediaType, rm.Subject.MediaType)
		layers, err := r.Layers()
		require.NoError(t, err)
		require.Len(t, layers, 1)
		rc, err := layers[0].Compressed()
		require.NoError(t, err)
		blob, err := io.ReadAll(rc)
		rc.Close()
		require.NoError(t, err)
		referrers[d.ArtifactType] = blob
	}
	return img, desc, referrers
}

// layerDisk checks the image has one layer of disk/<file> and writes that
// file out.
func layerDisk(t *testing.T, img v1.Image, file string) string {
	t.Helper()
	layers, err := img.Layers()
	require.NoError(t, err)
	require.Len(t, layers, 1)
	rc, err := layers[0].Uncompressed()
	require.NoError(t, err)
	defer rc.Close()
	out := filepath.Join(t.TempDir(), file)
	entries := readTar(t, rc, "disk/"+file, out)
	require.Len(t, entries, 2, "%v", entries)
	assert.Equal(t, "disk/", entries[0].Name)
	assert.Equal(t, "disk/"+file, entries[1].Name)
	return out
}

// With qcow2 in formats the containerdisk holds that very file (no second
// conversion); the archive is an OCI layout go-containerregistry reads, of
// one linux/amd64 image named for ctr, listed in the manifest with its
// digest, with a checksum file.
func TestExportContainerDiskReusesTheQcow2(t *testing.T) {
	dir := t.TempDir()
	src := sourceImage(t, dir)
	out := filepath.Join(dir, "out")
	t.Setenv("PACKER_RUN_UUID", "run-"+t.Name())
	t.Setenv("TMPDIR", t.TempDir())
	require.NoError(t, baked.Write("kubenode-libvirt.node", baked.Record{Facts: baked.Facts{Kubernetes: "v1.37.2", Bootstrap: "cluster-api", Checksums: map[string]string{}}}))
	p := &PostProcessor{}
	require.NoError(t, p.Configure(map[string]interface{}{"formats": []string{"containerdisk", "qcow2"}, "output_directory": out, "packer_build_name": "kubenode-libvirt.node"}))
	ui, logs := uiForTest()
	a, _, _, err := p.PostProcess(context.Background(), ui, &fakeArtifact{files: []string{src}})
	require.NoError(t, err, logs.String())
	assert.NotContains(t, logs.String(), "containerdisk's qcow2", "the qcow2 output is reused, not converted again")
	assert.Contains(t, logs.String(), "node.containerdisk.tar: 100%")

	archive := filepath.Join(out, "node.containerdisk.tar")
	assert.Equal(t, "-rw-------", mode(t, archive), "the archive holds the image: file_mode")
	cmd := exec.Command("sha256sum", "-c", "node.containerdisk.tar.sha256")
	cmd.Dir = out
	res, err := cmd.CombinedOutput()
	require.NoError(t, err, string(res))

	img, desc := loadArchive(t, archive)
	// Named, by default, by the Kubernetes release baked and the image's
	// digest: a tag for this image only.
	tag := "v1.37.2-" + desc.Digest.Hex[:12]
	assert.Equal(t, map[string]string{"io.containerd.image.name": "localhost/kubenode/node:" + tag, "org.opencontainers.image.ref.name": tag}, desc.Annotations)
	require.NotNil(t, desc.Platform, "the index says the image's platform")
	assert.Equal(t, "linux/amd64", desc.Platform.String())
	cf, err := img.ConfigFile()
	require.NoError(t, err)
	assert.Equal(t, "linux", cf.OS)
	assert.Equal(t, "amd64", cf.Architecture)
	mt, err := img.MediaType()
	require.NoError(t, err)
	assert.Equal(t, "application/vnd.oci.image.manifest.v1+json", string(mt))
	disk := layerDisk(t, img, "node.qcow2")
	want, err := os.ReadFile(filepath.Join(out, "node.qcow2"))
	require.NoError(t, err)
	got, err := os.ReadFile(disk)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(want, got), "the containerdisk holds the qcow2 output")

	m := a.(*Artifact).manifest
	require.Len(t, m.Outputs, 2)
	assert.Equal(t, "qcow2", m.Outputs[0].Format, "disk formats first: upload_pool takes outputs[0]")
	cd := m.Outputs[1]
	sum, err := hashFile(archive)
	require.NoError(t, err)
	assert.Equal(t, Output{File: "node.containerdisk.tar", Format: "containerdisk", Compression: "gzip", Size: fileSize(t, archive), SHA256: sum,
		Image: "localhost/kubenode/node:" + tag, Digest: desc.Digest.String()}, cd)
	validateManifest(t, filepath.Join(out, ManifestFile))
	assert.ElementsMatch(t, []string{"node.qcow2", "node.qcow2.sha256", "node.containerdisk.tar", "node.containerdisk.tar.sha256",
		"node.spdx.json", "node.provenance.json", ManifestFile}, dirNames(t, out), "no scratch left")
	assert.Len(t, a.Files(), 7)
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// Alone, containerdisk converts the source to qcow2 itself: same content,
// and the scratch qcow2 is gone afterwards.
func TestExportContainerDiskAlone(t *testing.T) {
	dir := t.TempDir()
	src := sourceImage(t, dir)
	out := filepath.Join(dir, "out")
	p := &PostProcessor{}
	require.NoError(t, p.Configure(map[string]interface{}{"formats": []string{"containerdisk"}, "output_directory": out, "output_name": "Debian 12"}))
	ui, logs := uiForTest()
	a, _, _, err := p.PostProcess(context.Background(), ui, &fakeArtifact{files: []string{src}})
	require.NoError(t, err, logs.String())
	assert.Contains(t, logs.String(), "containerdisk qcow2: 100%")
	img, desc := loadArchive(t, filepath.Join(out, "Debian 12.containerdisk.tar"))
	assert.Equal(t, "localhost/kubenode/debian-12:"+desc.Digest.Hex[:12], desc.Annotations["io.containerd.image.name"],
		"the output name made a valid repository; not baked, the tag is the digest's")
	disk := layerDisk(t, img, "Debian 12.qcow2")
	run(t, "qemu-img", "check", "-q", disk)
	run(t, "qemu-img", "compare", "-q", src, disk)
	assert.ElementsMatch(t, []string{"Debian 12.containerdisk.tar", "Debian 12.containerdisk.tar.sha256", "Debian 12.spdx.json", "Debian 12.provenance.json", ManifestFile}, dirNames(t, out))
	assert.Equal(t, "gzip", a.(*Artifact).manifest.Outputs[0].Compression, "the layer's compression")
	var info struct {
		FormatSpecific struct {
			Data struct {
				CompressionType string `json:"compression-type"`
			}
		} `json:"format-specific"`
	}
	require.NoError(t, json.Unmarshal([]byte(run(t, "qemu-img", "info", "--output=json", disk)), &info))
	assert.Equal(t, "zstd", info.FormatSpecific.Data.CompressionType, "the disk inside is written as the qcow2 output would be (compression)")
}

// containerdisk_repository pushes the image; what the registry serves
// back under the tag is the digest the manifest records.
func TestExportContainerDiskPush(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	t.Setenv("DOCKER_CONFIG", t.TempDir()) // no credentials: an anonymous push

	disk := blankQcow2(t)
	out := filepath.Join(t.TempDir(), "out")
	p := &PostProcessor{}
	require.NoError(t, p.Configure(map[string]interface{}{
		"formats": []string{"containerdisk"}, "output_directory": out, "output_name": "debian-12",
		"containerdisk_repository": host + "/nodes/debian-12", "containerdisk_tag": "v1.33.13",
	}))
	ui, logs := uiForTest()
	a, _, _, err := p.PostProcess(context.Background(), ui, &fakeArtifact{files: []string{disk}})
	require.NoError(t, err, logs.String())
	assert.Contains(t, logs.String(), "pushing "+host+"/nodes/debian-12:v1.33.13: 100%")

	cd := a.(*Artifact).manifest.Outputs[0]
	assert.Equal(t, host+"/nodes/debian-12:v1.33.13", cd.Image)
	assert.Equal(t, host+"/nodes/debian-12@"+cd.Digest, cd.Reference)
	validateManifest(t, filepath.Join(out, ManifestFile))

	tag, err := name.NewTag(host+"/nodes/debian-12:v1.33.13", name.Insecure)
	require.NoError(t, err)
	pulled, err := remote.Get(tag)
	require.NoError(t, err)
	assert.Equal(t, cd.Digest, pulled.Digest.String(), "the registry serves the exported image under the tag")
	img, err := pulled.Image()
	require.NoError(t, err)
	local, _ := loadArchive(t, filepath.Join(out, "debian-12.containerdisk.tar"))
	wantLayers, err := local.Layers()
	require.NoError(t, err)
	gotLayers, err := img.Layers()
	require.NoError(t, err)
	require.Len(t, gotLayers, 1)
	wd, _ := wantLayers[0].Digest()
	gd, _ := gotLayers[0].Digest()
	assert.Equal(t, wd, gd, "the pushed layer is the archive's")
	pushedDisk := layerDisk(t, img, "debian-12.qcow2")
	run(t, "qemu-img", "compare", "-q", disk, pushedDisk)
}

// A push that fails says so and where the complete archive is.
func TestExportContainerDiskPushFailure(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	host := strings.TrimPrefix(srv.URL, "http://")
	srv.Close() // nothing answers there any more
	disk := blankQcow2(t)
	out := filepath.Join(t.TempDir(), "out")
	p := &PostProcessor{}
	require.NoError(t, p.Configure(map[string]interface{}{"formats": []string{"containerdisk"}, "output_directory": out, "containerdisk_repository": host + "/nodes/x"}))
	ui, _ := uiForTest()
	_, _, _, err := p.PostProcess(context.Background(), ui, &fakeArtifact{files: []string{disk}})
	require.Error(t, err)
	assert.Regexp(t, "pushing "+regexp.QuoteMeta(host)+"/nodes/x:[0-9a-f]{12}", err.Error())
	assert.Contains(t, err.Error(), "the archive "+filepath.Join(out, "blank.containerdisk.tar")+" is complete")
	assert.Regexp(t, "`skopeo copy oci-archive:"+regexp.QuoteMeta(filepath.Join(out, "blank.containerdisk.tar"))+`:[^:`+"`"+`]+`+"` it", err.Error(),
		"skopeo names the image by its tag: the archive's index lists its referrers too")
}

// cancelUI cancels the build at the first progress message.
type cancelUI struct {
	*packersdk.BasicUi
	cancel func()
}

func (u cancelUI) Message(m string) {
	u.cancel()
	u.BasicUi.Message(m)
}

// A cancelled export leaves neither an archive nor scratch files, whether
// it is cancelled while converting or while writing the layer.
func TestInterruptedContainerDiskLeavesNothing(t *testing.T) {
	src := sourceImage(t, t.TempDir())

	out := filepath.Join(t.TempDir(), "out")
	p := &PostProcessor{}
	require.NoError(t, p.Configure(map[string]interface{}{"formats": []string{"containerdisk"}, "output_directory": out}))
	ui, _ := uiForTest()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, _, _, err := p.PostProcess(ctx, cancelUI{BasicUi: ui, cancel: cancel}, &fakeArtifact{files: []string{src}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "interrupted")
	assert.Empty(t, dirNames(t, out), "cancelled while converting")

	// Given a qcow2, the first progress is the layer's.
	out = t.TempDir()
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	_, _, err = exportContainerDisk(ctx, cancelUI{BasicUi: ui, cancel: cancel}, &p.config, src, "qcow2", src, out, "node", "v1.37.2", nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "writing node.containerdisk.tar interrupted")
	assert.Empty(t, dirNames(t, out), "cancelled while writing the layer")
}

func TestConfigureContainerDiskKeys(t *testing.T) {
	c := &Config{}
	require.NoError(t, c.Prepare(map[string]interface{}{"formats": []string{"containerdisk"}}))
	assert.Empty(t, c.ContainerDiskTag, "the default is the image's own tag")
	digest := v1.Hash{Algorithm: "sha256", Hex: "3f2a9c01be47" + strings.Repeat("0", 52)}
	ref, err := c.containerDiskRef("node", "v1.37.2", digest)
	require.NoError(t, err)
	assert.Equal(t, "localhost/kubenode/node:v1.37.2-3f2a9c01be47", ref.String(), "the Kubernetes release and the image's digest, never latest")
	ref, err = c.containerDiskRef("node", "", digest)
	require.NoError(t, err)
	assert.Equal(t, "localhost/kubenode/node:3f2a9c01be47", ref.String(), "not baked: the digest's alone")
	c.ContainerDiskTag = "v1"
	ref, err = c.containerDiskRef("node", "v1.37.2", digest)
	require.NoError(t, err)
	assert.Equal(t, "localhost/kubenode/node:v1", ref.String(), "containerdisk_tag names it")

	for _, tc := range []struct {
		raw  map[string]interface{}
		want []string
	}{
		{map[string]interface{}{"formats": []string{"containerdisk"}, "containerdisk_repository": "registry.example.com/nodes/debian-12:v1"},
			[]string{`containerdisk_repository: "registry.example.com/nodes/debian-12:v1" is not a repository`}},
		{map[string]interface{}{"formats": []string{"containerdisk"}, "containerdisk_repository": "Registry.example.com/Nodes"},
			[]string{`containerdisk_repository: "Registry.example.com/Nodes" is not a repository`}},
		{map[string]interface{}{"formats": []string{"containerdisk"}, "containerdisk_tag": "-v1"},
			[]string{`containerdisk_tag: "-v1" is not a tag`}},
		{map[string]interface{}{"formats": []string{"containerdisk"}, "containerdisk_tag": "a/b"},
			[]string{`containerdisk_tag: "a/b" is not a tag`}},
		{map[string]interface{}{"containerdisk_repository": "registry.example.com/x", "containerdisk_tag": "v1", "containerdisk_plain_http_hosts": []string{"registry.lab"}, "containerdisk_ca_file": "ca.pem"},
			[]string{`containerdisk_repository: is set, but formats does not list "containerdisk"`, `containerdisk_tag: is set, but formats`,
				`containerdisk_plain_http_hosts: is set, but formats`, `containerdisk_ca_file: is set, but formats`}},
		{map[string]interface{}{"formats": []string{"containerdisk"}, "containerdisk_plain_http_hosts": []string{"registry.lab"}},
			[]string{`containerdisk_repository: is required with containerdisk_plain_http_hosts`}},
		{map[string]interface{}{"formats": []string{"containerdisk"}, "containerdisk_repository": "registry.lab/x", "containerdisk_plain_http_hosts": []string{"http://registry.lab", "registry.lab/x", ""}},
			[]string{`containerdisk_plain_http_hosts[0]: "http://registry.lab" is not a registry host`, `containerdisk_plain_http_hosts[1]: "registry.lab/x" is not`, `containerdisk_plain_http_hosts[2]: "" is not`}},
		{map[string]interface{}{"formats": []string{"containerdisk"}, "containerdisk_repository": "registry.lab/x", "containerdisk_ca_file": "/nonexistent/ca.pem"},
			[]string{`containerdisk_ca_file: open /nonexistent/ca.pem`}},
		{map[string]interface{}{"formats": []string{"containerdisk"}, "upload_pool": "images"},
			[]string{`upload_pool: uploads a disk image, and formats lists none`}},
		{map[string]interface{}{"formats": []string{"ova"}},
			[]string{`formats[0]: "ova" is not a format this writes; use "qcow2", "raw", "vmdk", "vhdx" or "containerdisk"`}},
	} {
		err := (&Config{}).Prepare(tc.raw)
		require.Error(t, err, "%v", tc.raw)
		for _, w := range tc.want {
			assert.Contains(t, err.Error(), w)
		}
	}
	for _, ok := range []map[string]interface{}{
		{"formats": []string{"qcow2", "containerdisk"}, "upload_pool": "images"},
		{"formats": []string{"containerdisk"}, "containerdisk_repository": "localhost:5000/nodes/debian-12", "containerdisk_tag": "v1.33.13_1"},
		{"formats": []string{"containerdisk"}, "containerdisk_repository": "debian-12"},
	} {
		assert.NoError(t, (&Config{}).Prepare(ok), "%v", ok)
	}
}

func TestRepositoryComponent(t *testing.T) {
	for in, want := range map[string]string{"node": "node", "Debian 12": "debian-12", "k8s_v1.33": "k8s_v1.33", "--x--": "x", "ÄÖ": "image"} {
		assert.Equal(t, want, repositoryComponent(in), in)
	}
}
