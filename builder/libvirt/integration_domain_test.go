//go:build integration

package libvirt

import (
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/internal/harness"
)

// TestWindowsShapedDomainStarts defines and starts the domain a Windows
// build uses (UEFI with Secure Boot, vTPM via swtpm, Hyper-V
// enlightenments, SATA CD-ROMs, user networking with a forward) on the real
// libvirtd, under TCG, with our go-libvirt driver; then removes it with
// its NVRAM and TPM state. No Windows media is needed: the disk is empty,
// so the firmware just sits in its boot menu.
func TestWindowsShapedDomainStarts(t *testing.T) {
	harness.Libvirtd(t)
	d, err := NewDriver("qemu:///system")
	require.NoError(t, err)
	defer d.Close()

	pool := "kubenode-it-domain-" + randomSuffix()
	require.NoError(t, d.CreatePool(pool, "/var/lib/libvirt/images/"+pool))
	defer func() { assert.NoError(t, d.DeletePool(pool)) }()
	disk, err := d.CreateVolume(pool, Volume{Name: "disk.qcow2", Format: "qcow2", Capacity: 1 << 30})
	require.NoError(t, err)
	defer func() { assert.NoError(t, d.DeleteVolume(pool, "disk.qcow2")) }()

	port, err := freePort(5985, 6985)
	require.NoError(t, err)
	spec := windowsSpec()
	spec.Name = "kn-it-windows-shape"
	spec.Accelerator = "tcg"
	spec.Disk.Path = disk
	spec.CDROMs = nil
	spec.Net.UserForward.HostPort = port
	spec.SerialLog = ""
	x, err := domainXML(spec)
	require.NoError(t, err)
	require.NoError(t, d.DefineDomain(x))
	defer func() {
		assert.NoError(t, d.DestroyDomain(spec.Name))
		assert.NoError(t, d.UndefineDomain(spec.Name))
		_, err := d.DomainState(spec.Name)
		assert.True(t, IsNotFound(err), "domain still defined after undefine: %v", err)
	}()
	require.NoError(t, d.StartDomain(spec.Name))
	time.Sleep(2 * time.Second)
	st, err := d.DomainState(spec.Name)
	require.NoError(t, err)
	assert.Equal(t, StateRunning, st)
	out, _ := exec.Command("virsh", "-c", "qemu:///system", "dumpxml", spec.Name).CombinedOutput()
	assert.Contains(t, string(out), "<tpm model='tpm-crb'>")
	assert.Contains(t, string(out), "OVMF", "libvirt picked an OVMF firmware for firmware='efi'")
	assert.Contains(t, string(out), "secure='yes'", "Secure Boot firmware selected")
}
