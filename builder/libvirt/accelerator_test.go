// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package libvirt

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"syscall"
	"testing"

	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// kvmOpens makes openKVM answer err (nil: /dev/kvm opens) for one test
// and counts its calls.
func kvmOpens(t *testing.T, err error) *int {
	t.Helper()
	calls := 0
	saved := openKVM
	openKVM = func() error { calls++; return err }
	t.Cleanup(func() { openKVM = saved })
	return &calls
}

// TestTCGFallbackIsReported: when accelerator is unset and /dev/kvm does
// not open, the build runs under TCG and says so, with the reason and what
// to do, before it talks to libvirt; a build that asked for tcg, a host
// whose /dev/kvm opens and a remote hypervisor hear nothing.
func TestTCGFallbackIsReported(t *testing.T) {
	denied := &fs.PathError{Op: "open", Path: "/dev/kvm", Err: syscall.EACCES}
	missing := &fs.PathError{Op: "open", Path: "/dev/kvm", Err: syscall.ENOENT}
	for _, tc := range []struct {
		name        string
		raw         map[string]interface{}
		openErr     error
		accelerator string
		opened      bool
		warning     []string // nil: no warning
	}{
		{"kvm opens", nil, nil, "kvm", true, nil},
		{"permission denied", nil, denied, "tcg", true,
			[]string{"Warning: /dev/kvm did not open (open /dev/kvm: permission denied)", "QEMU's TCG", "Add the build user to the kvm group", "usermod -aG kvm ", `set accelerator = "tcg"`}},
		{"no /dev/kvm", nil, missing, "tcg", true,
			[]string{"Warning: /dev/kvm did not open (open /dev/kvm: no such file or directory)", "This host has no KVM", "kvm_intel or kvm_amd"}},
		{"tcg asked for", map[string]interface{}{"accelerator": "tcg"}, denied, "tcg", false, nil},
		{"remote hypervisor", map[string]interface{}{"libvirt_uri": "qemu+ssh://builder@host/system"}, denied, "kvm", false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := kvmOpens(t, tc.openErr)
			b := &Builder{newDriver: func(string) (Driver, error) { return nil, errors.New("no libvirt in this test") }}
			_, _, err := b.Prepare(linuxRaw(), tc.raw)
			require.NoError(t, err)
			assert.Equal(t, tc.accelerator, b.config.Accelerator)
			assert.Equal(t, tc.opened, *calls > 0, "/dev/kvm probed")

			stderr := new(bytes.Buffer)
			ui := &packersdk.BasicUi{Reader: new(bytes.Buffer), Writer: new(bytes.Buffer), ErrorWriter: stderr, PB: &packersdk.NoopProgressTracker{}}
			_, err = b.Run(context.Background(), ui, nil)
			require.ErrorContains(t, err, "no libvirt in this test")
			if tc.warning == nil {
				assert.Empty(t, stderr.String())
				return
			}
			for _, want := range tc.warning {
				assert.Contains(t, stderr.String(), want)
			}
		})
	}
}
