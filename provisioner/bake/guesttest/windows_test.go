// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package guesttest

import (
	"bytes"
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"unicode/utf16"

	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func encoded(script string) string {
	var b []byte
	for _, c := range utf16.Encode([]rune(script)) {
		b = append(b, byte(c), byte(c>>8))
	}
	return "powershell.exe -NoProfile -EncodedCommand " + base64.StdEncoding.EncodeToString(b)
}

func run(t *testing.T, g *Windows, command string) (string, int) {
	t.Helper()
	var out bytes.Buffer
	cmd := &packersdk.RemoteCmd{Command: command, Stdout: &out}
	require.NoError(t, g.Start(context.Background(), cmd))
	code := cmd.Wait()
	return out.String(), code
}

// The double knows a step by its script's name, whatever the script says,
// and a query by the name on its first line.
func TestWindowsKnowsStepsAndQueriesByName(t *testing.T) {
	g := NewWindows()
	g.Build = "20348"
	require.NoError(t, g.Upload("C:/Windows/Temp/kubenode/06-kubelet.ps1", strings.NewReader("# anything at all\r\n"), nil))
	out, code := run(t, g, `powershell.exe -File "C:\Windows\Temp\kubenode\06-kubelet.ps1"`)
	assert.Equal(t, 0, code)
	assert.Equal(t, "changed: did kubelet\r\n", out)

	out, code = run(t, g, encoded("# kubenode-bake query: windows-build\nGet-Anything"))
	assert.Equal(t, 0, code)
	assert.Equal(t, "20348\r\n", out)
	out, _ = run(t, g, encoded("# kubenode-bake query: boot-check\nGet-Anything"))
	assert.Contains(t, out, "kubenode-boot: ")
	assert.Equal(t, []string{"upload C:/Windows/Temp/kubenode/06-kubelet.ps1", "kubelet", "boot-check"}, g.Log)
}

// A step or a query the double does not know fails the test loudly
// instead of being answered like another.
func TestWindowsRefusesUnknownStepsAndQueries(t *testing.T) {
	g := NewWindows()
	require.NoError(t, g.Upload("C:/Windows/Temp/kubenode/05-unheard-of.ps1", strings.NewReader("# kubenode-bake: kubelet\r\n"), nil))
	assert.PanicsWithValue(t, `guesttest: the Windows double knows no step "unheard-of" (script C:\Windows\Temp\kubenode\05-unheard-of.ps1): add it to windowsSteps with what the guest does`, func() {
		_ = g.Start(context.Background(), &packersdk.RemoteCmd{Command: `powershell.exe -File "C:\Windows\Temp\kubenode\05-unheard-of.ps1"`})
	})
	assert.Panics(t, func() {
		_ = g.Start(context.Background(), &packersdk.RemoteCmd{Command: encoded("# kubenode-bake query: unheard-of\n'kubenode-os: '")})
	})
	for _, unnamed := range []string{
		"(Get-CimInstance -ClassName Win32_OperatingSystem).BuildNumber",
		"New-Item -ItemType Directory -Force -Path @('C:\\Windows\\Setup\\Scripts') | Out-Null",
	} {
		assert.Panics(t, func() {
			_ = NewWindows().Start(context.Background(), &packersdk.RemoteCmd{Command: encoded(unnamed)})
		}, unnamed)
	}
}

// The sysprep step's preparation makes its folders and sets aside a
// SetupComplete.cmd that is not kubenode's.
func TestWindowsPlaysFirstBootPrepare(t *testing.T) {
	g := NewWindows()
	require.NoError(t, g.Upload("C:/Windows/Setup/Scripts/SetupComplete.cmd", strings.NewReader("@echo off\r\n"), nil))
	script := "# kubenode-bake query: first-boot-prepare\n" +
		"New-Item -ItemType Directory -Force -Path @('C:\\Windows\\Setup\\Scripts', 'C:\\Windows\\Panther\\kubenode') | Out-Null\n" +
		"$setup = 'C:\\Windows\\Setup\\Scripts\\SetupComplete.cmd'\n" +
		"$before = 'C:\\Windows\\Setup\\Scripts\\SetupComplete.before.cmd'\n" +
		"if ((Test-Path -LiteralPath $setup) -and -not (Select-String -LiteralPath $setup -SimpleMatch -Quiet -Pattern 'rem kubenode')) {\n" +
		"    Move-Item -LiteralPath $setup -Destination $before\n" +
		"}\n"
	out, code := run(t, g, encoded(script))
	assert.Equal(t, 0, code, out)
	assert.True(t, g.Dirs["c:/windows/panther/kubenode"])
	assert.Contains(t, g.Files, "C:/Windows/Setup/Scripts/SetupComplete.before.cmd")
	assert.NotContains(t, g.Files, "C:/Windows/Setup/Scripts/SetupComplete.cmd")
	assert.Equal(t, "mkdir", g.Log[len(g.Log)-1])
}

// The double's ACL model hands entries down as Windows does: OI to files,
// CI to folders, IO only below, NP one level; CREATOR OWNER reaches the
// owner; a deny entry wins over an allow entry; a protected ACL takes
// nothing from above. What it cannot read, it refuses.
func TestWindowsACLModel(t *testing.T) {
	g := NewWindows()
	g.SetACL(`C:\top`, ParseSDDL("D:PAI(A;OICI;FA;;;SY)(A;CINP;0x4;;;BU)(A;OIIO;0x2;;;BU)(A;OICIIO;FA;;;CO)(D;OICI;0x2;;;S-1-5-21-9)(A;OICI;0x3;;;S-1-5-21-9)"))
	assert.Equal(t, uint32(0x4), g.Granted(`C:\top\a`, true, SIDSystem, 0x6, SIDUsers), "CI NP reaches the folder below")
	assert.Zero(t, g.Granted(`C:\top\a\b`, true, SIDSystem, 0x4, SIDUsers), "and no further")
	assert.Zero(t, g.Granted(`C:\top`, true, SIDSystem, 0x2, SIDUsers), "IO: not where it is set")
	assert.Equal(t, uint32(0x2), g.Granted(`C:\top\a\f.txt`, false, SIDSystem, 0x2, SIDUsers), "OI reaches files at any depth")
	assert.Equal(t, uint32(FileFullControl), g.Granted(`C:\top\a\f.txt`, false, "S-1-5-21-7", FileFullControl, "S-1-5-21-7"), "CREATOR OWNER: the owner")
	assert.Zero(t, g.Granted(`C:\top\a\f.txt`, false, SIDSystem, FileFullControl, "S-1-5-21-7"))
	assert.Equal(t, uint32(0x1), g.Granted(`C:\top\f.txt`, false, SIDSystem, 0x3, "S-1-5-21-9"), "deny first")

	g.SetACL(`C:\top\private`, ParseSDDL("D:PAI(A;OICI;FA;;;BA)"))
	assert.Zero(t, g.Granted(`C:\top\private\f.txt`, false, SIDAdministrators, FileFullControl, SIDSystem), "protected")
	// A moved file keeps what it inherited where it was.
	g.SetACL(`C:\top\moved.txt`, ParseSDDL("D:AI(A;ID;FA;;;WD)"))
	assert.Equal(t, uint32(FileFullControl), g.Granted(`C:\top\moved.txt`, false, SIDSystem, FileFullControl, SIDEveryone))
	assert.Zero(t, g.Granted(`C:\top\moved.txt`, false, SIDSystem, FileFullControl, SIDSystem))

	for _, bad := range []string{"O:BAD:P(A;;FA;;;SY)", "D:P(A;OICI;FA;;;SY)junk", "D:P(A;XX;FA;;;SY)", "D:P(A;;RW;;;SY)", "D:P(A;;FA;;;XY)", "D:P(U;;FA;;;SY)"} {
		assert.Panics(t, func() { ParseSDDL(bad) }, bad)
	}
}

// A script that sets ACLs with functions the double cannot read in it
// fails the test instead of being played as something else.
func TestWindowsRefusesACLFunctionsItCannotRead(t *testing.T) {
	g := NewWindows()
	script := "Set-KubenodeDirectoryAcl -Path 'C:\\k' -Sddl 'D:PAI(A;OICI;FA;;;SY)' -Says 'x' -Skip @()\r\n"
	require.NoError(t, g.Upload("C:/Windows/Temp/kubenode/10-permissions.ps1", strings.NewReader(script), nil))
	assert.Panics(t, func() {
		_ = g.Start(context.Background(), &packersdk.RemoteCmd{Command: `powershell.exe -File "C:\Windows\Temp\kubenode\10-permissions.ps1"`})
	})
}

// A step's Set-KubenodeFile, service and scheduled task are left on the
// guest; a task whose script the double cannot play fails RunTask.
func TestWindowsKeepsWhatAStepLeaves(t *testing.T) {
	g := NewWindows()
	script := "Set-KubenodeFile -Path 'C:\\k\\task.ps1' -Content 'Write-Host ''hi''' | Out-Null\r\n" +
		"$binPath = 'C:\\k\\x.exe --a=b'\r\n$service = Get-CimInstance -ClassName Win32_Service -Filter 'Name=''x'''\r\n" +
		"    $action = New-ScheduledTaskAction -Execute 'powershell.exe' -Argument '-File C:\\k\\task.ps1'\r\n" +
		"    $trigger = New-ScheduledTaskTrigger -Once -At (Get-Date).Date\r\n" +
		"    Register-ScheduledTask -TaskName 't' -Action $action | Out-Null\r\n"
	require.NoError(t, g.Upload("C:/Windows/Temp/kubenode/06-kubelet.ps1", strings.NewReader(script), nil))
	_, code := run(t, g, `powershell.exe -File "C:\Windows\Temp\kubenode\06-kubelet.ps1"`)
	require.Equal(t, 0, code)
	assert.Equal(t, "Write-Host 'hi'", string(g.Files["C:/k/task.ps1"]))
	assert.Equal(t, map[string]string{"x": `C:\k\x.exe --a=b`}, g.Services)
	assert.Equal(t, map[string]WindowsTask{"t": {Execute: "powershell.exe", Arguments: `-File C:\k\task.ps1`}}, g.Tasks)
	assert.ErrorContains(t, g.RunTask("t"), "the double cannot play")
	assert.ErrorContains(t, g.RunTask("other"), "no scheduled task other")
}
