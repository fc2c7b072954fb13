// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package libvirt

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"os/user"
)

// kvmDevice is the device QEMU opens to run a guest under KVM.
const kvmDevice = "/dev/kvm"

// openKVM opens kvmDevice for reading and writing, as QEMU does, and
// closes it again. Tests replace it.
var openKVM = func() error {
	f, err := os.OpenFile(kvmDevice, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	return f.Close()
}

// defaultAccelerator picks kvm for a local hypervisor whose /dev/kvm opens,
// tcg otherwise, and then returns why /dev/kvm did not open. (A remote
// host's KVM cannot be probed from here: set accelerator there.)
func defaultAccelerator(uri string) (accelerator string, kvmErr error) {
	u, err := url.Parse(uri)
	if err != nil || u.Host != "" {
		return "kvm", nil
	}
	if err := openKVM(); err != nil {
		return "tcg", err
	}
	return "kvm", nil
}

// tcgFallbackWarning is what the build says when accelerator was left
// unset and /dev/kvm did not open (kvmErr): the build still runs, under
// TCG, many times slower, and without the warning the only sign would be
// "tcg" in the line that defines the domain.
func tcgFallbackWarning(kvmErr error) string {
	const head = "Warning: %s did not open (%v), so this build runs under QEMU's TCG, which emulates the CPU in software and is many times slower than KVM. "
	const quiet = " To build under TCG on purpose, set accelerator = \"tcg\" and this warning goes away."
	var fix string
	switch {
	case errors.Is(kvmErr, fs.ErrNotExist):
		fix = "This host has no KVM: load the kvm_intel or kvm_amd module, and enable virtualization in the firmware (on a VM: nested virtualization)."
	default:
		name := "$USER"
		if u, err := user.Current(); err == nil {
			name = u.Username
		}
		fix = fmt.Sprintf("Add the build user to the kvm group (sudo usermod -aG kvm %s, then log in again) and make %s group kvm, mode 0660 (sudo chgrp kvm %s && sudo chmod 0660 %s).", name, kvmDevice, kvmDevice, kvmDevice)
	}
	return fmt.Sprintf(head, kvmDevice, kvmErr) + fix + quiet
}
