// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build !unix

package safefile

import "io/fs"

// noFollow and noBlock are 0 where open has no such flags; O_EXCL still
// refuses an existing name, a link included.
const noFollow, noBlock = 0, 0

// linkCount is 1: the system does not say.
func linkCount(fs.FileInfo) uint64 { return 1 }
