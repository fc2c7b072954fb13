// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package windows

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/units"
)

// The access control lists the bake sets: each folder it locks and the
// registry key holding the proxy's credentials, with the entries each
// gets. Every step that sets an ACL takes it from here; the guest
// functions that set and check them are in scripts/common.

// Well-known SIDs, independent of the system's language.
const (
	sidSystem         = "S-1-5-18"
	sidAdministrators = "S-1-5-32-544"
	sidUsers          = "S-1-5-32-545"
	// sidCreatorOwner stands, in an inheritable entry, for whoever
	// creates the file or folder that inherits it.
	sidCreatorOwner = "S-1-3-0"
)

// Access rights (winnt.h), as an ACE's mask holds them.
const (
	fileFullControl = 0x1F01FF // FILE_ALL_ACCESS: icacls F
	fileReadExecute = 0x1200A9 // read, run, list: icacls RX
	// fileAddFile and fileAddSubdirectory, on a folder, let one create a
	// file in it (icacls WD) and a folder in it (icacls AD).
	fileAddFile         = 0x2
	fileAddSubdirectory = 0x4
	keyAllAccess        = 0xF003F // KEY_ALL_ACCESS
)

// aceFlags are an ACE's inheritance flags in SDDL's spelling: OI (files
// below inherit it), CI (folders or keys below inherit it), IO (it applies
// only to what inherits it, not to where it is set).
type aceFlags string

// ace is an allow entry of an ACL the bake sets.
type ace struct {
	SID    string
	Rights uint32
	Flags  aceFlags
}

// acl is a protected ACL (nothing inherited from above) and what it
// means, in words for the scripts' output.
type acl struct {
	Says    string
	Entries []ace
}

// SDDL is the ACL as a security descriptor's DACL in SDDL: protected
// (P), auto-inherited (AI), one allow entry (A) per entry.
func (a acl) SDDL() string {
	var b strings.Builder
	b.WriteString("D:PAI")
	for _, e := range a.Entries {
		fmt.Fprintf(&b, "(A;%s;0x%x;;;%s)", e.Flags, e.Rights, e.SID)
	}
	return b.String()
}

var (
	// aclPrivate: SYSTEM and Administrators only.
	aclPrivate = acl{
		Says: "is readable and writable by SYSTEM and Administrators only",
		Entries: []ace{
			{sidSystem, fileFullControl, "OICI"},
			{sidAdministrators, fileFullControl, "OICI"},
		},
	}
	// aclUsersRead: SYSTEM and Administrators write, Users read and run.
	aclUsersRead = acl{
		Says:    "is writable by SYSTEM and Administrators only, readable by Users",
		Entries: slices.Concat(aclPrivate.Entries, []ace{{sidUsers, fileReadExecute, "OICI"}}),
	}
	// aclPodVolumes is what a Pod's folders inherit: what Windows Server
	// gives every folder below C:\ (Users create files and folders in it,
	// and whoever creates one has full control of it: icacls C:\ shows
	// Users (CI)(AD), Users (CI)(IO)(WD), CREATOR OWNER (OI)(CI)(IO)(F);
	// moby/buildkit#4731), here from the Pods' folder down and not in
	// that folder itself. A container's user, ContainerUser by default in
	// nanoserver, is a member of Users: without this it cannot write its
	// emptyDir, which the kubelet creates with os.MkdirAll, whose mode
	// Windows ignores (kubernetes/kubernetes#75049).
	aclPodVolumes = acl{
		Says: "is writable by SYSTEM and Administrators only; below it, in the folders of each Pod, Users create files and folders and own what they create",
		Entries: slices.Concat(aclUsersRead.Entries, []ace{
			{sidUsers, fileAddFile | fileAddSubdirectory, "CIIO"},
			{sidCreatorOwner, fileFullControl, "OICIIO"},
		}),
	}
	// aclKeyPrivate: a registry key only SYSTEM and Administrators read.
	aclKeyPrivate = acl{
		Says: "is readable by SYSTEM and Administrators only",
		Entries: []ace{
			{sidSystem, keyAllAccess, "CI"},
			{sidAdministrators, keyAllAccess, "CI"},
		},
	}
)

// Folders of the kubelet's root directory (--root-dir) that the table
// names.
const (
	kubeletRootDir = `C:\var\lib\kubelet`
	// kubeletPKIDir holds the kubelet's client and serving keys
	// (--cert-dir).
	kubeletPKIDir = kubeletRootDir + `\pki`
	// kubeletPodsDir holds each Pod's folder, and in it its volumes.
	kubeletPodsDir = kubeletRootDir + `\pods`
)

// lockedDir is a folder and the ACL it gets.
type lockedDir struct {
	Path string
	ACL  acl
}

// lockedDirs are the folders the bake locks, parents before the folders
// below them: a folder a user can write that holds what SYSTEM runs is a
// path to SYSTEM (aks-engine #4633 closed c:\k for that reason).
func (p Plan) lockedDirs() []lockedDir {
	dirs := []lockedDir{
		{units.WindowsKubeDir, aclUsersRead},
		{containerdDir, aclUsersRead},
		{cniBinDir, aclUsersRead},
		{cniConfDir, aclUsersRead},
		{`C:\etc\kubernetes`, aclPrivate},
		// Containers read their volumes; what the kubelet keeps here
		// itself (plugins, device-plugins, its state) stays SYSTEM's and
		// Administrators' to write.
		{kubeletRootDir, aclUsersRead},
		{kubeletPKIDir, aclPrivate},
		{kubeletPodsDir, aclPodVolumes},
		{`C:\var\log\kubelet`, aclPrivate},
	}
	if p.InstallJoiner {
		dirs = append(dirs, joinerDirLock)
	}
	if p.ClusterAPI {
		// Cluster API's bootstrap marks its success here as SYSTEM; nobody
		// else may fake it.
		dirs = append(dirs, lockedDir{ClusterAPISentinelDir, aclUsersRead})
	}
	return dirs
}

// joinerDirLock: the joiner keeps the join token in its folder while it
// joins. The joiner's step locks it before it writes the configuration.
var joinerDirLock = lockedDir{joinerDir, aclPrivate}

// containerdServiceKey is containerd's service key, whose Environment
// value holds the proxy's credentials; a service's key is readable by
// Users otherwise. The containerd step locks it before it writes them.
const containerdServiceKey = `SYSTEM\CurrentControlSet\Services\` + units.ContainerdServiceName

// dirACLCall is one Set-KubenodeDirectoryAcl call: Skip are the locked
// folders below Path, which have ACLs of their own.
type dirACLCall struct {
	Path, SDDL, Says string
	Skip             []string
}

// keyACLCall is one Set-KubenodeMachineKeyAcl call, Key under HKLM.
type keyACLCall struct {
	Key, SDDL, Says string
}

func newDirACLCall(d lockedDir, all []lockedDir) dirACLCall {
	c := dirACLCall{Path: d.Path, SDDL: d.ACL.SDDL(), Says: d.ACL.Says, Skip: []string{}}
	for _, o := range all {
		if len(o.Path) > len(d.Path) && strings.EqualFold(o.Path[:len(d.Path)+1], d.Path+`\`) {
			c.Skip = append(c.Skip, o.Path)
		}
	}
	return c
}

func newKeyACLCall(key string, a acl) keyACLCall {
	return keyACLCall{Key: key, SDDL: a.SDDL(), Says: a.Says}
}

// permissionsInput is what permissions.ps1.tmpl prints.
type permissionsInput struct {
	Dirs []dirACLCall
}

// permissions sets each lockedDirs folder's ACL, and resets what is
// below it to inherit that ACL.
func permissions(p Plan) []byte {
	var in permissionsInput
	dirs := p.lockedDirs()
	for _, d := range dirs {
		in.Dirs = append(in.Dirs, newDirACLCall(d, dirs))
	}
	return templates.Render("permissions.ps1.tmpl", in)
}
