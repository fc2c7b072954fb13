package windows

import (
	"github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/units"
)

// lockedDir is a folder holding what runs as LocalSystem (binaries,
// configuration, credentials): inheritance removed, SYSTEM and
// Administrators full control; UsersRead lets Users read and run it.
type lockedDir struct {
	Path      string
	UsersRead bool
}

// kubeletPKIDir holds the kubelet's client and serving keys
// (--cert-dir).
const kubeletPKIDir = `C:\var\lib\kubelet\pki`

// Well-known SIDs, independent of the system's language.
const (
	sidSystem         = "S-1-5-18"
	sidAdministrators = "S-1-5-32-544"
	sidUsers          = "S-1-5-32-545"
)

// lockedDirs are the folders the permissions step locks: a folder a
// user can write that holds what SYSTEM runs is a path to SYSTEM
// (aks-engine #4633 closed c:\k for that reason).
func (p Plan) lockedDirs() []lockedDir {
	dirs := []lockedDir{
		{units.WindowsKubeDir, true},
		{containerdDir, true},
		{cniBinDir, true},
		{cniConfDir, true},
		{`C:\etc\kubernetes`, false},
		// Every Pod volume lives under C:\var\lib\kubelet and inherits its
		// ACL: a container running as ContainerUser must read it, so Users
		// read and run there; the node's credentials in pki stay private.
		{`C:\var\lib\kubelet`, true},
		{kubeletPKIDir, false},
		{`C:\var\log\kubelet`, false},
	}
	if p.InstallJoiner {
		dirs = append(dirs, lockedDir{joinerDir, false})
	}
	if p.ClusterAPI {
		// Cluster API's bootstrap marks its success here as SYSTEM; nobody
		// else may fake it.
		dirs = append(dirs, lockedDir{ClusterAPISentinelDir, true})
	}
	return dirs
}

// permissionsInput is what permissions.ps1.tmpl prints.
type permissionsInput struct {
	Dirs []lockedGrants
}

// lockedGrants are the icacls grants of a locked folder.
type lockedGrants struct {
	Path   string
	Grants []string
}

// permissions locks lockedDirs: inheritance removed, SYSTEM
// and Administrators full control, Users read and run where UsersRead.
func permissions(p Plan) []byte {
	var in permissionsInput
	for _, d := range p.lockedDirs() {
		grants := []string{"*" + sidSystem + ":(OI)(CI)F", "*" + sidAdministrators + ":(OI)(CI)F"}
		if d.UsersRead {
			grants = append(grants, "*"+sidUsers+":(OI)(CI)RX")
		}
		in.Dirs = append(in.Dirs, lockedGrants{Path: d.Path, Grants: grants})
	}
	return templates.Render("permissions.ps1.tmpl", in)
}
