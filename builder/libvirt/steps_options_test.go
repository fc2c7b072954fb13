// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package libvirt

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	golibvirt "github.com/digitalocean/go-libvirt"
	"github.com/hashicorp/packer-plugin-sdk/multistep"
	"github.com/hashicorp/packer-plugin-sdk/multistep/commonsteps"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// downloadSteps are the builder's StepDownload steps, in order.
func downloadSteps(b *Builder) []*commonsteps.StepDownload {
	var out []*commonsteps.StepDownload
	for _, s := range b.steps() {
		if d, ok := s.(*commonsteps.StepDownload); ok {
			out = append(out, d)
		}
	}
	return out
}

func sha256Of(data string) string {
	sum := sha256.Sum256([]byte(data))
	return "sha256:" + hex.EncodeToString(sum[:])
}

func TestBuilderDownloadsURLsAndCheckedFiles(t *testing.T) {
	dir := t.TempDir()
	local := filepath.Join(dir, "tools.iso")
	require.NoError(t, os.WriteFile(local, []byte("tools"), 0o644))
	var c Config
	_, err := c.Prepare(tcgRaw(map[string]interface{}{
		"disk_image": "https://cloud.example.com/images/rocky-9.qcow2", "disk_image_checksum": "none",
		"virtio_win_iso":         "/isos/virtio-win.iso", // local, no checksum: used as it is
		"extra_cdroms":           []string{local, "/isos/plain.iso", "https://example.com/drivers.iso"},
		"extra_cdroms_checksums": []string{sha256Of("tools"), "", "none"},
	}))
	require.NoError(t, err)
	var got []string
	for _, d := range downloadSteps(&Builder{config: c}) {
		got = append(got, fmt.Sprintf("%s %s %s .%s", d.ResultKey, d.Url[0], d.Checksum, d.Extension))
	}
	assert.Equal(t, []string{
		"base_disk https://cloud.example.com/images/rocky-9.qcow2 none .qcow2",
		"extra_cdrom_0 " + local + " " + sha256Of("tools") + " .iso",
		"extra_cdrom_2 https://example.com/drivers.iso none .iso",
	}, got, "no install ISO, and no download of local files without a checksum")
}

// The SDK's StepDownload, as the builder configures it: a local file is
// checked in place, a URL lands in Packer's cache, a wrong checksum stops
// the build.
func TestSourceDownloadsThroughTheSDK(t *testing.T) {
	t.Setenv("PACKER_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	local := filepath.Join(dir, "virtio-win.iso")
	require.NoError(t, os.WriteFile(local, []byte("virtio drivers"), 0o644))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "extra cd")
	}))
	defer srv.Close()

	c := preparedLinux(t)
	c.VirtioWinISO, c.VirtioWinISOChecksum = local, sha256Of("virtio drivers")
	c.ExtraCDROMs, c.ExtraCDROMsChecksums = []string{srv.URL + "/extra.iso"}, []string{sha256Of("extra cd")}
	state := testState(t, c, NewMockDriver())
	for _, f := range c.sourceFiles() {
		if f.stateKey == stateBaseDisk {
			continue // a local disk image without a checksum
		}
		require.True(t, f.download(), f.key)
		require.Equal(t, multistep.ActionContinue, f.step().Run(context.Background(), state), f.key)
	}
	assert.Equal(t, local, state.Get(stateVirtioWinISO), "a local file is checked where it is")
	cached := state.Get(extraCDROMKey(0)).(string)
	assert.True(t, strings.HasPrefix(cached, os.Getenv("PACKER_CACHE_DIR")), cached)
	data, err := os.ReadFile(cached)
	require.NoError(t, err)
	assert.Equal(t, "extra cd", string(data))

	c.VirtioWinISOChecksum = sha256Of("something else")
	state = testState(t, c, NewMockDriver())
	require.Equal(t, multistep.ActionHalt, c.sourceFiles()[1].step().Run(context.Background(), state))
	assert.ErrorContains(t, state.Get("error").(error), "Checksums did not match")
}

func TestStepCreateStorageAttachesFetchedFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(data), 0o644))
		return p
	}
	c := preparedLinux(t)
	c.DiskImage = "https://cloud.example.com/rocky-9.qcow2"
	c.VirtioWinISO = "https://example.com/virtio-win.iso"
	c.ExtraCDROMs = []string{write("plain.iso", "plain"), "https://example.com/drivers.iso"}
	m := NewMockDriver()
	state := testState(t, c, m)
	state.Put(stateBaseDisk, qcow2(t, 2<<30))
	state.Put(stateVirtioWinISO, write("cached-virtio.iso", "virtio"))
	state.Put(extraCDROMKey(1), write("cached-drivers.iso", "drivers"))
	state.Put(stateSeedISO, write("seed.iso", "seed"))

	s := &stepCreateStorage{}
	require.Equal(t, multistep.ActionContinue, s.Run(context.Background(), state))
	defer s.Cleanup(state)
	pool := state.Get(statePool).(string)
	var cds []string
	for i := range state.Get(stateCDROMs).([]string) {
		cds = append(cds, string(m.Pools[pool][fmt.Sprintf("packer-deb-cd%d.iso", i)]))
	}
	assert.Equal(t, []string{"virtio", "plain", "drivers", "seed"}, cds, "downloaded paths, local paths as they are, in order")
	assert.Equal(t, "qcow2", m.Volumes["packer-deb-base"].Format)
	assert.Equal(t, uint64(20<<30), m.Volumes["packer-deb.qcow2"].Capacity)
}

// preparedWith is a Linux build prepared with extra settings.
func preparedWith(t *testing.T, extra map[string]interface{}) *Config {
	t.Helper()
	raw := tcgRaw(extra)
	raw["output_directory"] = filepath.Join(t.TempDir(), "out")
	var c Config
	_, err := c.Prepare(raw)
	require.NoError(t, err)
	return &c
}

// downloadedBaseDisk is disk_image given as a URL: its size is known only
// once StepDownload has fetched it.
var downloadedBaseDisk = map[string]interface{}{"disk_image": "https://cloud.example.com/rocky-9.qcow2", "disk_image_checksum": "none"}

func TestStepCreateStorageChecksADownloadedBaseDisk(t *testing.T) {
	// A disk_size the template set: refused before anything is created.
	set := map[string]interface{}{"disk_size": "8G"}
	for k, v := range downloadedBaseDisk {
		set[k] = v
	}
	c := preparedWith(t, set)
	m := NewMockDriver()
	state := testState(t, c, m)
	state.Put(stateBaseDisk, qcow2(t, 10<<30))
	s := &stepCreateStorage{}
	require.Equal(t, multistep.ActionHalt, s.Run(context.Background(), state))
	assert.EqualError(t, state.Get("error").(error),
		"disk_size: 8G is smaller than disk_image's virtual size, 10G: a disk cannot shrink; set disk_size to at least 10G, or leave it unset")
	assert.Empty(t, m.Calls, "no pool, no volume, no domain")
	s.Cleanup(state)

	// The default grows to the image's size.
	c = preparedWith(t, downloadedBaseDisk)
	state = testState(t, c, m)
	state.Put(stateBaseDisk, qcow2(t, 30<<30+1))
	s = &stepCreateStorage{}
	require.Equal(t, multistep.ActionContinue, s.Run(context.Background(), state))
	assert.Equal(t, uint64(30<<30+1<<20), m.Volumes["packer-deb.qcow2"].Capacity, "rounded up to a MiB")
	assert.Equal(t, uint64(30<<30+1<<20), state.Get(stateDiskSize), "the size the disk grew to is in the state")
	s.Cleanup(state)
}

func TestStepExportCopiesTheGrownDisk(t *testing.T) {
	// disk_size unset (20G) and a downloaded base disk of 30G and a byte:
	// the build disk grows to 30G and a MiB, and so does its export.
	const grown = 30<<30 + 1<<20
	for _, keep := range []bool{false, true} {
		set := map[string]interface{}{}
		for k, v := range downloadedBaseDisk {
			set[k] = v
		}
		if keep {
			set["keep_in_pool"], set["storage_pool"] = true, "images"
		}
		c := preparedWith(t, set)
		require.NoError(t, os.MkdirAll(c.OutputDir, 0o755))
		m := NewMockDriver()
		m.Pools["images"] = map[string][]byte{}
		state := testState(t, c, m)
		state.Put(stateBaseDisk, qcow2(t, 30<<30+1))

		create := &stepCreateStorage{}
		require.Equal(t, multistep.ActionContinue, create.Run(context.Background(), state))
		export := &stepExport{}
		require.Equal(t, multistep.ActionContinue, export.Run(context.Background(), state))

		name := "packer-deb-export.qcow2"
		if keep {
			name = "packer-deb"
			assert.Equal(t, name, state.Get(stateExportVol))
		} else {
			assert.Equal(t, []string{filepath.Join(c.OutputDir, "packer-deb.qcow2")}, state.Get(stateExported))
		}
		assert.Equal(t, uint64(grown), m.Volumes[name].Capacity,
			"keep_in_pool=%v: the export is as large as the grown build disk, not disk_size's default of 20G", keep)
		export.Cleanup(state)
		create.Cleanup(state)
	}
}

// A Windows image says, when it is written, on which bus its clones must
// attach the disk (sysprep /mode:vm keeps the build's drivers); a Linux
// image says nothing of it.
func TestStepExportNamesTheDiskBusWindowsClonesMustKeep(t *testing.T) {
	for _, tc := range []struct {
		windows bool
		bus     string
		want    string
	}{
		{true, "virtio", `attach its disk to every VM made from it on virtio-blk, the bus of this build (disk_bus = "virtio")`},
		{true, "scsi", `attach its disk to every VM made from it on VirtIO-SCSI, the bus of this build (disk_bus = "scsi")`},
		{false, "virtio", ""},
	} {
		c := preparedWith(t, map[string]interface{}{"disk_bus": tc.bus})
		if tc.windows {
			c.Windows = &WindowsSeedConfig{Version: "2022"}
		}
		require.NoError(t, os.MkdirAll(c.OutputDir, 0o755))
		state := testState(t, c, NewMockDriver())
		state.Put(stateBaseDisk, qcow2(t, 1<<30))
		create := &stepCreateStorage{}
		require.Equal(t, multistep.ActionContinue, create.Run(context.Background(), state))
		export := &stepExport{}
		require.Equal(t, multistep.ActionContinue, export.Run(context.Background(), state))
		out := state.Get(stateUI).(*packersdk.BasicUi).Writer.(*bytes.Buffer).String()
		if tc.want == "" {
			assert.NotContains(t, out, "INACCESSIBLE_BOOT_DEVICE")
		} else {
			assert.Contains(t, out, tc.want)
			assert.Contains(t, out, "sysprep /mode:vm")
			assert.Contains(t, out, "INACCESSIBLE_BOOT_DEVICE")
		}
		export.Cleanup(state)
		create.Cleanup(state)
	}
}

func TestStepCreateStorageDiskImageFromISOURL(t *testing.T) {
	c := preparedWith(t, map[string]interface{}{
		"disk_image": "true", "iso_url": "https://cloud.example.com/rocky-9.qcow2", "iso_checksum": "none",
	})
	m := NewMockDriver()
	state := testState(t, c, m)
	state.Put(stateBaseDisk, qcow2(t, 2<<30))
	state.Put(stateSeedISO, filepath.Join(t.TempDir(), "none"))
	require.NoError(t, os.WriteFile(state.Get(stateSeedISO).(string), []byte("seed"), 0o644))
	s := &stepCreateStorage{}
	require.Equal(t, multistep.ActionContinue, s.Run(context.Background(), state))
	defer s.Cleanup(state)
	pool := state.Get(statePool).(string)
	assert.Contains(t, m.Calls, "CreateVolume "+pool+" packer-deb.qcow2 qcow2 backing=/pools/"+pool+"/packer-deb-base", "iso_url is the base disk")
	assert.Len(t, state.Get(stateCDROMs).([]string), 1, "the seed only")
}

func TestStepDefineDomainAppliesPatchesAndValidates(t *testing.T) {
	c := preparedLinux(t)
	c.Accelerator = "tcg"
	c.QemuArgs = [][]string{{"-device", "virtio-serial-pci"}}
	c.DomainXMLPatches = []DomainXMLPatch{{XPath: "/domain/devices", Add: "<watchdog model='i6300esb' action='reset'/>"}}
	m := NewMockDriver()
	state := testState(t, c, m)
	state.Put(stateDiskPath, "/pools/p/disk.qcow2")
	state.Put(stateHostPort, 2299)
	s := &stepDefineDomain{}
	require.Equal(t, multistep.ActionContinue, s.Run(context.Background(), state))
	s.Cleanup(state)
	require.Len(t, m.Defined, 1)
	assert.Contains(t, m.Defined[0], `<watchdog model="i6300esb" action="reset"/>`)
	assert.Contains(t, m.Defined[0], `<arg value="virtio-serial-pci"/>`)
	assert.Contains(t, m.Defined[0], `<model fallback="forbid">Nehalem</model>`)

	// libvirt's schema check refuses the patched domain: the error says so.
	const libvirtSays = "XML document failed to validate against schema: Unable to validate doc against /usr/share/libvirt/schemas/domain.rng"
	m = NewMockDriver()
	m.FailOn["DefineDomain"] = fmt.Errorf("defining domain: %w", golibvirt.Error{Code: uint32(golibvirt.ErrXMLInvalidSchema), Message: libvirtSays})
	state = testState(t, c, m)
	state.Put(stateDiskPath, "/pools/p/disk.qcow2")
	s = &stepDefineDomain{}
	require.Equal(t, multistep.ActionHalt, s.Run(context.Background(), state))
	err := state.Get("error").(error)
	assert.ErrorContains(t, err, libvirtSays)
	assert.ErrorContains(t, err, "the domain XML after domain_xml_patch: libvirt's schema refuses it; fix the patch")

	// A patch that cannot apply at build time (it could at validate time
	// only if the devices differ) names its block.
	c.DomainXMLPatches = []DomainXMLPatch{{XPath: "/domain/devices/sound", Remove: true}}
	m = NewMockDriver()
	state = testState(t, c, m)
	state.Put(stateDiskPath, "/pools/p/disk.qcow2")
	require.Equal(t, multistep.ActionHalt, (&stepDefineDomain{}).Run(context.Background(), state))
	assert.ErrorContains(t, state.Get("error").(error), `domain_xml_patch[0].xpath: "/domain/devices/sound" matches no element`)
	assert.Empty(t, m.Defined)
}
