// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package libvirt

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hashicorp/packer-plugin-sdk/multistep"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// otherUnder judges a directory under root as an ordinary user who is
// neither its owner nor in its group: searchable only with the "others"
// execute bit (directories above root, the test's own, pass). The kernel
// lets root in everywhere, so the tests use it in place of canSearch to be
// meaningful also when they run as root.
func otherUnder(root string) func(string) error {
	return func(dir string) error {
		if !strings.HasPrefix(dir, root+string(filepath.Separator)) {
			return nil
		}
		fi, err := os.Stat(dir)
		if err != nil {
			return err
		}
		if fi.Mode().Perm()&0o001 == 0 {
			return syscall.EACCES
		}
		return nil
	}
}

// libvirtTree makes <tmp>/lib/libvirt/qemu/nvram and .../swtpm with the
// modes given (0 leaves a directory out) and points nvramDir and
// swtpmStateDir at them for the test. It returns <tmp>.
func libvirtTree(t *testing.T, qemu, nvram, swtpm fs.FileMode) string {
	tmp := t.TempDir()
	root := filepath.Join(tmp, "lib", "libvirt")
	require.NoError(t, os.MkdirAll(root, 0o755))
	oldNV, oldTPM := nvramDir, swtpmStateDir
	nvramDir = filepath.Join(root, "qemu", "nvram")
	swtpmStateDir = filepath.Join(root, "swtpm")
	t.Cleanup(func() { nvramDir, swtpmStateDir = oldNV, oldTPM })
	mk := func(p string, mode fs.FileMode) {
		if mode == 0 {
			return
		}
		require.NoError(t, os.Mkdir(p, 0o700))
		require.NoError(t, os.Chmod(p, mode))
		t.Cleanup(func() { os.Chmod(p, 0o700) })
	}
	// nvram is created before its parent is narrowed.
	if qemu != 0 {
		require.NoError(t, os.Mkdir(filepath.Join(root, "qemu"), 0o755))
		mk(nvramDir, nvram)
		require.NoError(t, os.Chmod(filepath.Join(root, "qemu"), qemu))
		t.Cleanup(func() { os.Chmod(filepath.Join(root, "qemu"), 0o755) })
	}
	mk(swtpmStateDir, swtpm)
	return tmp
}

func TestCheckFirmwareAccess(t *testing.T) {
	for _, tc := range []struct {
		name               string
		firmware           string
		tpm, keepInPool    bool
		uri                string
		qemu, nvram, swtpm fs.FileMode
		blocked            string // the directory the error names, relative to lib/libvirt; "" for no error
	}{
		{name: "Debian layout, uefi", firmware: "uefi", qemu: 0o750, nvram: 0o755, blocked: "qemu"},
		{name: "searchable layout, uefi", firmware: "uefi", qemu: 0o751, nvram: 0o755},
		{name: "nvram not searchable", firmware: "uefi", qemu: 0o751, nvram: 0o750, blocked: "qemu/nvram"},
		{name: "nvram not there yet", firmware: "uefi", qemu: 0o751},
		{name: "qemu not there yet", firmware: "uefi"},
		{name: "bios: nothing kept", firmware: "bios", qemu: 0o750, nvram: 0o755},
		{name: "keep_in_pool: nothing kept", firmware: "uefi", keepInPool: true, qemu: 0o750, nvram: 0o755},
		{name: "remote: nothing kept", firmware: "uefi", uri: "qemu+ssh://root@hv/system", qemu: 0o750, nvram: 0o755},
		{name: "tpm, swtpm not searchable", firmware: "bios", tpm: true, swtpm: 0o700, blocked: "swtpm"},
		{name: "tpm, swtpm searchable", firmware: "bios", tpm: true, swtpm: 0o711},
		{name: "uefi and tpm, nvram first", firmware: "uefi", tpm: true, qemu: 0o750, nvram: 0o755, swtpm: 0o700, blocked: "qemu"},
		{name: "uefi and tpm, only tpm blocked", firmware: "uefi", tpm: true, qemu: 0o751, nvram: 0o755, swtpm: 0o700, blocked: "swtpm"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp := libvirtTree(t, tc.qemu, tc.nvram, tc.swtpm)
			uri := tc.uri
			if uri == "" {
				uri = "qemu:///system"
			}
			c := &Config{Firmware: tc.firmware, TPM: tc.tpm, KeepInPool: tc.keepInPool, LibvirtURI: uri, VMName: "win"}
			err := checkFirmwareAccess(c, otherUnder(tmp))
			if tc.blocked == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			root := filepath.Dir(filepath.Dir(nvramDir))
			msg := err.Error()
			assert.Contains(t, msg, "but "+filepath.Join(root, tc.blocked)+" (mode ")
			assert.Contains(t, msg, "permission denied")
			for _, key := range []string{"libvirt_uri", "keep_in_pool = true", "sudo packer build"} {
				assert.Contains(t, msg, key)
			}
			if strings.HasPrefix(tc.blocked, "qemu") {
				assert.True(t, strings.HasPrefix(msg, `firmware = "uefi" with the local libvirt_uri "qemu:///system"`), msg)
				assert.Contains(t, msg, filepath.Join(nvramDir, "win_VARS.fd"))
			} else {
				assert.True(t, strings.HasPrefix(msg, `tpm = true with the local libvirt_uri`), msg)
			}
		})
	}
}

func TestCheckFirmwareAccessRealPermissions(t *testing.T) {
	// canSearch, the kernel's answer for the running user: the tree
	// passes; as non-root, a directory of mode 0000 does not.
	libvirtTree(t, 0o751, 0o755, 0)
	c := &Config{Firmware: "uefi", LibvirtURI: "qemu:///system", VMName: "win"}
	assert.NoError(t, checkFirmwareAccess(c, canSearch))
	if os.Geteuid() == 0 {
		return
	}
	require.NoError(t, os.Chmod(nvramDir, 0o000))
	assert.Error(t, checkFirmwareAccess(c, canSearch))
}

func TestStepCheckFirmwareAccessHaltsBeforeAnything(t *testing.T) {
	tmp := libvirtTree(t, 0o750, 0o755, 0)
	c := preparedLinux(t)
	c.Firmware = "uefi"
	m := NewMockDriver()
	state := testState(t, c, m)
	s := &stepCheckFirmwareAccess{searchable: otherUnder(tmp)}
	require.Equal(t, multistep.ActionHalt, s.Run(context.Background(), state))
	assert.Contains(t, state.Get("error").(error).Error(), "keep_in_pool")
	assert.Empty(t, m.Calls)

	c.Firmware = "bios"
	state = testState(t, c, m)
	require.Equal(t, multistep.ActionContinue, s.Run(context.Background(), state))
}

func TestFirmwareAccessIsTheFirstStep(t *testing.T) {
	b := &Builder{config: *preparedLinux(t)}
	steps := b.steps()
	require.NotEmpty(t, steps)
	assert.IsType(t, &stepCheckFirmwareAccess{}, steps[0])
}
