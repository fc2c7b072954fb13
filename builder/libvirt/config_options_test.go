// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package libvirt

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/packer-plugin-sdk/multistep"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tcgRaw is linuxRaw with the accelerator fixed, so that defaults do not
// depend on this machine's /dev/kvm.
func tcgRaw(extra map[string]interface{}) map[string]interface{} {
	raw := linuxRaw()
	raw["accelerator"] = "tcg"
	for k, v := range extra {
		raw[k] = v
	}
	return raw
}

func TestPrepareCPUTopology(t *testing.T) {
	for _, tc := range []struct {
		name     string
		raw      map[string]interface{}
		cpus     int
		topology cpuTopology
		err      string
	}{
		{name: "none", raw: map[string]interface{}{}, cpus: 2},
		{name: "cpus alone", raw: map[string]interface{}{"cpus": 6}, cpus: 6},
		{name: "cpus from the product", raw: map[string]interface{}{"sockets": 2, "cores": 4}, cpus: 8, topology: cpuTopology{2, 4, 1}},
		{name: "threads alone", raw: map[string]interface{}{"threads": 2}, cpus: 2, topology: cpuTopology{1, 1, 2}},
		{name: "matching cpus", raw: map[string]interface{}{"cpus": 8, "sockets": 1, "cores": 4, "threads": 2}, cpus: 8, topology: cpuTopology{1, 4, 2}},
		{name: "mismatch", raw: map[string]interface{}{"cpus": 6, "sockets": 2, "cores": 2},
			err: "cpus: 6 does not match sockets × cores × threads = 2 × 2 × 1 = 4: set cpus to 4 or leave it unset"},
		{name: "negative", raw: map[string]interface{}{"cores": -2}, err: "cores: -2: must be 1 or more (or unset)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c Config
			_, err := c.Prepare(tcgRaw(tc.raw))
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.cpus, c.CPUs)
			assert.Equal(t, tc.topology, c.cpuSpec().Topology)
		})
	}
}

func TestPrepareCPUModel(t *testing.T) {
	for _, tc := range []struct {
		model, accel string
		want         cpuSpec
		err          string
	}{
		{model: "", accel: "tcg", want: cpuSpec{}},
		{model: "maximum", accel: "tcg", want: cpuSpec{Model: "maximum"}},
		{model: "host-passthrough", accel: "kvm", want: cpuSpec{Model: "host-passthrough"}},
		{model: "Skylake-Client-v4", accel: "kvm", want: cpuSpec{Model: "Skylake-Client-v4"}},
		{model: "Nehalem,+aes,-vmx", accel: "tcg", want: cpuSpec{Model: "Nehalem", Features: []string{"+aes", "-vmx"}}},
		{model: "host-passthrough", accel: "tcg", err: `cpu_model: "host-passthrough" needs accelerator = "kvm"`},
		{model: "Nehalem CPU", accel: "tcg", err: `cpu_model: "Nehalem CPU" is not a CPU model; use "host-passthrough", "host-model", "maximum"`},
		{model: "Nehalem,aes", accel: "tcg", err: `cpu_model: "Nehalem,aes": "aes" is not a CPU feature; write +name to require one`},
	} {
		var c Config
		_, err := c.Prepare(tcgRaw(map[string]interface{}{"cpu_model": tc.model, "accelerator": tc.accel}))
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err, tc.model)
			continue
		}
		require.NoError(t, err, tc.model)
		assert.Equal(t, tc.want, c.cpuSpec(), tc.model)
	}
}

func TestPrepareQemuArgs(t *testing.T) {
	var c Config
	warns, err := c.Prepare(tcgRaw(map[string]interface{}{"qemuargs": [][]string{{"-device", "virtio-serial-pci,bus=pcie.0,addr=0x11"}, {"-no-hpet"}}}))
	require.NoError(t, err)
	assert.Empty(t, warns)
	assert.Equal(t, [][]string{{"-device", "virtio-serial-pci,bus=pcie.0,addr=0x11"}, {"-no-hpet"}}, c.QemuArgs)

	// Seen on libvirt 9.0 / QEMU 7.2: a -device without addr= takes slot 1
	// and libvirt's video device then fails the start.
	warns, err = (&Config{}).Prepare(tcgRaw(map[string]interface{}{"qemuargs": [][]string{{"-smbios", "type=1"}, {"-device", "virtio-serial-pci"}}}))
	require.NoError(t, err)
	require.Len(t, warns, 1)
	assert.Contains(t, warns[0], `qemuargs[1]: "virtio-serial-pci" has no addr=`)
	assert.Contains(t, warns[0], `e.g. "bus=pcie.0,addr=0x11"`)

	_, err = (&Config{}).Prepare(tcgRaw(map[string]interface{}{"qemuargs": [][]string{{"-device", "x"}, {"device", "virtio-rng-pci"}, {}}}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `qemuargs[1]: ["device" "virtio-rng-pci"] is not a QEMU option with its value; each entry is a list like ["-device", "virtio-serial-pci,bus=pcie.0,addr=0x11"]`)
	assert.Contains(t, err.Error(), `qemuargs[2]: [] is not a QEMU option`)
	assert.NotContains(t, err.Error(), "qemuargs[0]")
}

func TestQemuArgsTemplates(t *testing.T) {
	var c Config
	args := [][]string{
		{"-smbios", "type=11,value=kubenode:{{ .Name }}:{{ .HTTPIP }}:{{ .HTTPPort }}:{{ .SSHHostPort }}"},
		{"-chardev", "file,id=extra,path={{ .OutputDir }}/extra.log"},
	}
	raw := tcgRaw(map[string]interface{}{"qemuargs": args, "output_directory": "out-rel", "http_directory": "www"})
	_, err := c.Prepare(raw)
	require.NoError(t, err)
	assert.Equal(t, args, c.QemuArgs, "kept as templates until the build knows the values")

	state := testState(t, &c, NewMockDriver())
	state.Put(stateDiskPath, "/pool/d.qcow2")
	state.Put(stateHostPort, 3022)
	state.Put(stateHTTPIP, "10.0.2.2")
	state.Put("http_port", 8123)
	spec, _, err := c.renderDomain(state)
	require.NoError(t, err)
	abs, err := filepath.Abs("out-rel")
	require.NoError(t, err)
	assert.Equal(t, [][]string{
		{"-smbios", "type=11,value=kubenode:" + c.VMName + ":10.0.2.2:8123:3022"},
		{"-chardev", "file,id=extra,path=" + abs + "/extra.log"},
	}, spec.QEMUArgs)

	_, err = (&Config{}).Prepare(tcgRaw(map[string]interface{}{"qemuargs": [][]string{{"-smbios", "type=1,serial={{ .SSHPort }}"}}}))
	require.Error(t, err, "a field the qemu builder does not offer either")
	assert.Contains(t, err.Error(), "qemuargs[0][1]")
	_, err = (&Config{}).Prepare(tcgRaw(map[string]interface{}{"qemuargs": [][]string{{"-smbios", "type=1,serial={{ .Name "}}}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "qemuargs")
	assert.Contains(t, err.Error(), "unclosed action")
}

func TestPrepareDomainXMLPatch(t *testing.T) {
	patch := func(p ...map[string]interface{}) map[string]interface{} {
		return tcgRaw(map[string]interface{}{"domain_xml_patch": p})
	}
	_, err := (&Config{}).Prepare(patch(
		map[string]interface{}{"xpath": "/domain/devices", "add": "<watchdog model='i6300esb' action='reset'/>"},
		map[string]interface{}{"xpath": "/domain/devices/watchdog", "replace": "<watchdog model='itco' action='poweroff'/>"},
		map[string]interface{}{"xpath": "/domain/devices/input[@type='tablet']", "remove": true},
	))
	require.NoError(t, err, "later blocks see what earlier ones added")

	for _, tc := range []struct {
		name  string
		patch []map[string]interface{}
		err   string
	}{
		{"no match", []map[string]interface{}{
			{"xpath": "/domain/devices", "add": "<watchdog model='i6300esb'/>"},
			{"xpath": "/domain/devices/sound", "remove": true},
		}, `domain_xml_patch[1].xpath: "/domain/devices/sound" matches no element of the domain XML`},
		{"bad path", []map[string]interface{}{{"xpath": "/domain/devices[", "remove": true}},
			`domain_xml_patch[0].xpath: "/domain/devices[": path has invalid filter [brackets].`},
		{"malformed add", []map[string]interface{}{{"xpath": "/domain/devices", "add": "<watchdog model='i6300esb'>"}},
			`domain_xml_patch[0].add: "<watchdog model='i6300esb'>" is not well-formed XML`},
		{"text only", []map[string]interface{}{{"xpath": "/domain/devices", "replace": "watchdog"}},
			`domain_xml_patch[0].replace: "watchdog" has text outside its elements`},
		{"no operation", []map[string]interface{}{{"xpath": "/domain/devices"}},
			"domain_xml_patch[0]: set exactly one of add, replace and remove"},
		{"two operations", []map[string]interface{}{{"xpath": "/domain/devices", "add": "<a/>", "remove": true}},
			"domain_xml_patch[0]: set exactly one of add, replace and remove"},
		{"no xpath", []map[string]interface{}{{"add": "<a/>"}}, "domain_xml_patch[0].xpath: is required"},
		{"root", []map[string]interface{}{{"xpath": "/domain", "remove": true}},
			`domain_xml_patch[0].xpath: "/domain" is the root element <domain>, which cannot be replaced or removed`},
	} {
		_, err := (&Config{}).Prepare(patch(tc.patch...))
		assert.ErrorContains(t, err, tc.err, tc.name)
	}
}

func TestPrepareDomainXMLPatchSeesTheCDROMs(t *testing.T) {
	// Three CD-ROMs (virtio-win, one extra, the seed): the patch's path is
	// checked against the same devices the build defines.
	raw := tcgRaw(map[string]interface{}{
		"virtio_win_iso": "/isos/virtio-win.iso", "extra_cdroms": []string{"/isos/tools.iso"},
		"domain_xml_patch": []map[string]interface{}{{"xpath": "/domain/devices/disk[@device='cdrom'][3]/target", "replace": "<target dev='sdc' bus='scsi'/>"}},
	})
	_, err := (&Config{}).Prepare(raw)
	require.NoError(t, err)
	raw["domain_xml_patch"] = []map[string]interface{}{{"xpath": "/domain/devices/disk[@device='cdrom'][4]", "remove": true}}
	_, err = (&Config{}).Prepare(raw)
	assert.ErrorContains(t, err, `domain_xml_patch[0].xpath: "/domain/devices/disk[@device='cdrom'][4]" matches no element`)
}

func TestPrepareSourceFiles(t *testing.T) {
	local := filepath.Join(t.TempDir(), "tools.iso")
	require.NoError(t, os.WriteFile(local, []byte("tools"), 0o644))
	sum := sha256.Sum256([]byte("tools"))
	sha := "sha256:" + hex.EncodeToString(sum[:])
	for _, tc := range []struct {
		name string
		raw  map[string]interface{}
		errs []string
	}{
		{name: "local paths as they are", raw: map[string]interface{}{"virtio_win_iso": "/isos/virtio-win.iso", "extra_cdroms": []string{local, "/isos/b.iso"}}},
		{name: "URLs with checksums", raw: map[string]interface{}{
			"disk_image": "https://cloud.example.com/debian-12.qcow2", "disk_image_checksum": "sha256:" + hex.EncodeToString(make([]byte, 32)),
			"virtio_win_iso": "https://example.com/virtio-win.iso", "virtio_win_iso_checksum": "none",
			"extra_cdroms": []string{"https://example.com/a.iso", local}, "extra_cdroms_checksums": []string{"none", sha},
		}},
		{name: "URLs without checksums", raw: map[string]interface{}{
			"disk_image":     "https://cloud.example.com/debian-12.qcow2",
			"virtio_win_iso": "https://example.com/virtio-win.iso",
			"extra_cdroms":   []string{local, "http://example.com/b.iso"}, "extra_cdroms_checksums": []string{"", ""},
		}, errs: []string{
			`disk_image: "https://cloud.example.com/debian-12.qcow2" is a URL and needs a checksum: set disk_image_checksum to "sha256:<hex>", "file:<URL of a checksum file>" or "none"`,
			`virtio_win_iso: "https://example.com/virtio-win.iso" is a URL and needs a checksum: set virtio_win_iso_checksum`,
			`extra_cdroms[1]: "http://example.com/b.iso" is a URL and needs a checksum: set extra_cdroms_checksums[1]`,
		}},
		{name: "checksum count", raw: map[string]interface{}{"extra_cdroms": []string{"/a.iso", "/b.iso"}, "extra_cdroms_checksums": []string{"none"}},
			errs: []string{"extra_cdroms_checksums: has 1 entries for 2 extra_cdroms: give one per CD-ROM"}},
		{name: "unreadable checksum", raw: map[string]interface{}{"virtio_win_iso": local, "virtio_win_iso_checksum": "sha256:xyz"},
			errs: []string{"virtio_win_iso_checksum: "}},
		{name: "disk_image_checksum without disk_image", raw: map[string]interface{}{"disk_image": "", "iso_url": "/isos/debian.iso", "iso_checksum": "none", "disk_image_checksum": sha},
			errs: []string{"disk_image_checksum: checks a disk_image path or URL"}},
	} {
		_, err := (&Config{}).Prepare(tcgRaw(tc.raw))
		if len(tc.errs) == 0 {
			assert.NoError(t, err, tc.name)
			continue
		}
		require.Error(t, err, tc.name)
		for _, want := range tc.errs {
			assert.Contains(t, err.Error(), want, tc.name)
		}
	}
}

func TestPrepareDiskImageTrueBootsISOURL(t *testing.T) {
	var c Config
	_, err := c.Prepare(tcgRaw(map[string]interface{}{
		"disk_image": "true", "iso_url": "https://cloud.example.com/rocky-9.qcow2", "iso_checksum": "none",
	}))
	require.NoError(t, err)
	assert.Equal(t, sourceISOURLDisk, c.source)
	assert.Empty(t, c.sourceFiles(), "iso_url is the disk, nothing else to fetch")
	assert.Equal(t, 1, c.cdromCount(), "the seed only: iso_url is not a CD-ROM")
	b := &Builder{config: c}
	var downloads []string
	for _, s := range b.steps() {
		_, check := s.(*stepCheckInstallImage)
		assert.False(t, check, "no install image check on a disk image")
	}
	for _, s := range downloadSteps(b) {
		downloads = append(downloads, s.ResultKey+"="+s.Url[0])
	}
	assert.Equal(t, []string{"base_disk=https://cloud.example.com/rocky-9.qcow2"}, downloads)

	// Without iso_url it is an error of iso_url; "false" is unset.
	_, err = (&Config{}).Prepare(tcgRaw(map[string]interface{}{"disk_image": "true"}))
	assert.ErrorContains(t, err, "One of iso_url or iso_urls must be specified")
	_, err = (&Config{}).Prepare(tcgRaw(map[string]interface{}{"disk_image": "false", "iso_url": "/isos/debian.iso", "iso_checksum": "none"}))
	assert.NoError(t, err)
	_, err = (&Config{}).Prepare(tcgRaw(map[string]interface{}{"disk_image": "/images/base.qcow2", "iso_url": "/isos/debian.iso", "iso_checksum": "none"}))
	assert.ErrorContains(t, err, "disk_image: set iso_url or disk_image, not both; disk_image = true boots iso_url as the disk image")
}

// `disk_image = true` in HCL reaches Prepare as the string "true".
func TestDiskImageTrueInHCL(t *testing.T) {
	f, diags := hclparse.NewParser().ParseHCL([]byte("disk_image = true\n"), "t.pkr.hcl")
	require.False(t, diags.HasErrors(), diags.Error())
	v, diags := hcldec.Decode(f.Body, (&Builder{}).ConfigSpec(), nil)
	require.False(t, diags.HasErrors(), diags.Error())
	assert.Equal(t, "true", v.GetAttr("disk_image").AsString())
}

// qcow2 writes a qcow2 header announcing a disk of size bytes.
func qcow2(t *testing.T, size uint64) string {
	t.Helper()
	head := make([]byte, 512)
	copy(head, "QFI\xfb")
	binary.BigEndian.PutUint32(head[4:], 3)
	binary.BigEndian.PutUint64(head[24:], size)
	p := filepath.Join(t.TempDir(), "base.qcow2")
	require.NoError(t, os.WriteFile(p, head, 0o644))
	return p
}

// qcow2Header is a qcow2 header of version 2 or 3 with edit applied.
func qcow2Header(t *testing.T, version uint32, edit func(h []byte)) string {
	t.Helper()
	head := make([]byte, 512)
	copy(head, "QFI\xfb")
	binary.BigEndian.PutUint32(head[4:], version)
	binary.BigEndian.PutUint32(head[20:], 16) // cluster_bits
	binary.BigEndian.PutUint64(head[24:], 10<<30)
	if version == 3 {
		binary.BigEndian.PutUint32(head[100:], 104) // header_length
	}
	if edit != nil {
		edit(head)
	}
	p := filepath.Join(t.TempDir(), "base.qcow2")
	require.NoError(t, os.WriteFile(p, head, 0o644))
	return p
}

// A disk_image goes to QEMU, which opens every file its qcow2 header
// names: one naming a backing file or an external data file is refused
// before anything reads it.
func TestDiskVirtualSizeRefusesQcow2NamingOtherFiles(t *testing.T) {
	backing := func(h []byte) {
		binary.BigEndian.PutUint64(h[8:], 400)
		binary.BigEndian.PutUint32(h[16:], 11)
		copy(h[400:], "/etc/shadow")
	}
	for _, tc := range []struct {
		name    string
		version uint32
		edit    func(h []byte)
		err     string
	}{
		{"v2", 2, nil, ""},
		{"v3", 3, nil, ""},
		{"v3 with compatible features", 3, func(h []byte) { h[87] = 1 }, ""}, // lazy refcounts
		{"v2 backing file", 2, backing, "names a backing file"},
		{"v3 backing file", 3, backing, "names a backing file"},
		{"v3 backing file offset alone", 3, func(h []byte) { binary.BigEndian.PutUint64(h[8:], 400) }, "names a backing file"},
		{"v3 external data file", 3, func(h []byte) { binary.BigEndian.PutUint64(h[72:], 1<<2) }, "external data file"},
		{"v3 external data file among other bits", 3, func(h []byte) { binary.BigEndian.PutUint64(h[72:], 1<<2|1<<1) }, "external data file"},
		{"v4", 4, nil, "qcow2 version 4 is not supported"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			size, err := diskVirtualSize(qcow2Header(t, tc.version, tc.edit))
			if tc.err == "" {
				require.NoError(t, err)
				assert.Equal(t, uint64(10<<30), size)
				return
			}
			assert.ErrorContains(t, err, tc.err)
		})
	}
	short := filepath.Join(t.TempDir(), "short.qcow2")
	require.NoError(t, os.WriteFile(short, append([]byte("QFI\xfb\x00\x00\x00\x03"), make([]byte, 90)...), 0o644))
	_, err := diskVirtualSize(short)
	assert.ErrorContains(t, err, "a qcow2 header cut short", "a v3 header is 104 bytes: the feature bits must be there")

	// The key of the base disk: disk_image, or iso_url with disk_image = true.
	assert.Equal(t, "iso_url", (&Config{source: sourceISOURLDisk}).baseDiskKey())
	_, err = (&Config{}).Prepare(tcgRaw(map[string]interface{}{"disk_image": qcow2Header(t, 3, backing)}))
	assert.ErrorContains(t, err, "disk_image: ")
	assert.ErrorContains(t, err, "names a backing file")
}

func TestDiskVirtualSize(t *testing.T) {
	size, err := diskVirtualSize(qcow2(t, 2361393152))
	require.NoError(t, err)
	assert.Equal(t, uint64(2361393152), size, "the qcow2 header's size, not the file's")
	raw := filepath.Join(t.TempDir(), "base.raw")
	require.NoError(t, os.WriteFile(raw, make([]byte, 3<<20), 0o644))
	size, err = diskVirtualSize(raw)
	require.NoError(t, err)
	assert.Equal(t, uint64(3<<20), size, "a raw image is as large as its file")
	short := filepath.Join(t.TempDir(), "short.qcow2")
	require.NoError(t, os.WriteFile(short, []byte("QFI\xfb\x00\x00\x00\x03"), 0o644))
	_, err = diskVirtualSize(short)
	assert.ErrorContains(t, err, "a qcow2 header cut short")
}

func TestPrepareDiskSizeAgainstALocalBaseDisk(t *testing.T) {
	base := qcow2(t, 30<<30)
	for _, tc := range []struct {
		name, diskSize, want, err string
		bytes                     uint64
	}{
		{name: "larger", diskSize: "40G", want: "40G", bytes: 40 << 30},
		{name: "equal", diskSize: "30720M", want: "30720M", bytes: 30 << 30},
		{name: "smaller", diskSize: "20G",
			err: "disk_size: 20G is smaller than disk_image's virtual size, 30G: a disk cannot shrink; set disk_size to at least 30G, or leave it unset"},
		{name: "default grows", want: "30G", bytes: 30 << 30},
	} {
		raw := tcgRaw(map[string]interface{}{"disk_image": base})
		if tc.diskSize != "" {
			raw["disk_size"] = tc.diskSize
		}
		var c Config
		_, err := c.Prepare(raw)
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err, tc.name)
			continue
		}
		require.NoError(t, err, tc.name)
		assert.Equal(t, tc.want, c.DiskSize, tc.name)
		assert.Equal(t, tc.bytes, c.diskSize, tc.name)
	}
	odd := qcow2(t, 2361393153)
	_, err := (&Config{}).Prepare(tcgRaw(map[string]interface{}{"disk_image": odd, "disk_size": "2G"}))
	assert.ErrorContains(t, err, "disk_size: 2G is smaller than disk_image's virtual size, 2361393153 bytes (2.20G): a disk cannot shrink; set disk_size to at least 3G")
	_, err = (&Config{}).Prepare(tcgRaw(map[string]interface{}{"disk_image": odd, "disk_size": "65T"}))
	assert.ErrorContains(t, err, `disk_size: "65T" is larger than the largest size allowed, 64T`, "the maximum stays")

	// A default disk_size grows to the base's size rounded up to a MiB,
	// and never past 64T: a size near 2^64 must not wrap around to 0.
	for _, size := range []uint64{1<<64 - 1, 1<<64 - 1<<19, 64<<40 + 1} {
		var c Config
		_, err := c.Prepare(tcgRaw(map[string]interface{}{"disk_image": qcow2(t, size)}))
		assert.ErrorContains(t, err, "disk_image: its virtual size, ", "%d", size)
		assert.ErrorContains(t, err, "is larger than the largest disk allowed, 64T", "%d (grew to %s)", size, c.DiskSize)
	}
	var c Config
	_, err = c.Prepare(tcgRaw(map[string]interface{}{"disk_image": qcow2(t, 64<<40)}))
	require.NoError(t, err)
	assert.Equal(t, "64T", c.DiskSize)
}

func TestPrepareVNC(t *testing.T) {
	for _, tc := range []struct {
		name             string
		raw              map[string]interface{}
		listen, password string
		err              string
	}{
		{name: "off by default", raw: map[string]interface{}{}},
		{name: "asked for", raw: map[string]interface{}{"vnc_bind_address": "127.0.0.1", "vnc_password": "kn-12345"},
			listen: "127.0.0.1", password: "kn-12345"},
		{name: "no password", raw: map[string]interface{}{"vnc_bind_address": "127.0.0.1"},
			err: "vnc_password: is required with vnc_bind_address"},
		{name: "password too long", raw: map[string]interface{}{"vnc_bind_address": "::1", "vnc_password": "123456789"},
			err: "vnc_password: is 9 characters; VNC authentication uses only the first 8"},
		{name: "not an address", raw: map[string]interface{}{"vnc_bind_address": "localhost", "vnc_password": "x"},
			err: `vnc_bind_address: "localhost" is not an IP address`},
		{name: "password alone", raw: map[string]interface{}{"vnc_password": "x"},
			err: "vnc_password: is set but vnc_bind_address is not"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c Config
			_, err := c.Prepare(tcgRaw(tc.raw))
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			state := new(multistep.BasicStateBag)
			state.Put(stateDiskPath, "/pool/deb.qcow2")
			spec, err := c.domainSpec(state)
			require.NoError(t, err)
			assert.Equal(t, tc.listen, spec.VNCListen)
			assert.Equal(t, tc.password, spec.VNCPassword)
		})
	}
}

func TestDomainXMLLogHidesTheVNCPassword(t *testing.T) {
	x, err := domainXML(domainSpec{VNCListen: "127.0.0.1", VNCPassword: "kn-12345", Disk: diskSpec{Bus: "virtio"}})
	require.NoError(t, err)
	logged := vncPasswdRE.ReplaceAllString(x, `passwd="(hidden)"`)
	assert.NotContains(t, logged, "kn-12345")
	assert.Contains(t, logged, `passwd="(hidden)"`)
}
