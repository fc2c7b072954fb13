// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package libvirt

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func linuxRaw() map[string]interface{} {
	return map[string]interface{}{
		"disk_image":        "/images/debian-12.qcow2",
		"ssh_username":      "kubenode",
		"linux":             map[string]interface{}{"flavor": "cloud-init"},
		"packer_build_name": "deb",
	}
}

func TestPrepareLinuxDefaults(t *testing.T) {
	var c Config
	warns, err := c.Prepare(linuxRaw())
	require.NoError(t, err)
	assert.Empty(t, warns)
	assert.Equal(t, "qemu:///system", c.LibvirtURI)
	assert.Equal(t, "packer-deb", c.VMName)
	assert.Equal(t, "output-deb", c.OutputDir)
	assert.Equal(t, 2, c.CPUs)
	assert.Equal(t, 2048, c.Memory)
	assert.Equal(t, "20G", c.DiskSize)
	assert.Equal(t, uint64(20<<30), c.diskSize)
	assert.Equal(t, "virtio", c.DiskBus)
	assert.Equal(t, "q35", c.MachineType)
	assert.Equal(t, "bios", c.Firmware)
	assert.Equal(t, "user", c.Network)
	assert.Equal(t, "ssh", c.Comm.Type)
	assert.True(t, *c.UseBackingFile)
	assert.False(t, *c.HypervEnlightenments)
	assert.Contains(t, []string{"kvm", "tcg"}, c.Accelerator)
	// The seed's flavor is not the OS: only the guest knows its release.
	f := c.imageFacts()
	assert.Equal(t, "linux", f.OSFamily)
	assert.Empty(t, f.OSVersion)
	assert.Equal(t, "cloud-init", f.SeedFlavor)
	assert.Equal(t, "cloud-init", c.generatedData()["SeedFlavor"])

	// Each build is a new cloud-init instance, or an image from an earlier
	// build would not take this build's seed.
	var again Config
	_, err = again.Prepare(linuxRaw())
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(c.linuxSeed().InstanceID, "kubenode-packer-deb-"))
	assert.NotEqual(t, c.linuxSeed().InstanceID, again.linuxSeed().InstanceID)
}

func TestPrepareWindowsDefaults(t *testing.T) {
	var c Config
	_, err := c.Prepare(map[string]interface{}{
		"iso_url": "win.iso", "iso_checksum": "none", "winrm_password": "Passw0rd!", "virtio_win_iso": "virtio-win.iso", "accelerator": "kvm",
		"windows": map[string]interface{}{"version": "2022"},
	})
	require.NoError(t, err)
	assert.Equal(t, "uefi", c.Firmware)
	assert.Equal(t, 4096, c.Memory)
	assert.Equal(t, "60G", c.DiskSize)
	assert.Equal(t, uint64(60<<30), c.diskSize)
	assert.Equal(t, "winrm", c.Comm.Type)
	assert.Equal(t, "Administrator", c.Comm.WinRMUser)
	assert.True(t, *c.HypervEnlightenments)
	w := c.windowsSeed()
	assert.Equal(t, "Passw0rd!", w.Password, "the seed takes the communicator's password")
	assert.Equal(t, "uefi", w.Firmware)
	assert.Equal(t, ImageFacts{OSFamily: "windows", OSVersion: "2022", OSEdition: "datacenter-core", Firmware: "uefi", Communicator: "winrm", Accelerator: "kvm"}, c.imageFacts())
	a := &Artifact{StateData: map[string]interface{}{FactsKey: `{"os_family":"windows","os_version":"2022","firmware":"uefi"}`}}
	f, ok := ReadImageFacts(a.State)
	require.True(t, ok)
	assert.Equal(t, "windows", f.OSFamily)
}

func TestPrepareReportsEveryKey(t *testing.T) {
	raw := linuxRaw()
	raw["iso_url"] = "also.iso"
	raw["disk_bus"] = "ide"
	raw["nic_model"] = "rtl8139"
	raw["firmware"] = "coreboot"
	raw["accelerator"] = "hvf"
	raw["memory"] = 64
	raw["disk_size"] = "lots"
	raw["network"] = "default"
	raw["bridge"] = "br0"
	raw["keep_in_pool"] = true
	raw["libvirt_uri"] = "xen:///system"
	raw["windows"] = map[string]interface{}{"version": "2016"}
	var c Config
	_, err := c.Prepare(raw)
	require.Error(t, err)
	msg := err.Error()
	for _, want := range []string{
		"disk_image: set iso_url or disk_image, not both",
		`disk_bus: "ide" is not allowed`,
		`nic_model: "rtl8139" is not allowed`,
		`firmware: "coreboot" is not allowed`,
		`accelerator: "hvf" is not allowed`,
		"memory: 64 MiB is too little",
		`disk_size: "lots" is not a size`,
		"bridge: set network or bridge, not both",
		"keep_in_pool: needs storage_pool",
		"libvirt_uri:",
		"windows: set at most one of windows, linux and seed_files",
		`windows.version: "2016" is not a supported Windows Server release`,
	} {
		assert.Contains(t, msg, want)
	}
	assert.NotContains(t, msg, "windows.firmware", "an invalid firmware is reported once, by its own key")
}

func TestPrepareWarnsAboutTCPURIs(t *testing.T) {
	raw := linuxRaw()
	raw["libvirt_uri"] = "qemu+tcp://hv.example/system"
	warns, err := (&Config{}).Prepare(raw)
	require.NoError(t, err, "a warning, not an error: the URI works")
	require.Len(t, warns, 1)
	assert.Contains(t, warns[0], `libvirt_uri: "qemu+tcp://hv.example/system" is unencrypted and unauthenticated`)
	assert.Contains(t, warns[0], "build password")
	assert.Contains(t, warns[0], "Use qemu+ssh://user@host/system instead.")

	for _, uri := range []string{"qemu+ssh://root@hv.example/system", "qemu+tls://hv.example/system", "qemu:///system"} {
		raw["libvirt_uri"] = uri
		warns, err := (&Config{}).Prepare(raw)
		require.NoError(t, err, uri)
		assert.Empty(t, warns, uri)
	}
}

// A user or password in linux { http_proxy } is warned about, naming the
// key and where the installer copies it; the password stays out of the
// warning. A proxy without credentials warns about nothing.
func TestPrepareWarnsAboutInstallerProxyCredentials(t *testing.T) {
	for proxy, want := range map[string]bool{
		"http://proxy.example.com:3128/":                   false,
		"http://build:s3cret@proxy.example.com:3128/":      true,
		"https://build@proxy.example.com/":                 true,
		"http://build:p%40ss@proxy.example.com:3128/":      true,
		"http://proxy.example.com:3128/?user=not-userinfo": false,
	} {
		raw := linuxRaw()
		raw["linux"] = map[string]interface{}{"flavor": "ubuntu-autoinstall", "http_proxy": proxy}
		warns, err := (&Config{}).Prepare(raw)
		require.NoError(t, err, "%s: a warning, not an error: an authenticated proxy works", proxy)
		if !want {
			assert.Empty(t, warns, proxy)
			continue
		}
		require.Len(t, warns, 1, proxy)
		assert.Contains(t, warns[0], "linux.http_proxy: the URL holds user information", proxy)
		assert.Contains(t, warns[0], "/etc/apt/apt.conf.d/90curtin-aptproxy", proxy)
		assert.Contains(t, warns[0], "generalize removes", proxy)
		assert.NotContains(t, warns[0], "s3cret", proxy)
	}
}

func TestPrepareHyperVNeedsKVM(t *testing.T) {
	var c Config
	_, err := c.Prepare(map[string]interface{}{
		"iso_url": "win.iso", "iso_checksum": "none", "winrm_password": "Passw0rd!", "virtio_win_iso": "virtio-win.iso", "accelerator": "tcg",
		"windows": map[string]interface{}{"version": "2022"},
	})
	require.NoError(t, err)
	assert.False(t, *c.HypervEnlightenments, "off by default under TCG")
	_, err = (&Config{}).Prepare(map[string]interface{}{
		"iso_url": "win.iso", "iso_checksum": "none", "winrm_password": "Passw0rd!", "virtio_win_iso": "virtio-win.iso", "accelerator": "tcg",
		"hyperv_enlightenments": true, "windows": map[string]interface{}{"version": "2022"},
	})
	assert.ErrorContains(t, err, "hyperv_enlightenments: needs accelerator = \"kvm\"")
}

func TestParseDiskSize(t *testing.T) {
	for in, want := range map[string]uint64{"40G": 40 << 30, "20480M": 20480 << 20, "20480": 20480 << 20, "1T": 1 << 40, "4g": 4 << 30} {
		got, err := parseDiskSize(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{"", "10", "5X", "-1G", "1.5G"} {
		_, err := parseDiskSize(bad)
		assert.Error(t, err, bad)
	}
	got, err := parseDiskSize("64T")
	require.NoError(t, err)
	assert.Equal(t, uint64(64<<40), got, "the largest size allowed")
}

func TestPrepareRefusesHugeDiskSizes(t *testing.T) {
	// 17179869185G is 2^64 + 1G bytes: scaled in 64 bits it wraps around to 1G.
	for _, huge := range []string{"17179869185G", "65T", "67108865M", "99999999999999999999999T"} {
		raw := linuxRaw()
		raw["disk_size"] = huge
		_, err := (&Config{}).Prepare(raw)
		assert.ErrorContains(t, err, `disk_size: "`+huge+`" is larger than the largest size allowed, 64T`)
	}
}

func TestPrepareWindowsNeedsVirtioDriversForVirtioHardware(t *testing.T) {
	for _, tc := range []struct {
		bus, nic string
		ok       bool
	}{
		{"", "", false}, // virtio disk and NIC by default
		{"scsi", "e1000e", false},
		{"sata", "virtio", false},
		{"sata", "e1000e", true},
		{"sata", "e1000", true},
	} {
		raw := map[string]interface{}{
			"iso_url": "win.iso", "iso_checksum": "none", "winrm_password": "Passw0rd!", "accelerator": "tcg",
			"windows": map[string]interface{}{"version": "2022"},
		}
		if tc.bus != "" {
			raw["disk_bus"], raw["nic_model"] = tc.bus, tc.nic
		}
		_, err := (&Config{}).Prepare(raw)
		if tc.ok {
			assert.NoError(t, err, "%s/%s: Windows drives SATA and Intel NICs itself", tc.bus, tc.nic)
			continue
		}
		require.Error(t, err, "%s/%s", tc.bus, tc.nic)
		assert.Contains(t, err.Error(), "virtio_win_iso: is required for a Windows guest")
		assert.Contains(t, err.Error(), `or disk_bus = "sata" and nic_model = "e1000e"`)
		raw["virtio_win_iso"] = "virtio-win.iso"
		_, err = (&Config{}).Prepare(raw)
		assert.NoError(t, err, "%s/%s with the drivers", tc.bus, tc.nic)
	}
	// Linux guests have virtio drivers in their kernel.
	_, err := (&Config{}).Prepare(linuxRaw())
	assert.NoError(t, err)
}

func TestPrepareLinuxInstallerProxyReachesTheSeed(t *testing.T) {
	raw := linuxRaw()
	raw["linux"] = map[string]interface{}{"flavor": "cloud-init", "http_proxy": "http://proxy.example.com:3128/"}
	var c Config
	_, err := c.Prepare(raw)
	require.NoError(t, err)
	assert.Equal(t, "http://proxy.example.com:3128/", c.linuxSeed().HTTPProxy)

	raw["linux"] = map[string]interface{}{"flavor": "cloud-init", "http_proxy": "proxy.example.com:3128"}
	_, err = (&Config{}).Prepare(raw)
	assert.ErrorContains(t, err, "http_proxy: ")
}

// WinRM Basic over HTTP on a libvirt network or a bridge carries the build
// password and the sysprep step (with the clone's password) in clear.
func TestPrepareWarnsAboutWinRMInClear(t *testing.T) {
	windows := func(extra map[string]interface{}) map[string]interface{} {
		raw := map[string]interface{}{
			"iso_url": "win.iso", "iso_checksum": "sha256:0000000000000000000000000000000000000000000000000000000000000000", "winrm_password": "Passw0rd!", "virtio_win_iso": "virtio-win.iso", "accelerator": "tcg",
			"windows": map[string]interface{}{"version": "2022"},
		}
		for k, v := range extra {
			raw[k] = v
		}
		return raw
	}
	for name, extra := range map[string]map[string]interface{}{
		"network": {"network": "default"},
		"bridge":  {"bridge": "br0"},
	} {
		warns, err := (&Config{}).Prepare(windows(extra))
		require.NoError(t, err, name)
		require.Len(t, warns, 1, name)
		assert.Contains(t, warns[0], "winrm_use_ssl: is off and the guest is on ", name)
		assert.Contains(t, warns[0], "Basic authentication over unencrypted HTTP", name)
		assert.Contains(t, warns[0], "sysprep step", name)
		assert.Contains(t, warns[0], "Set winrm_use_ssl = true", name)
	}
	warns, _ := (&Config{}).Prepare(windows(map[string]interface{}{"bridge": "br0"}))
	assert.Contains(t, warns[0], `bridge "br0"`)

	for name, extra := range map[string]map[string]interface{}{
		"user-mode networking": {},
		"winrm_use_ssl":        {"network": "default", "winrm_use_ssl": true, "winrm_insecure": true},
	} {
		warns, err := (&Config{}).Prepare(windows(extra))
		require.NoError(t, err, name)
		assert.Empty(t, warns, name)
	}
	// Linux guests and the ssh communicator do not use WinRM.
	raw := linuxRaw()
	raw["network"] = "default"
	warns, err := (&Config{}).Prepare(raw)
	require.NoError(t, err)
	assert.Empty(t, warns)
}

// Windows Server 2019 validates, with a warning naming the Kubernetes
// minors whose Windows page no longer lists it; 2022 and 2025 validate
// without one.
func TestPrepareWarnsAboutAWindowsReleaseKubernetesNoLongerLists(t *testing.T) {
	for _, version := range []string{"2019", "2022", "2025"} {
		warns, err := (&Config{}).Prepare(map[string]interface{}{
			"iso_url": "win.iso", "iso_checksum": "sha256:" + strings.Repeat("0", 64), "winrm_password": "Passw0rd!", "virtio_win_iso": "virtio-win.iso", "accelerator": "tcg",
			"windows": map[string]interface{}{"version": version},
		})
		require.NoError(t, err, version)
		if version != "2019" {
			assert.Empty(t, warns, version)
			continue
		}
		require.Len(t, warns, 1)
		assert.Equal(t, `windows.version: Kubernetes' page "Windows containers in Kubernetes" (https://kubernetes.io/docs/concepts/windows/intro/) for v1.36 and v1.37 `+
			`lists Windows Server 2022 and 2025 as the Windows nodes it supports, not 2019: a node of this image running one of those kubelets `+
			`(kubenode-bake's default is v1.37.2) runs outside what Kubernetes tests. Build Windows Server 2022 or 2025, or pair this image with an older Kubernetes minor`, warns[0])
	}
}
