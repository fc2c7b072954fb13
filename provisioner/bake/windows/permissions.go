package windows

import (
	"github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/units"
)

// windowsLockedDir is a folder holding what runs as LocalSystem (binaries,
// configuration, credentials): inheritance removed, SYSTEM and
// Administrators full control; UsersRead lets Users read and run it.
type windowsLockedDir struct {
	Path      string
	UsersRead bool
}

// windowsKubeletPKIDir holds the kubelet's client and serving keys
// (--cert-dir).
const windowsKubeletPKIDir = `C:\var\lib\kubelet\pki`

// Well-known SIDs, independent of the system's language.
const (
	sidSystem         = "S-1-5-18"
	sidAdministrators = "S-1-5-32-544"
	sidUsers          = "S-1-5-32-545"
)

// windowsLockedDirs are the folders the permissions step locks: a folder a
// user can write that holds what SYSTEM runs is a path to SYSTEM
// (aks-engine #4633 closed c:\k for that reason).
func (p Plan) windowsLockedDirs() []windowsLockedDir {
	dirs := []windowsLockedDir{
		{units.WindowsKubeDir, true},
		{windowsContainerdDir, true},
		{windowsCNIBinDir, true},
		{windowsCNIConfDir, true},
		{`C:\etc\kubernetes`, false},
		// Every Pod volume lives under C:\var\lib\kubelet and inherits its
		// ACL: a container running as ContainerUser must read it, so Users
		// read and run there; the node's credentials in pki stay private.
		{`C:\var\lib\kubelet`, true},
		{windowsKubeletPKIDir, false},
		{`C:\var\log\kubelet`, false},
	}
	if p.InstallJoiner {
		dirs = append(dirs, windowsLockedDir{windowsJoinerDir, false})
	}
	if p.ClusterAPI {
		// Cluster API's bootstrap marks its success here as SYSTEM; nobody
		// else may fake it.
		dirs = append(dirs, windowsLockedDir{ClusterAPISentinelDir, true})
	}
	return dirs
}

// windowsPermissionsInput is what permissions.ps1.tmpl prints.
type windowsPermissionsInput struct {
	Dirs []windowsLockedGrants
}

// windowsLockedGrants are the icacls grants of a locked folder.
type windowsLockedGrants struct {
	Path   string
	Grants []string
}

// windowsPermissions locks windowsLockedDirs: inheritance removed, SYSTEM
// and Administrators full control, Users read and run where UsersRead.
func windowsPermissions(p Plan) []byte {
	var in windowsPermissionsInput
	for _, d := range p.windowsLockedDirs() {
		grants := []string{"*" + sidSystem + ":(OI)(CI)F", "*" + sidAdministrators + ":(OI)(CI)F"}
		if d.UsersRead {
			grants = append(grants, "*"+sidUsers+":(OI)(CI)RX")
		}
		in.Dirs = append(in.Dirs, windowsLockedGrants{Path: d.Path, Grants: grants})
	}
	return templates.Render("permissions.ps1.tmpl", in)
}
