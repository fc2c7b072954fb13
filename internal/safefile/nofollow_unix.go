// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build unix

package safefile

import (
	"io/fs"
	"syscall"
)

const (
	// noFollow makes opening a link fail instead of opening its target.
	noFollow = syscall.O_NOFOLLOW
	// noBlock makes opening a FIFO for writing fail at once instead of
	// waiting for a reader; a regular file ignores it.
	noBlock = syscall.O_NONBLOCK
)

// linkCount is how many names the file has.
func linkCount(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}
