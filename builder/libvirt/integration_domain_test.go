// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build integration

package libvirt

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/packer-plugin-sdk/bootcommand"
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
	t.Cleanup(func() { d.Close() }) // after scratchDisk's cleanups

	disk := scratchDisk(t, d, "domain")

	res := &portReservation{min: 5985, max: 6985, tried: map[int]bool{}}
	port, err := res.next(context.Background())
	require.NoError(t, err)
	defer res.release()
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
	// The UEFI "press any key to boot from CD" answer, typed as boot_command
	// types it: libvirt must accept our Linux key codes, modifiers included.
	keys := &sendKeyDriver{domain: spec.Name, keys: d}
	require.NoError(t, keys.SendSpecial("enter", bootcommand.KeyPress))
	require.NoError(t, keys.SendKey('A', bootcommand.KeyPress))
	require.NoError(t, keys.SendSpecial("f12", bootcommand.KeyPress))
	out, _ := exec.Command("virsh", "-c", "qemu:///system", "dumpxml", spec.Name).CombinedOutput()
	assert.Contains(t, string(out), "<tpm model='tpm-crb'>")
	assert.Contains(t, string(out), "OVMF", "libvirt picked an OVMF firmware for firmware='efi'")
	assert.Contains(t, string(out), "secure='yes'", "Secure Boot firmware selected")

	// Powered off, its EFI variables and TPM state are copied beside the image.
	require.NoError(t, d.DestroyDomain(spec.Name))
	keep := t.TempDir()
	saved, err := saveFirmwareState(d, spec.Name, keep)
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Join(keep, efiVarsFile), filepath.Join(keep, tpmStateDir)}, saved)
	vars, err := os.Stat(filepath.Join(keep, efiVarsFile))
	require.NoError(t, err)
	assert.Greater(t, vars.Size(), int64(64<<10), "an OVMF variable store")
	tpm, _ := filepath.Glob(filepath.Join(keep, tpmStateDir, "tpm2", "*"))
	assert.NotEmpty(t, tpm, "swtpm wrote TPM 2.0 state")
}

// scratchDisk makes a storage pool of the test's own holding an empty
// 1 GiB qcow2, for a domain that only has to be defined or started; the
// volume and the pool go when the test ends, after its deferred calls.
func scratchDisk(t *testing.T, d Driver, name string) string {
	t.Helper()
	pool := "kubenode-it-" + name + "-" + randomSuffix()
	require.NoError(t, d.CreatePool(pool, "/var/lib/libvirt/images/"+pool))
	t.Cleanup(func() { assert.NoError(t, d.DeletePool(pool)) })
	disk, err := d.CreateVolume(pool, Volume{Name: "disk.qcow2", Format: "qcow2", Capacity: 1 << 30})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, d.DeleteVolume(pool, "disk.qcow2")) })
	return disk
}
