// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package export

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
	"github.com/hashicorp/packer-plugin-sdk/packer/registry/image"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/builder/libvirt"
	"github.com/kubenode/packer-plugin-kubenode/internal/baked"
)

// fakeArtifact is a builder's artifact as kubenode-libvirt returns it.
type fakeArtifact struct {
	files []string
	facts string // JSON of libvirt.ImageFacts, as the builder publishes it
	// hcp is its HCP Packer metadata as msgpack decodes it over RPC.
	hcp map[interface{}]interface{}
}

func (a *fakeArtifact) BuilderId() string { return "kubenode.libvirt" }
func (a *fakeArtifact) Files() []string   { return a.files }
func (a *fakeArtifact) Id() string        { return "" }
func (a *fakeArtifact) String() string    { return "" }
func (a *fakeArtifact) State(name string) interface{} {
	if name == libvirt.FactsKey && a.facts != "" {
		return a.facts
	}
	if name == image.ArtifactStateURI && a.hcp != nil {
		return a.hcp
	}
	return nil
}
func (a *fakeArtifact) Destroy() error { return nil }

func requireTool(t *testing.T, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Fatalf("%s is not installed: run scripts/setup.sh packages", name)
	}
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	require.NoError(t, err, "%s %v: %s", name, args, out)
	return string(out)
}

// sourceImage makes a 256 MiB qcow2 holding 48 MiB of data in three
// places, the rest never written (zero clusters an export must not store).
func sourceImage(t *testing.T, dir string) string {
	requireTool(t, "qemu-img")
	requireTool(t, "qemu-io")
	src := filepath.Join(dir, "node.qcow2")
	run(t, "qemu-img", "create", "-q", "-f", "qcow2", src, "256M")
	run(t, "qemu-io", "-c", "write -P 0x5a 0 16M", "-c", "write -P 0x33 64M 16M", "-c", "write -P 0x0f 200M 16M", src)
	return src
}

func uiForTest() (*packersdk.BasicUi, *bytes.Buffer) {
	var out bytes.Buffer
	return &packersdk.BasicUi{Reader: new(bytes.Buffer), Writer: &out, ErrorWriter: &out, PB: &packersdk.NoopProgressTracker{}}, &out
}

func TestExportEveryFormat(t *testing.T) {
	dir := t.TempDir()
	src := sourceImage(t, dir)
	in := &fakeArtifact{files: []string{src, filepath.Join(dir, "serial.log")}, facts: `{"os_family":"linux","os_version":"","seed_flavor":"cloud-init","firmware":"bios"}`}
	out := filepath.Join(dir, "out")
	p := &PostProcessor{now: func() time.Time { return time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC) }}
	require.NoError(t, p.Configure(map[string]interface{}{"formats": []string{"qcow2", "raw", "vmdk", "vhdx"}, "output_directory": out}))
	ui, log := uiForTest()
	a, keep, force, err := p.PostProcess(context.Background(), ui, in)
	require.NoError(t, err, log.String())
	assert.True(t, keep && force, "the outputs are inside the input's directory: the input is kept")
	assert.Contains(t, log.String(), "node.qcow2: 100%", "qemu-img progress reaches the UI")

	for format, file := range map[string]string{"qcow2": "node.qcow2", "raw": "node.raw", "vmdk": "node.vmdk", "vhdx": "node.vhdx"} {
		path := filepath.Join(out, file)
		var info struct {
			Format         string `json:"format"`
			FormatSpecific struct {
				Data struct {
					CompressionType string `json:"compression-type"`
				}
			} `json:"format-specific"`
		}
		require.NoError(t, json.Unmarshal([]byte(run(t, "qemu-img", "info", "--output=json", path)), &info))
		assert.Equal(t, format, info.Format, file)
		if format != "raw" {
			run(t, "qemu-img", "check", "-q", path)
		}
		// Same guest-visible bytes as the source.
		run(t, "qemu-img", "compare", "-q", src, path)
		if format == "qcow2" {
			assert.Equal(t, "zstd", info.FormatSpecific.Data.CompressionType)
		}
		// sha256sum -c reads the checksum file.
		cmd := exec.Command("sha256sum", "-c", file+".sha256")
		cmd.Dir = out
		res, err := cmd.CombinedOutput()
		require.NoError(t, err, string(res))
		assert.Contains(t, string(res), file+": OK")
		assert.Equal(t, "-rw-------", mode(t, path), "%s holds the build account's secrets: only its owner reads it", file)
		assert.Equal(t, "-rw-r--r--", mode(t, path+".sha256"), "checksums hold no secrets")
	}
	assert.Equal(t, "-rw-r--r--", mode(t, filepath.Join(out, ManifestFile)), "the manifest holds no secrets")
	st, err := os.Stat(filepath.Join(out, "node.qcow2"))
	require.NoError(t, err)
	assert.Less(t, st.Size(), int64(8<<20), "zero clusters are dropped and data compressed")

	validateManifest(t, filepath.Join(out, ManifestFile))
	m := a.(*Artifact).manifest
	// Without a bake nobody asked the guest: its release stays empty, and
	// the seed's flavor is not taken for it.
	assert.Equal(t, OSInfo{Family: "linux", SeedFlavor: "cloud-init"}, m.OS)
	assert.Equal(t, "bios", m.Firmware.Type)
	require.Len(t, m.Outputs, 4)
	assert.Equal(t, "zstd", m.Outputs[0].Compression)
	assert.Nil(t, m.Baked)
	assert.Len(t, a.Files(), 11, "4 images, 4 checksum files, the SBOM, the provenance, the manifest")
	assert.Equal(t, "-rw-r--r--", mode(t, filepath.Join(out, "node.spdx.json")), "the SBOM holds no secrets")
}

// validateManifest checks a written manifest against docs/manifest.schema.json.
func validateManifest(t *testing.T, path string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	require.NoError(t, err)
	schema, err := jsonschema.NewCompiler().Compile(filepath.Join("..", "..", "docs", "manifest.schema.json"))
	require.NoError(t, err)
	require.NoError(t, schema.Validate(doc), "%s", raw)
}

// The manifest's os is what the guest reported to kubenode-bake, next to
// what the builder knows.
func TestManifestOSIsWhatTheGuestReported(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	t.Setenv("PACKER_RUN_UUID", "run-"+t.Name())
	dir := t.TempDir()
	src := sourceImage(t, dir)
	require.NoError(t, baked.Write("kubenode-libvirt.debian", baked.Record{
		Facts: baked.Facts{Kubernetes: "v1.33.13", Bootstrap: "cluster-api", Checksums: map[string]string{}},
		OS:    baked.GuestOS{ID: "debian", Version: "12", Name: "Debian GNU/Linux 12 (bookworm)"},
	}))
	p := &PostProcessor{}
	require.NoError(t, p.Configure(map[string]interface{}{"formats": []string{"raw"}, "output_directory": filepath.Join(dir, "out"), "packer_build_name": "kubenode-libvirt.debian"}))
	ui, log := uiForTest()
	in := &fakeArtifact{files: []string{src}, facts: `{"os_family":"linux","os_version":"","seed_flavor":"cloud-init","firmware":"bios"}`}
	a, _, _, err := p.PostProcess(context.Background(), ui, in)
	require.NoError(t, err, log.String())
	validateManifest(t, filepath.Join(dir, "out", ManifestFile))
	m := a.(*Artifact).manifest
	assert.Equal(t, OSInfo{Family: "linux", ID: "debian", Version: "12", Name: "Debian GNU/Linux 12 (bookworm)", SeedFlavor: "cloud-init"}, m.OS)
	require.NotNil(t, m.Baked)
	assert.Equal(t, "v1.33.13", m.Baked.Kubernetes)
	raw, err := os.ReadFile(filepath.Join(dir, "out", ManifestFile))
	require.NoError(t, err)
	assert.Contains(t, string(raw), `"bootstrap": "cluster-api"`, "the manifest says how nodes from the image join")
	schema, err := jsonschema.NewCompiler().Compile(filepath.Join("..", "..", "docs", "manifest.schema.json"))
	require.NoError(t, err)
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(strings.Replace(string(raw), `"bootstrap": "cluster-api"`, `"bootstrap": "ignition"`, 1)))
	require.NoError(t, err)
	assert.Error(t, schema.Validate(doc), "bootstrap is joiner or cluster-api")

	for _, tc := range []struct {
		name    string
		builder OSInfo
		guest   baked.GuestOS
		want    OSInfo
	}{
		{"windows, not baked", OSInfo{Family: "windows", Version: "2022", Edition: "datacenter-core"}, baked.GuestOS{},
			OSInfo{Family: "windows", Version: "2022", Edition: "datacenter-core"}},
		{"windows, baked", OSInfo{Family: "windows", Version: "2022", Edition: "datacenter-core"}, baked.GuestOS{ID: "windows", Version: "2022", Name: "Windows Server 2022 Datacenter", Build: "20348"},
			OSInfo{Family: "windows", ID: "windows", Version: "2022", Name: "Windows Server 2022 Datacenter", Build: "20348", Edition: "datacenter-core"}},
		{"another builder, baked", OSInfo{Family: "unknown"}, baked.GuestOS{ID: "rocky", Version: "9.5", Name: "Rocky Linux 9.5 (Blue Onyx)"},
			OSInfo{Family: "linux", ID: "rocky", Version: "9.5", Name: "Rocky Linux 9.5 (Blue Onyx)"}},
	} {
		assert.Equal(t, tc.want, tc.builder.reported(tc.guest), tc.name)
	}
}

func mode(t *testing.T, path string) string {
	t.Helper()
	st, err := os.Stat(path)
	require.NoError(t, err)
	return st.Mode().String()
}

// file_mode sets the images' permissions exactly, whatever the umask; while
// qemu-img writes, the partial file is its owner's only.
func TestExportFileMode(t *testing.T) {
	dir := t.TempDir()
	src := sourceImage(t, dir)
	// A qemu-img that records the mode of the file it is asked to write,
	// then lets the real one write it.
	seen := filepath.Join(dir, "partial-mode")
	wrapper := filepath.Join(dir, "qemu-img")
	require.NoError(t, os.WriteFile(wrapper, []byte("#!/bin/sh\nfor a; do last=$a; done\n[ \"$1\" = convert ] && stat -c %A \"$last\" > "+seen+"\nexec qemu-img \"$@\"\n"), 0o755))
	p := &PostProcessor{}
	require.NoError(t, p.Configure(map[string]interface{}{"formats": []string{"raw"}, "output_directory": filepath.Join(dir, "out"), "file_mode": "0640", "qemu_img_path": wrapper}))
	ui, log := uiForTest()
	_, _, _, err := p.PostProcess(context.Background(), ui, &fakeArtifact{files: []string{src}})
	require.NoError(t, err, log.String())
	assert.Equal(t, "-rw-r-----", mode(t, filepath.Join(dir, "out", "node.raw")))
	partial, err := os.ReadFile(seen)
	require.NoError(t, err)
	assert.Equal(t, "-rw-------\n", string(partial), "the file qemu-img writes into")
}

func TestSchemaRejectsBadManifest(t *testing.T) {
	schema, err := jsonschema.NewCompiler().Compile(filepath.Join("..", "..", "docs", "manifest.schema.json"))
	require.NoError(t, err)
	doc, _ := jsonschema.UnmarshalJSON(strings.NewReader(`{"schema_version": 2, "build_time": "x", "os": {"family": "beos", "id": "", "version": "", "name": ""}, "firmware": {"type": "bios"}, "baked": null, "tools": {"builder": "", "plugin": "", "qemu_img": ""}, "outputs": []}`))
	assert.Error(t, schema.Validate(doc), "the schema must be able to fail")
}

func TestInterruptedConversionLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	src := sourceImage(t, dir)
	dst := filepath.Join(dir, "out.qcow2")
	ctx, cancel := context.WithCancel(context.Background())
	err := convert(ctx, "qemu-img", ConvertArgs(src, "qcow2", dst, "qcow2", "zstd", 1), dst, 0o600, func(int) { cancel() })
	require.Error(t, err)
	assert.Contains(t, err.Error(), "interrupted")
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.Equal(t, []string{"node.qcow2"}, names, "no output and no partial file")
}

func TestConfigureReportsEveryKey(t *testing.T) {
	err := (&PostProcessor{}).Configure(map[string]interface{}{"formats": []string{"qcow2", "ova", "qcow2"}, "compression": "lz4", "threads": 99})
	require.Error(t, err)
	for _, want := range []string{`formats[1]: "ova" is not a format`, `formats[2]: "qcow2" is listed twice`, `compression: "lz4" is not allowed`, "threads: 99 is out of range"} {
		assert.Contains(t, err.Error(), want)
	}
	for _, bad := range []string{"rw-r--r--", "0800", "01644", "0044"} {
		err := (&PostProcessor{}).Configure(map[string]interface{}{"file_mode": bad})
		assert.ErrorContains(t, err, `file_mode: "`+bad+`" is not allowed`)
	}
}

func TestExportErrors(t *testing.T) {
	p := &PostProcessor{}
	require.NoError(t, p.Configure())
	ui, _ := uiForTest()
	_, _, _, err := p.PostProcess(context.Background(), ui, &fakeArtifact{files: []string{"/x/serial.log"}})
	assert.ErrorContains(t, err, "has no disk image")
	_, _, _, err = p.PostProcess(context.Background(), ui, &fakeArtifact{files: []string{"/nonexistent/disk.qcow2"}})
	assert.ErrorContains(t, err, "source image")

	// An output directory that cannot be made (its parent is a file; root
	// ignores permission bits, so a read-only directory would not do).
	dir := t.TempDir()
	src := sourceImage(t, dir)
	p = &PostProcessor{}
	require.NoError(t, p.Configure(map[string]interface{}{"output_directory": filepath.Join(src, "out")}))
	_, _, _, err = p.PostProcess(context.Background(), ui, &fakeArtifact{files: []string{src}})
	assert.ErrorContains(t, err, "output_directory:")
}

func TestConvertArgs(t *testing.T) {
	assert.Equal(t, []string{"convert", "-p", "-f", "qcow2", "-O", "qcow2", "-m", "2", "-W", "-c", "-o", "compression_type=zstd", "in", "out"},
		ConvertArgs("in", "qcow2", "out", "qcow2", "zstd", 2))
	assert.Equal(t, []string{"convert", "-p", "-f", "raw", "-O", "qcow2", "-m", "1", "-W", "in", "out"},
		ConvertArgs("in", "raw", "out", "qcow2", "none", 1))
	assert.Equal(t, []string{"convert", "-p", "-f", "qcow2", "-O", "vhdx", "-m", "4", "-W", "-o", "subformat=dynamic", "in", "out"},
		ConvertArgs("in", "qcow2", "out", "vhdx", "zstd", 4))
}
