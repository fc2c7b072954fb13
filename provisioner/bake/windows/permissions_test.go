// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package windows

import (
	"bytes"
	"context"
	"strings"
	"testing"

	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/guesttest"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/node"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/remote"
)

// changes are the lines of out that say the double changed something
// itself, not the double's own "changed: did <step>".
func changes(out string) []string {
	var lines []string
	for _, l := range strings.Split(out, "\r\n") {
		if strings.HasPrefix(l, "changed: ") && !strings.HasPrefix(l, "changed: did ") {
			lines = append(lines, l)
		}
	}
	return lines
}

// playStep runs one step's script of p on the guest double, as the flow
// does, and returns what it printed.
func playStep(t *testing.T, g *guesttest.Windows, p Plan, step string) string {
	t.Helper()
	file := `C:\Windows\Temp\kubenode\01-` + step + `.ps1`
	require.NoError(t, g.Upload(remote.UploadPath(file), strings.NewReader(stepScript(t, p, step)), nil))
	var out bytes.Buffer
	cmd := &packersdk.RemoteCmd{Command: powershellFile(file), Stdout: &out}
	require.NoError(t, g.Start(context.Background(), cmd))
	require.Zero(t, cmd.Wait(), out.String())
	return out.String()
}

const (
	podDir   = `C:\var\lib\kubelet\pods\6f1c1c4e-4c1e-4f7a-9d51-0c1f7d2b8a10`
	emptyDir = podDir + `\volumes\kubernetes.io~empty-dir\cache`
	create   = guesttest.FileWriteData | guesttest.FileAddSubdirectory
)

// The kubelet creates each Pod's folders and emptyDir volumes with
// os.MkdirAll, whose mode Windows ignores: they inherit. After the bake, a
// container running as ContainerUser (a member of Users) creates files
// and folders in its emptyDir and writes what it created, as on a Windows
// Server whose C:\ ACL nobody changed; it reads but cannot change what the
// kubelet wrote; the kubelet's own folders and keys stay SYSTEM's and
// Administrators' to write.
func TestPodVolumesWritableByContainerUser(t *testing.T) {
	fresh := guesttest.NewWindows()
	require.Equal(t, uint32(create), fresh.Granted(emptyDir, true, guesttest.SIDAdministrators, create, guesttest.ContainerUser...),
		"on a fresh Windows Server a folder below C:\\ lets Users create in it")

	g := guesttest.NewWindows()
	p := basePlan(t)
	require.NoError(t, runErr(g, guesttest.NewUI(), p, realUploads(t, p)))

	cu := guesttest.ContainerUser
	assert.Equal(t, uint32(create), g.Granted(emptyDir, true, guesttest.SIDAdministrators, create, cu...), "ContainerUser creates files and folders in its emptyDir")
	assert.Equal(t, uint32(guesttest.FileWriteData), g.Granted(emptyDir+`\app.log`, false, guesttest.SIDContainerUser, guesttest.FileWriteData, cu...), "and writes the file it created")
	assert.Equal(t, uint32(create), g.Granted(emptyDir+`\sub`, true, guesttest.SIDContainerUser, create, cu...), "and creates in the folder it created")
	kubeletFile := podDir + `\volumes\kubernetes.io~configmap\config\..data\settings.json`
	assert.Equal(t, uint32(guesttest.FileReadData), g.Granted(kubeletFile, false, guesttest.SIDAdministrators, guesttest.FileReadData|guesttest.FileWriteData, cu...),
		"a file the kubelet wrote is read, not changed")
	assert.Zero(t, g.Granted(kubeletPodsDir, true, guesttest.SIDAdministrators, create, cu...), "no Pod folder is made by Users")
	for _, dir := range []string{kubeletRootDir, kubeletPKIDir, kubeletRootDir + `\plugins`, kubeletRootDir + `\device-plugins`, kubeletRootDir + `\plugins_registry`} {
		assert.Zero(t, g.Granted(dir, true, guesttest.SIDAdministrators, create, cu...), dir)
		assert.Zero(t, g.Granted(dir+`\kubelet_internal_checkpoint`, false, guesttest.SIDAdministrators, guesttest.FileWriteData, cu...), dir)
		assert.Equal(t, uint32(create), g.Granted(dir, true, guesttest.SIDAdministrators, create, guesttest.SIDSystem), dir)
	}
	assert.Zero(t, g.Granted(kubeletPKIDir+`\kubelet-client-current.pem`, false, guesttest.SIDAdministrators, guesttest.FileReadData, cu...), "the node's keys are private")
}

// The permissions step compares what each entry grants, not only who has
// one: a folder locked before with the right SIDs but Modify for Users is
// found wrong and fixed, and a second run finds everything right.
func TestPermissionsCheckComparesRights(t *testing.T) {
	g := guesttest.NewWindows()
	g.SetACL(`C:\k`, guesttest.ParseSDDL("D:PAI(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)(A;OICI;0x1301bf;;;BU)"))
	p := basePlan(t)
	require.Equal(t, uint32(guesttest.FileWriteData), g.Granted(`C:\k\kubelet.exe`, false, guesttest.SIDAdministrators, guesttest.FileWriteData, guesttest.SIDUsers))

	out := playStep(t, g, p, stepPermissions)
	assert.Contains(t, out, "changed: C:\\k is writable by SYSTEM and Administrators only, readable by Users\r\n")
	assert.Zero(t, g.Granted(`C:\k\kubelet.exe`, false, guesttest.SIDAdministrators, guesttest.FileWriteData, guesttest.SIDUsers), "Users no longer change what SYSTEM runs")
	assert.Zero(t, g.Granted(`C:\k`, true, guesttest.SIDAdministrators, create, guesttest.SIDUsers))
	assert.Equal(t, uint32(guesttest.FileReadData), g.Granted(`C:\k\kubelet.exe`, false, guesttest.SIDAdministrators, guesttest.FileReadData, guesttest.SIDUsers))

	// Unprotected, with exactly the wanted entries of its own: it would
	// also inherit from C:\, so it is wrong too.
	g.SetACL(`C:\etc\kubernetes`, guesttest.ParseSDDL("D:AI(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)"))
	out = playStep(t, g, p, stepPermissions)
	assert.Contains(t, out, "changed: C:\\etc\\kubernetes ")
	assert.NotContains(t, out, "changed: C:\\k ", "the second run finds C:\\k right")
	assert.Zero(t, g.Granted(`C:\etc\kubernetes\admin.conf`, false, guesttest.SIDAdministrators, guesttest.FileReadData, guesttest.SIDUsers))

	out = playStep(t, g, p, stepPermissions)
	assert.Empty(t, changes(out), "a third run changes nothing")
	for _, d := range p.lockedDirs() {
		assert.Contains(t, out, "ok: "+d.Path+" "+d.ACL.Says+"\r\n")
	}
}

// What is below a locked folder takes its ACL from it: an entry of its
// own, a protected ACL, or an inherited entry a moved file brought along
// is reset; the folders the table locks themselves, and links (what the
// kubelet mounts a volume through), are left alone.
func TestPermissionsResetWhatIsBelow(t *testing.T) {
	g := guesttest.NewWindows()
	p := basePlan(t)
	playStep(t, g, p, stepPermissions)

	g.SetACL(`C:\k\kubelet.exe`, guesttest.ParseSDDL("D:AI(A;;0x1301bf;;;BU)"))
	g.SetACL(`C:\var\lib\kubelet\plugins`, guesttest.ParseSDDL("D:PAI(A;OICI;FA;;;WD)"))
	// Moved from a user's Downloads: it keeps what it inherited there.
	g.SetACL(`C:\etc\kubernetes\bootstrap-kubelet.conf`, guesttest.ParseSDDL("D:AI(A;ID;FA;;;S-1-5-21-1-2-3-1001)(A;ID;FA;;;SY)"))
	// Where the kubelet mounts a volume: a link, with the volume's ACL.
	volume := podDir + `\volumes\kubernetes.io~csi\pv-1\mount`
	g.AddLink(volume)
	g.SetACL(volume, guesttest.ParseSDDL("D:PAI(A;OICI;FA;;;WD)"))
	require.NotZero(t, g.Granted(`C:\k\kubelet.exe`, false, guesttest.SIDAdministrators, guesttest.FileWriteData, guesttest.SIDUsers))

	out := playStep(t, g, p, stepPermissions)
	assert.ElementsMatch(t, []string{
		`changed: C:\k\kubelet.exe takes its ACL from C:\k`,
		`changed: C:\var\lib\kubelet\plugins takes its ACL from C:\var\lib\kubelet`,
		`changed: C:\etc\kubernetes\bootstrap-kubelet.conf takes its ACL from C:\etc\kubernetes`,
	}, changes(out), "only what is wrong below is reset; a link, and the locked folders below another, are not")
	assert.Zero(t, g.Granted(`C:\k\kubelet.exe`, false, guesttest.SIDAdministrators, guesttest.FileWriteData, guesttest.SIDUsers))
	assert.Zero(t, g.Granted(`C:\var\lib\kubelet\plugins\csi.sock`, false, guesttest.SIDAdministrators, guesttest.FileWriteData, guesttest.SIDEveryone))
	assert.Zero(t, g.Granted(`C:\etc\kubernetes\bootstrap-kubelet.conf`, false, guesttest.SIDAdministrators, guesttest.FileReadData, "S-1-5-21-1-2-3-1001", guesttest.SIDUsers))
	assert.NotNil(t, g.ACLOf(volume), "a link is not changed")

	assert.Empty(t, changes(playStep(t, g, p, stepPermissions)), "a second run changes nothing")
}

// The proxy's credentials, in containerd's service environment, are
// readable by SYSTEM and Administrators only, as the Linux drop-in is
// mode 0600: the key is locked before they are written.
func TestProxyCredentialsReadableBySystemAndAdministratorsOnly(t *testing.T) {
	const key = `HKLM:\` + containerdServiceKey
	fresh := guesttest.NewWindows()
	require.NotZero(t, fresh.Granted(key, true, guesttest.SIDAdministrators, guesttest.KeyQueryValue, guesttest.SIDUsers), "a service's key is readable by Users")

	g := guesttest.NewWindows()
	p := basePlan(t)
	p.Proxy = node.Proxy{HTTPS: "http://user:secret@proxy.example:3128"}
	require.NoError(t, runErr(g, guesttest.NewUI(), p, realUploads(t, p)))
	assert.Zero(t, g.Granted(key, true, guesttest.SIDAdministrators, guesttest.KeyQueryValue, guesttest.ContainerUser...))
	assert.Zero(t, g.Granted(key, true, guesttest.SIDAdministrators, guesttest.KeyQueryValue, guesttest.SIDUsers, guesttest.SIDAuthenticated, guesttest.SIDEveryone))
	for _, sid := range []string{guesttest.SIDSystem, guesttest.SIDAdministrators} {
		assert.NotZero(t, g.Granted(key, true, guesttest.SIDAdministrators, guesttest.KeyQueryValue, sid), sid)
	}

	script := stepScript(t, p, stepContainerd)
	lock := strings.Index(script, "Set-KubenodeMachineKeyAcl -Key '"+containerdServiceKey+"'")
	require.Positive(t, lock)
	assert.Less(t, lock, strings.Index(script, "-Name 'Environment' -PropertyType MultiString"), "locked before the credentials are written")
	assert.Greater(t, lock, strings.Index(script, "'--register-service'"), "the service's key exists")
}

// Every folder of what runs as SYSTEM is locked with SYSTEM and
// Administrators the only writers, parents before the folders below
// them; only the Pods' folder lets Users create anything, below itself.
func TestWindowsPermissionsCoverEveryFolder(t *testing.T) {
	p := basePlan(t)
	script := stepScript(t, p, stepPermissions)
	var paths []string
	for i, d := range p.lockedDirs() {
		paths = append(paths, d.Path)
		call := "Set-KubenodeDirectoryAcl -Path '" + d.Path + "' -Sddl '" + d.ACL.SDDL() + "'"
		assert.Contains(t, script, call, d.Path)
		for _, parent := range p.lockedDirs()[i+1:] {
			assert.False(t, strings.HasPrefix(d.Path, parent.Path+`\`), "%s is locked after %s, below it", parent.Path, d.Path)
		}
		for _, e := range d.ACL.Entries {
			switch {
			case e.SID == sidSystem || e.SID == sidAdministrators:
			case e.Rights&^fileReadExecute == 0:
			default:
				// Creating, and owning what one created, only below the Pods' folder.
				assert.Equal(t, kubeletPodsDir, d.Path, "%s: %s gets %#x", d.Path, e.SID, e.Rights)
				assert.Contains(t, string(e.Flags), "IO", "not in the Pods' folder itself")
				assert.True(t, e.SID == sidCreatorOwner || e.Rights&^(fileAddFile|fileAddSubdirectory) == 0, "%s gets %#x", e.SID, e.Rights)
			}
		}
	}
	for _, want := range []string{`C:\k`, `C:\opt\cni\bin`, `C:\etc\cni\net.d`, `C:\etc\kubernetes`, kubeletRootDir, kubeletPKIDir, kubeletPodsDir, `C:\var\log\kubelet`, `C:\ProgramData\kubenode`, `C:\Program Files\containerd`} {
		assert.Contains(t, paths, want)
	}
	assert.Contains(t, script, "-Skip @('"+kubeletPKIDir+"', '"+kubeletPodsDir+"')")

	p.InstallJoiner = false
	assert.NotContains(t, p.lockedDirs(), joinerDirLock)
}

// The joiner's folder gets its ACL from the same table in the joiner's
// step, before the step writes the configuration.
func TestJoinerFolderUsesTheTable(t *testing.T) {
	p := basePlan(t)
	script := stepScript(t, p, stepJoiner)
	call := "Set-KubenodeDirectoryAcl -Path '" + joinerDir + "' -Sddl '" + aclPrivate.SDDL() + "'"
	assert.Contains(t, script, call)
	assert.Less(t, strings.Index(script, call), strings.Index(script, "Set-KubenodeFile -Path '"+joinerConf+"'"))
	assert.NotContains(t, script, "/grant", "no ACL of its own")
	assert.Contains(t, p.lockedDirs(), joinerDirLock)
}

func TestACLSDDL(t *testing.T) {
	assert.Equal(t, "D:PAI(A;OICI;0x1f01ff;;;S-1-5-18)(A;OICI;0x1f01ff;;;S-1-5-32-544)", aclPrivate.SDDL())
	assert.Equal(t, guesttest.ParseSDDL("D:PAI(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)(A;OICI;0x1200a9;;;BU)(A;CIIO;0x6;;;BU)(A;OICIIO;FA;;;CO)"),
		guesttest.ParseSDDL(aclPodVolumes.SDDL()))
}
