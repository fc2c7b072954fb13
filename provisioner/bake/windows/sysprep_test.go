// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package windows

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"
	"testing"

	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/autounattend"
	"github.com/kubenode/packer-plugin-kubenode/internal/versions"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/guesttest"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/remote"
)

func stepScript(t *testing.T, p Plan, name string) string {
	t.Helper()
	steps, err := Steps(p)
	require.NoError(t, err)
	for _, s := range steps {
		if s.Name == name {
			return string(s.Script)
		}
	}
	t.Fatalf("no %s step", name)
	return ""
}

func TestWindowsFlowEndsInSysprepAndPowerOff(t *testing.T) {
	for name, exit := range map[string]int{
		"the command returns": 0,
		// The guest went down under the command: taken as the power-off.
		"the connection drops": packersdk.CmdDisconnect,
	} {
		t.Run(name, func(t *testing.T) {
			g := guesttest.NewWindows()
			ui := guesttest.NewUI()
			p := basePlan(t)
			g.Exit[stepSysprep] = exit
			require.NoError(t, runErr(g, ui, p, realUploads(t, p)))
			steps := g.Steps()
			assert.Equal(t, []string{"self-check", "cleanup", "mkdir", "sysprep"}, steps[len(steps)-4:], "the first-boot files' folders, then sysprep: the last act")
			commands, _, _ := g.Snapshot()
			assert.Equal(t, `powershell.exe -NoProfile -NonInteractive -ExecutionPolicy Bypass -File "`+sysprepScript+`"`, commands[len(commands)-1])
			if exit == 0 {
				assert.Contains(t, ui.Out.String(), "Windows closes WinRM and powers itself off")
			} else {
				assert.Contains(t, ui.Out.String(), "Windows is powering off")
			}
			assert.Empty(t, ui.Err.String(), "a successful sysprep step prints no error")
		})
	}

	script := stepScript(t, basePlan(t), stepSysprep)
	assert.Contains(t, script, `'C:\Windows\System32\Sysprep\sysprep.exe' -ArgumentList @('/generalize', '/oobe', '/quit', '/mode:vm', '/quiet', '/unattend:`+firstBootAnswer+`') -Wait`)
	// The script removes itself first, sysprep runs last.
	assert.Less(t, strings.Index(script, "Remove-Item -LiteralPath $PSCommandPath"), strings.Index(script, "BuildAccountSid"))
	assert.Less(t, strings.Index(script, "wevtutil.exe"), strings.Index(script, "sysprep.exe"))
}

// sysprep must not power Windows off itself: that raced the closer, so the
// image could keep WinRM's listeners and the build's firewall rules.
func TestWindowsSysprepQuitsAndTheCloserPowersOff(t *testing.T) {
	args := sysprepArgs()
	assert.Contains(t, args, "/quit")
	assert.NotContains(t, args, "/shutdown")
	assert.NotContains(t, args, "/reboot")
	script := stepScript(t, basePlan(t), stepSysprep)
	assert.NotContains(t, script, "/shutdown")

	// The closer starts only once sysprep has generalized Windows and is
	// created by the WMI service, outside the WinRM shell's job object.
	sysprep := strings.Index(script, "sysprep.exe' -ArgumentList")
	generalized := strings.Index(script, "$state -eq '"+generalizedState+"'")
	create := strings.Index(script, "Invoke-CimMethod -ClassName Win32_Process -MethodName Create")
	require.True(t, sysprep > 0 && generalized > sysprep && create > generalized, "sysprep, its result checked, then the closer")
	assert.Less(t, create, strings.Index(script, "exit 0"))
	assert.NotContains(t, script, "Start-Process -FilePath 'powershell.exe'", "a process started from the WinRM command dies with its shell")
	assert.Contains(t, script, "$started.ReturnValue -ne 0")

	// The closer closes, then powers off in a finally: also when a
	// closing command fails.
	closer := transportCloser()
	delay := strings.Index(closer, "Start-Sleep -Seconds")
	try := strings.Index(closer, "\ntry {")
	finally := strings.Index(closer, "} finally {")
	off := strings.Index(closer, "& shutdown.exe /s /t 0 /f")
	require.True(t, delay > 0 && try > delay && finally > try && off > finally, "delay, try, finally, power-off")
	for _, closing := range []string{"Remove-NetFirewallRule", `WSMan:\localhost\Service\Auth\Basic`, `WSMan:\localhost\Service\AllowUnencrypted`, `WSMan:\localhost\Listener\*`,
		"if ($account.Value -notlike '*-500') {", "Disable-LocalUser -SID $account"} {
		i := strings.Index(closer, closing)
		assert.True(t, i > try && i < finally, "%s is closed inside the try, before the power-off", closing)
	}
	assert.Less(t, strings.Index(closer, "$ErrorActionPreference = 'Continue'"), try, "one closing command that fails does not skip the others")
	assert.Greater(t, strings.Index(closer, "$ErrorActionPreference = 'Continue'"), delay)
	assert.Equal(t, 1, strings.Count(closer, "shutdown.exe"))
	assert.NotContains(t, closer, "ImageState", "the closer no longer waits for sysprep: it runs after it")
}

func TestWindowsSysprepFailureFailsTheBuildWithExitCodeAndLogs(t *testing.T) {
	g := guesttest.NewWindows()
	g.Exit[stepSysprep] = 31
	g.Output[stepSysprep] = "sysprep failed: exit code 31, image state IMAGE_STATE_COMPLETE\r\n" +
		"--- last lines of C:\\Windows\\System32\\Sysprep\\Panther\\setupact.log:\r\n" +
		"Error SYSPRP Package Microsoft.Example was installed for a user, but not provisioned for all users.\r\n"
	ui := guesttest.NewUI()
	p := basePlan(t)
	err := runErr(g, ui, p, realUploads(t, p))
	require.Error(t, err)
	var se *remote.StepError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "sysprep", se.Step)
	assert.Equal(t, 31, se.ExitCode)
	assert.Contains(t, err.Error(), "exited with code 31")
	assert.Contains(t, err.Error(), "not provisioned for all users")
	assert.Contains(t, err.Error(), `C:\Windows\System32\Sysprep\Panther`)

	// The script prints both logs' tails and exits with sysprep's code.
	script := stepScript(t, p, stepSysprep)
	for _, want := range []string{"@('setupact.log', 'setuperr.log')", "Get-Content -LiteralPath $path -Tail", "exit $sysprep.ExitCode", generalizedState} {
		assert.Contains(t, script, want)
	}
}

func TestWindowsSysprepIsOffWithoutGeneralize(t *testing.T) {
	p := basePlan(t)
	p.Generalize = false
	steps, err := Steps(p)
	require.NoError(t, err)
	assert.Equal(t, stepCleanup, steps[len(steps)-1].Name)
	p.Generalize, p.FirstBoot = true, nil
	_, err = Steps(p)
	assert.ErrorContains(t, err, "generalize: no first-boot answer file")
}

func TestWindowsSysprepRemovesTheBuildsFirewallRules(t *testing.T) {
	require.Len(t, autounattend.WindowsFirewallRules, 3)
	script := stepScript(t, basePlan(t), stepSysprep)
	for _, rule := range []string{"kubenode-winrm-http", "kubenode-winrm-https", "kubenode-sshd"} {
		assert.Contains(t, autounattend.WindowsFirewallRules, rule)
		// The closer travels inside the script as a quoted literal.
		assert.Contains(t, script, "'"+rule+"'", rule)
	}
	assert.Contains(t, script, "Remove-NetFirewallRule -Name $rule")
	assert.Contains(t, transportCloser(), "Remove-NetFirewallRule -Name $rule")
}

func TestWindowsSysprepClosesTheBuildsDoors(t *testing.T) {
	script := stepScript(t, basePlan(t), stepSysprep)
	for what, want := range map[string]string{
		"LSA secret DefaultPassword cleared":    "[Kubenode.LsaSecret]::Delete('DefaultPassword')",
		"LsaStorePrivateData with no data":      "LsaStorePrivateData(policy, ref key, IntPtr.Zero)",
		"autologon off":                         "-Name 'AutoAdminLogon' -Value '0'",
		"AutoLogonCount and DefaultPassword":    "@('DefaultPassword', 'AutoLogonCount')",
		"UAC restored":                          "-Name 'EnableLUA' -Value 1",
		"LocalAccountTokenFilterPolicy gone":    "-Name 'LocalAccountTokenFilterPolicy'",
		"WinRM and sshd disabled":               "foreach ($name in @('WinRM', 'sshd'))",
		"leftover Sysprep unattend.xml":         `'C:\Windows\System32\Sysprep\unattend.xml'`,
		"leftover Panther unattend.xml":         `'C:\Windows\Panther\unattend.xml'`,
		"first-boot files checked":              "'" + firstBootAnswer + "'\r\n    '" + firstBootScript + "'\r\n    '" + setupComplete + "'",
		"build account recorded for the clones": "-Name 'BuildAccountSid' -PropertyType String -Value $build",
	} {
		assert.Contains(t, script, want, what)
	}
	closer := transportCloser()
	for _, want := range []string{`WSMan:\localhost\Service\Auth\Basic' -Value $false`, `WSMan:\localhost\Service\AllowUnencrypted' -Value $false`, `WSMan:\localhost\Listener\*`} {
		assert.Contains(t, closer, want)
	}
}

func TestWindowsFirstBootRemovesTheAnswerFiles(t *testing.T) {
	cmd := setupCompleteCmd(basePlan(t))
	for _, f := range append([]string{firstBootAnswer, `C:\Windows\Panther\unattend.xml`, `C:\Windows\System32\Sysprep\unattend.xml`}, answerFiles...) {
		assert.Contains(t, cmd, `del /f /q "`+f+`"`, f)
	}
	assert.True(t, strings.HasSuffix(cmd, "del /f /q \"%~f0\"\r\n"), "it removes itself last")
	// The first-boot script runs first, then goes with the answer files.
	run := strings.Index(cmd, firstBootCommand+"\r\n")
	require.Greater(t, run, 0)
	assert.Less(t, run, strings.Index(cmd, "del /f /q"))
	assert.Contains(t, cmd, `del /f /q "`+firstBootScript+`"`)
	assert.NotContains(t, strings.ReplaceAll(cmd, "\r\n", ""), "\n", "CRLF line ends")
}

// Sysprep is the last command: once it returns, the closer removes WinRM
// and powers Windows off (and on a dropped connection it is going down
// already), so the joiner's version is asked before it.
func TestNoWinRMCommandAfterSysprep(t *testing.T) {
	for name, exit := range map[string]int{"the command returns": 0, "the connection drops": packersdk.CmdDisconnect} {
		t.Run(name, func(t *testing.T) {
			g := guesttest.NewWindows()
			g.Exit[stepSysprep] = exit
			p := basePlan(t)
			require.True(t, p.InstallJoiner)
			rec, err := bakePlan(context.Background(), &remote.Remote{Comm: g, UI: guesttest.NewUI()}, p, testArtifacts(t, p), nil)
			require.NoError(t, err)
			assert.Equal(t, "v0.9.1", rec.Facts.Joiner, "asked before sysprep")
			assert.Contains(t, rec.Inventory.Features, "Containers", "the inventory is asked before sysprep")
			assert.True(t, g.Sysprepped)
			assert.Empty(t, g.AfterSysprep, "no command reaches the guest once sysprep has returned")
			commands, _, _ := g.Snapshot()
			assert.Equal(t, powershellFile(sysprepScript), commands[len(commands)-1], "sysprep is the last command")
		})
	}
}

// testArtifacts are realUploads as the artifacts Bake takes.
func testArtifacts(t *testing.T, p Plan) []versions.Artifact {
	var arts []versions.Artifact
	for _, u := range realUploads(t, p) {
		arts = append(arts, versions.Artifact{Name: u.Name, FileName: path.Base(remote.UploadPath(u.Remote)), Local: u.Local, SHA256: u.SHA256})
	}
	return arts
}

// The kubelet and containerd restart 10 s after each failure, as on
// Kubernetes' GCE Windows nodes; the check reads the registry first.
func TestKubeletAndContainerdRestartOnFailure(t *testing.T) {
	p := basePlan(t)
	for step, name := range map[string]string{"containerd": "containerd", "kubelet": "kubelet"} {
		script := stepScript(t, p, step)
		assert.Contains(t, script, "-FilePath 'sc.exe' -Arguments @('failure', '"+name+"', 'reset=', '0', 'actions=', 'restart/10000')", step)
		assert.Contains(t, script, `'HKLM:\SYSTEM\CurrentControlSet\Services\`+name+`' -Name 'FailureActions'`, step)
	}
	// The kubelet's recovery is set after its service is registered.
	kubelet := stepScript(t, p, "kubelet")
	assert.Less(t, strings.Index(kubelet, "sc.exe create kubelet"), strings.Index(kubelet, "sc.exe failure kubelet"))
	containerd := stepScript(t, p, "containerd")
	assert.Less(t, strings.Index(containerd, "--register-service"), strings.Index(containerd, "sc.exe failure containerd"))
}

// The clone's answer file reaches the guest as an uploaded file, before
// the sysprep step's script runs, and no script carries its password:
// PowerShell logs a script that calls Add-Type in full (event 4104), and
// the sysprep script does.
func TestCloneAnswerFileIsUploadedNotWrittenByAScript(t *testing.T) {
	g := guesttest.NewWindows()
	p := basePlan(t)
	require.NoError(t, runErr(g, guesttest.NewUI(), p, realUploads(t, p)))
	require.NotNil(t, g.AtSysprep, "sysprep ran")
	_, log, _ := g.Snapshot()
	sysprep := slices.Index(log, stepSysprep)
	files := FirstBootFiles(p)
	require.Len(t, files, 3)
	for _, f := range files {
		i := slices.Index(log, "upload "+remote.UploadPath(f.Path))
		require.GreaterOrEqual(t, i, 0, "%s uploaded", f.Path)
		assert.Less(t, i, sysprep, "%s uploaded before the sysprep step", f.Path)
		assert.Equal(t, string(f.Content), string(g.AtSysprep.Files[remote.UploadPath(f.Path)]), "%s is on the guest when sysprep runs", f.Path)
	}
	assert.Equal(t, firstBootAnswer, files[0].Path)
	assert.Equal(t, string(p.FirstBoot), string(files[0].Content))

	secret := autounattend.EncodeUnattendPassword("Clone-Admin-1!", "AdministratorPassword")
	require.Contains(t, string(p.FirstBoot), secret)
	scripts := 0
	for name, data := range g.Files {
		if strings.HasSuffix(name, ".ps1") {
			scripts++
			for _, leak := range []string{secret, "Clone-Admin-1!", "<AdministratorPassword>"} {
				assert.NotContains(t, string(data), leak, "%s holds no password", name)
			}
		}
	}
	assert.Greater(t, scripts, 10)
}

// The PowerShell Operational log holds the sysprep script (Add-Type makes
// PowerShell log it): the script clears the log before sysprep, so no
// clone inherits it. The guest double keeps the log a script without the
// clear leaves behind.
func TestPowerShellLogIsClearedBeforeSysprep(t *testing.T) {
	g := guesttest.NewWindows()
	p := basePlan(t)
	require.NoError(t, runErr(g, guesttest.NewUI(), p, realUploads(t, p)))
	require.NotNil(t, g.AtSysprep)
	assert.Empty(t, g.AtSysprep.OperationalLog, "the image holds no logged script block")

	script := stepScript(t, p, stepSysprep)
	clear := "Invoke-KubenodeNative -What 'wevtutil cl Microsoft-Windows-PowerShell/Operational' -FilePath 'wevtutil.exe' -Arguments @('cl', 'Microsoft-Windows-PowerShell/Operational')"
	require.Contains(t, script, clear)
	assert.Less(t, strings.Index(script, clear), strings.Index(script, "sysprep.exe' -ArgumentList"))
	assert.Less(t, strings.Index(script, "Add-Type"), strings.Index(script, clear))

	// Without the clear, the script with its Add-Type stays in the image.
	g = guesttest.NewWindows()
	r := &guest{Remote: &remote.Remote{Comm: g, UI: guesttest.NewUI()}}
	require.NoError(t, r.sysprep(context.Background(), p, []byte(strings.Replace(script, clear, "", 1))))
	require.NotNil(t, g.AtSysprep)
	require.Len(t, g.AtSysprep.OperationalLog, 1)
	assert.Contains(t, g.AtSysprep.OperationalLog[0], "Add-Type -TypeDefinition")
}

// failingUpload is a Windows guest whose upload of one path fails.
type failingUpload struct {
	*guesttest.Windows
	path string
}

func (f failingUpload) Upload(p string, r io.Reader, fi *os.FileInfo) error {
	if p == f.path {
		return errors.New("connection reset by peer")
	}
	return f.Windows.Upload(p, r, fi)
}

// An answer file that does not reach the guest stops the build before
// sysprep; a sysprep run without it fails on the guest.
func TestSysprepNeedsTheUploadedAnswerFile(t *testing.T) {
	p := basePlan(t)
	g := guesttest.NewWindows()
	ui := guesttest.NewUI()
	r := &guest{Remote: &remote.Remote{Comm: failingUpload{g, remote.UploadPath(firstBootAnswer)}, UI: ui}}
	err := r.sysprep(context.Background(), p, []byte(stepScript(t, p, stepSysprep)))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "uploading "+firstBootAnswer)
	assert.NotContains(t, g.Steps(), stepSysprep, "the sysprep script never ran")
	assert.Nil(t, g.AtSysprep)

	// The double's sysprep, like Windows', fails without its answer file.
	g = guesttest.NewWindows()
	require.NoError(t, g.Upload(remote.UploadPath(sysprepScript), strings.NewReader(stepScript(t, p, stepSysprep)), nil))
	cmd := &packersdk.RemoteCmd{Command: powershellFile(sysprepScript)}
	require.NoError(t, g.Start(context.Background(), cmd))
	assert.Equal(t, 1, cmd.Wait())
	assert.Nil(t, g.AtSysprep)
}

// With clone_admin_password empty, each clone's first boot gives the
// built-in Administrator a random password made on the clone, written
// and shown nowhere; with clone_admin_password set, the clone keeps it.
func TestEachCloneMakesItsOwnAdministratorPassword(t *testing.T) {
	p := basePlan(t)
	p.RandomClonePassword = true
	script := string(firstBoot(p))
	for _, want := range []string{
		"$random = [System.Security.Cryptography.RandomNumberGenerator]::Create()",
		"$password = New-Object -TypeName System.Security.SecureString",
		fmt.Sprintf("for ($i = 0; $i -lt %d; $i++) {", PasswordLength),
		"$classes = " + quotedList(PasswordClasses),
		"Set-LocalUser -SID $admin.SID -Password $password",
		"$admin = Get-LocalUser | Where-Object { $_.SID.Value -like 'S-1-5-21-*-500' }",
	} {
		assert.Contains(t, script, want)
	}
	for _, line := range strings.Split(script, "\r\n") {
		if strings.Contains(line, "$password") {
			assert.NotRegexp(t, `Write-|Out-File|Add-Content|Set-Content|Transcript`, line, "the password goes nowhere but to the account")
		}
	}
	assert.NotContains(t, script, "ConvertFrom-SecureString")
	assert.NotContains(t, script, "Clone-Admin-1!")

	p.RandomClonePassword = false
	assert.NotContains(t, string(firstBoot(p)), "Set-LocalUser", "clone_admin_password set: the clone keeps it")
}

// Each clone's first boot does again what the closer did in the build VM
// (whose errors nobody reads): the build account disabled by SID, WinRM's
// Basic authentication and unencrypted traffic off, the build's firewall
// rules removed; WinRM and sshd disabled. Each part checks first, and
// logs to a file and COM1.
func TestCloneFirstBootClosesTheBuildsDoorsAgain(t *testing.T) {
	p := basePlan(t)
	script := string(firstBoot(p))
	for what, want := range map[string]string{
		"the build account's SID, recorded in the image": "(Get-ItemProperty -LiteralPath 'HKLM:\\SOFTWARE\\kubenode' -Name 'BuildAccountSid'",
		"the clone's machine SID, found in the part":     "$machine = (Get-LocalUser | Select-Object -First 1).SID.AccountDomainSid",
		"its relative ID under the clone's machine SID":  "($machine.Value + '-' + $rid)",
		"the recorded SID removed once used":             "Remove-ItemProperty -LiteralPath 'HKLM:\\SOFTWARE\\kubenode' -Name 'BuildAccountSid'",
		"disabled by SID":                                "Disable-LocalUser -SID $sid",
		"the built-in Administrator stays":               "if ($rid -eq '500') {",
		"Basic and unencrypted WinRM policy":             "foreach ($name in @('AllowBasic', 'AllowUnencryptedTraffic')) {",
		"policy key":                                     "'" + winRMPolicy + "'",
		"set to 0":                                       "-Name $name -PropertyType DWord -Value 0 -Force",
		"firewall rules removed":                         "Remove-NetFirewallRule -Name $rule",
		"WinRM and sshd disabled":                        "Set-Service -Name $name -StartupType Disabled",
		"a log file":                                     "Start-Transcript -Path '" + firstBootLog + "' -Append",
		"COM1":                                           "New-Object System.IO.Ports.SerialPort 'COM1'",
		"a failure is logged":                            "Write-KubenodeSerial ('FAILED: the build account: ' + $_.Exception.Message)",
	} {
		assert.Contains(t, script, want, what)
	}
	assert.Contains(t, script, "$rule in "+quotedList(autounattend.WindowsFirewallRules))
	for _, rule := range autounattend.WindowsFirewallRules {
		assert.Contains(t, script, "'"+rule+"'")
	}
	assert.NotRegexp(t, `(Disable|Get)-LocalUser -Name`, script, "accounts are found by SID, never by name")
	// Idempotent: each closing checks before it acts.
	for _, ok := range []string{"'ok: no firewall rule '", "'ok: WinRM policy '", "'ok: the build account '", "'ok: service '"} {
		assert.Contains(t, script, ok)
	}
	// The sysprep step records the build account before sysprep runs.
	sysprep := stepScript(t, p, stepSysprep)
	record := strings.Index(sysprep, "-Name 'BuildAccountSid' -PropertyType String -Value $build")
	require.Greater(t, record, 0)
	assert.Less(t, record, strings.Index(sysprep, "sysprep.exe' -ArgumentList"))
	assert.Contains(t, sysprep, "$build = [System.Security.Principal.WindowsIdentity]::GetCurrent().User.Value")
}

// With the SSH communicator, an upload into a folder that does not exist
// fails (scp and SFTP create none), and a fresh Windows has no
// C:\Windows\Setup\Scripts: the sysprep step creates every first-boot
// file's folder before it uploads them.
func TestFirstBootFilesReachAGuestOverSSH(t *testing.T) {
	p := basePlan(t)
	g := guesttest.NewWindows()
	g.UploadsNeedDir = true
	require.Error(t, g.Upload(remote.UploadPath(setupComplete), strings.NewReader("x"), nil), "the double refuses an upload into a missing folder")

	g = guesttest.NewWindows()
	g.UploadsNeedDir = true
	ui := guesttest.NewUI()
	require.NoError(t, runErr(g, ui, p, realUploads(t, p)), ui.Err.String())
	require.NotNil(t, g.AtSysprep, "sysprep ran")
	for _, f := range FirstBootFiles(p) {
		assert.Equal(t, string(f.Content), string(g.AtSysprep.Files[remote.UploadPath(f.Path)]), "%s is on the guest when sysprep runs", f.Path)
	}
	assert.Equal(t, []string{`C:\Windows\System32\Sysprep`, `C:\Windows\Setup\Scripts`}, firstBootDirs(p))
}

// The image keeps neither the build's SSH key (administrators_authorized_keys)
// nor the SSH host keys every clone would share, nor a copy of an upload
// Packer's WinRM upload left in %TEMP%: the sysprep script removes them
// before sysprep, and leaves the rest.
func TestSysprepRemovesBuildKeysAndUploadLeftovers(t *testing.T) {
	p := basePlan(t)
	g := guesttest.NewWindows()
	keep := []string{"C:/ProgramData/ssh/sshd_config", guesttest.WindowsTemp + "/other.tmp"}
	gone := []string{"C:/ProgramData/ssh/administrators_authorized_keys", "C:/ProgramData/ssh/ssh_host_ed25519_key", "C:/ProgramData/ssh/ssh_host_ed25519_key.pub",
		"C:/ProgramData/ssh/ssh_host_rsa_key", guesttest.WindowsTemp + "/winrmcp-0b9e2c1a-8f3d-4c55-9a41-3e1f2d7c6b80.tmp"}
	for _, f := range append(keep, gone...) {
		g.Files[f] = []byte("x")
	}
	require.NoError(t, runErr(g, guesttest.NewUI(), p, realUploads(t, p)))
	require.NotNil(t, g.AtSysprep)
	for _, f := range gone {
		assert.NotContains(t, g.AtSysprep.Files, f, "the image holds no %s", f)
	}
	for _, f := range keep {
		assert.Contains(t, g.AtSysprep.Files, f)
	}
	script := stepScript(t, p, stepSysprep)
	assert.Contains(t, script, "Write-Host ('changed: removed ' + $file.FullName)", "each removal is logged")
}

// A SetupComplete.cmd already on the guest (the base image's, or an
// earlier provisioner's) is not lost: it is renamed
// SetupComplete-before-kubenode.cmd, and ours calls it once its
// first-boot script has run and the answer files are gone. Ours from an
// earlier run is simply replaced; when the new name is taken too, the
// build stops before sysprep and says what to do.
func TestExistingSetupCompleteIsKeptAndCalled(t *testing.T) {
	p := basePlan(t)
	setup, before := remote.UploadPath(setupComplete), remote.UploadPath(setupCompleteBefore)
	theirs := "@echo off\r\nrem the base image's own\r\n"

	g := guesttest.NewWindows()
	g.Files[setup] = []byte(theirs)
	require.NoError(t, runErr(g, guesttest.NewUI(), p, realUploads(t, p)))
	require.NotNil(t, g.AtSysprep)
	assert.Equal(t, setupCompleteCmd(basePlan(t)), string(g.AtSysprep.Files[setup]), "ours is in place")
	assert.Equal(t, theirs, string(g.AtSysprep.Files[before]), "theirs is kept under the new name")

	cmd := setupCompleteCmd(basePlan(t))
	call := strings.Index(cmd, `if exist "`+setupCompleteBefore+`" call "`+setupCompleteBefore+`"`+"\r\n")
	require.Greater(t, call, 0)
	assert.Greater(t, call, strings.Index(cmd, firstBootCommand), "after the first-boot script")
	assert.Greater(t, call, strings.LastIndex(cmd, `del /f /q "`+firstBootAnswer+`"`), "after the answer files are gone")
	assert.Less(t, call, strings.Index(cmd, `del /f /q "%~f0"`), "before ours deletes itself")

	// Ours, from an earlier run on this guest: replaced, nothing renamed.
	g = guesttest.NewWindows()
	g.Files[setup] = []byte(setupCompleteCmd(basePlan(t)))
	require.NoError(t, runErr(g, guesttest.NewUI(), p, realUploads(t, p)))
	assert.NotContains(t, g.AtSysprep.Files, before)

	// Both names taken: no upload, no sysprep, and a way out.
	g = guesttest.NewWindows()
	g.Files[setup] = []byte(theirs)
	g.Files[before] = []byte("@echo off\r\n")
	err := runErr(g, guesttest.NewUI(), p, realUploads(t, p))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "is taken")
	assert.Contains(t, firstBootPrepare(p), "merge them into ' + $before + ' (kubenode''s SetupComplete.cmd calls it) or remove one, then build again")
	assert.Nil(t, g.AtSysprep)
	assert.Equal(t, theirs, string(g.Files[setup]), "theirs is not overwritten")
}
