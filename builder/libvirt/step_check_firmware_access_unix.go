// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build !windows

package libvirt

import (
	"fmt"
	"os"
	"os/user"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// canSearch: root may enter every directory; another user needs execute
// (search) permission, as the kernel decides it.
func canSearch(dir string) error {
	if os.Geteuid() == 0 {
		return nil
	}
	return unix.Access(dir, unix.X_OK)
}

// describeDir is " (mode 0750, owner libvirt-qemu)", or "" when dir
// cannot be stat'ed.
func describeDir(dir string) string {
	fi, err := os.Stat(dir)
	if err != nil {
		return ""
	}
	owner := ""
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		owner = strconv.FormatUint(uint64(st.Uid), 10)
		if u, err := user.LookupId(owner); err == nil {
			owner = u.Username
		}
		owner = ", owner " + owner
	}
	return fmt.Sprintf(" (mode %04o%s)", fi.Mode().Perm(), owner)
}
