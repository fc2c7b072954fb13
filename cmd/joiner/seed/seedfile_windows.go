// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build windows

package seed

import (
	"fmt"
	"os"

	"golang.org/x/sys/windows"
)

// trustedInstaller is NT SERVICE\TrustedInstaller, which owns files that
// Windows setup and servicing write.
const trustedInstaller = "S-1-5-80-956008885-3418522649-1831038044-1853292631-2271478464"

// trustedOwner reads the owner of the opened file (not of the path, which
// could name another file by now).
func trustedOwner(f *os.File, _ os.FileInfo) (string, bool, error) {
	sd, err := windows.GetSecurityInfo(windows.Handle(f.Fd()), windows.SE_FILE_OBJECT, windows.OWNER_SECURITY_INFORMATION)
	if err != nil {
		return "", false, err
	}
	owner, _, err := sd.Owner()
	if err != nil {
		return "", false, err
	}
	who := owner.String()
	if account, domain, _, err := owner.LookupAccount(""); err == nil {
		who = domain + `\` + account + " (" + who + ")"
	}
	trusted := owner.IsWellKnown(windows.WinLocalSystemSid) || owner.IsWellKnown(windows.WinBuiltinAdministratorsSid) ||
		owner.String() == trustedInstaller
	return who, trusted, nil
}

// checkMode has nothing to check: Windows' mode bits say only whether the
// file is read-only. Who may write or read the seed file is decided by the
// ACL of its directory, C:\ProgramData\kubenode, which the bake limits to
// SYSTEM and Administrators (inherited by the files made in it).
func checkMode(string, os.FileInfo) (string, error) { return "", nil }

func notRegular(m os.FileMode) string {
	switch {
	case m&os.ModeSymlink != 0:
		return "a symbolic link or junction"
	case m.IsDir():
		return "a directory"
	}
	return "a reparse point or special file (" + m.String() + ")"
}

func fixSeedFile(path string) string {
	return fmt.Sprintf("the joiner reads only a regular file (no symbolic link or other reparse point) owned by SYSTEM or Administrators: write it as an administrator, or fix it with `icacls %s /setowner *S-1-5-32-544`", path)
}
