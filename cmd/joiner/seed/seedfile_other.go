// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build !windows

package seed

import (
	"fmt"
	"os"
	"syscall"
)

func trustedOwner(_ *os.File, fi os.FileInfo) (string, bool, error) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "", false, fmt.Errorf("no owner in %T", fi.Sys())
	}
	return fmt.Sprintf("uid %d", st.Uid), st.Uid == 0, nil
}

// checkMode refuses a seed file others may write and warns when others
// may read it: it holds a bootstrap token.
func checkMode(path string, fi os.FileInfo) (warning string, err error) {
	mode := fi.Mode().Perm()
	if mode&0o022 != 0 {
		return "", fmt.Errorf("%w: %s has mode %#o (%s): its group or everyone may write it; %s", ErrUnsafeFile, path, mode, fi.Mode(), fixSeedFile(path))
	}
	if mode&0o044 != 0 {
		return fmt.Sprintf("WARNING: the join seed file %s has mode %#o (%s): its group or everyone may read the bootstrap token it holds; write it with mode 0600 (chmod 0600 %s)", path, mode, fi.Mode(), path), nil
	}
	return "", nil
}

func notRegular(m os.FileMode) string {
	switch {
	case m&os.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsDir():
		return "a directory"
	}
	return "a special file (" + m.String() + ")"
}

func fixSeedFile(path string) string {
	return fmt.Sprintf("the joiner reads only a regular file that root owns and only root may write: write it as root, or fix it with `chown root:root %s && chmod 0600 %s`", path, path)
}
