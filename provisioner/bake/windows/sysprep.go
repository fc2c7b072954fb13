package windows

import (
	"context"
	"fmt"
	"strings"

	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"

	"github.com/kubenode/packer-plugin-kubenode/autounattend"
	"github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/units"
	"github.com/kubenode/packer-plugin-kubenode/internal/powershell"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/remote"
)

// Guest locations of the sysprep step.
const (
	// windowsSysprepScript is where the sysprep step's script runs from: the
	// cleanup step has removed the staging directory. The script removes
	// itself first (PowerShell has read it whole), since it holds the
	// first-boot answer file.
	windowsSysprepScript = `C:\Windows\Temp\kubenode-sysprep.ps1`
	// windowsFirstBootAnswer is the answer file given to sysprep /unattend:.
	windowsFirstBootAnswer = `C:\Windows\System32\Sysprep\kubenode-firstboot.xml`
	// windowsSetupComplete runs as SYSTEM once Setup has finished on a
	// clone's first boot (after the oobeSystem pass, before the logon
	// screen): it removes the answer file and its copies.
	windowsSetupComplete = `C:\Windows\Setup\Scripts\SetupComplete.cmd`
	windowsSysprepLogs   = `C:\Windows\System32\Sysprep\Panther`
	// windowsGeneralized is the image state sysprep /generalize /oobe
	// leaves before it powers Windows off.
	windowsGeneralized = "IMAGE_STATE_GENERALIZE_RESEAL_TO_OOBE"
)

// windowsFirstBootFiles are the answer files a clone's first boot removes
// once Setup has applied them: ours, and the copies Setup keeps.
var windowsFirstBootFiles = append([]string{windowsFirstBootAnswer}, windowsAnswerFiles...)

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
	return dirs
}

func windowsPermissions(p Plan) []byte {
	s := newWinScript("folders of what runs as SYSTEM: inheritance removed, only SYSTEM and Administrators may write", psDirectory, psNative)
	s.Line("function Set-KubenodePrivateAcl {")
	s.Line("    param([string]$Path, [string[]]$Grants)")
	s.Line("    New-KubenodeDirectory -Path $Path")
	s.Line("    $sids = @($Grants | ForEach-Object { $_.Split(':')[0].TrimStart('*') })")
	s.Line("    $acl = Get-Acl -LiteralPath $Path")
	s.Line("    $others = @($acl.Access | Where-Object { $sids -notcontains $_.IdentityReference.Translate([System.Security.Principal.SecurityIdentifier]).Value })")
	s.Line("    $have = @($acl.Access | ForEach-Object { $_.IdentityReference.Translate([System.Security.Principal.SecurityIdentifier]).Value })")
	s.Line("    $missing = @($sids | Where-Object { $have -notcontains $_ })")
	s.Line("    if ($acl.AreAccessRulesProtected -and $others.Count -eq 0 -and $missing.Count -eq 0) {")
	s.Line(`        Write-Host "ok: $Path is writable by SYSTEM and Administrators only"`)
	s.Line("        return")
	s.Line("    }")
	s.Line("    $arguments = @($Path, '/inheritance:r')")
	s.Line("    foreach ($grant in $Grants) {")
	s.Line("        $arguments += @('/grant:r', $grant)")
	s.Line("    }")
	s.Comment("What inheritance gave is gone; explicit entries of anyone else are removed.")
	s.Line("    foreach ($rule in $others) {")
	s.Line("        if (-not $rule.IsInherited) {")
	s.Line("            $arguments += @('/remove', ('*' + $rule.IdentityReference.Translate([System.Security.Principal.SecurityIdentifier]).Value))")
	s.Line("        }")
	s.Line("    }")
	s.Line("    Invoke-KubenodeNative -What ('icacls ' + $Path) -FilePath 'icacls.exe' -Arguments $arguments")
	s.Line(`    Write-Host "changed: $Path is writable by SYSTEM and Administrators only"`)
	s.Line("}")
	s.Blank()
	for _, d := range p.windowsLockedDirs() {
		grants := []string{"*" + sidSystem + ":(OI)(CI)F", "*" + sidAdministrators + ":(OI)(CI)F"}
		if d.UsersRead {
			grants = append(grants, "*"+sidUsers+":(OI)(CI)RX")
		}
		s.Line("Set-KubenodePrivateAcl -Path %s -Grants %s", powershell.Quote(d.Path), powershell.Array(grants))
	}
	return s.Bytes()
}

// windowsSetupCompleteCmd is the clone's SetupComplete.cmd: it deletes the
// answer files, which hold the clone's Administrator password, then itself.
func windowsSetupCompleteCmd() string {
	var b strings.Builder
	b.WriteString("@echo off\r\nrem kubenode: the answer files hold the Administrator password; Setup has applied them.\r\n")
	for _, f := range windowsFirstBootFiles {
		fmt.Fprintf(&b, "if exist \"%s\" del /f /q \"%s\"\r\n", f, f)
	}
	b.WriteString("del /f /q \"%~f0\"\r\n")
	return b.String()
}

// windowsCloseDoors is what the build opened that every clone must not
// keep, closed in the running system without cutting the session that
// carries this very script: WinRM's and sshd's services disabled (the
// running WinRM serves us until the power-off), UAC back on and
// LocalAccountTokenFilterPolicy removed (both read at logon; UAC stays off
// until the next boot, so no token of this session is filtered), autologon
// off, and the autologon password gone from the registry and from the LSA
// secret Setup stored it in.
func windowsCloseDoors(s *powershell.Script) {
	s.Line("$winlogon = 'HKLM:\\SOFTWARE\\Microsoft\\Windows NT\\CurrentVersion\\Winlogon'")
	s.Line("Set-ItemProperty -LiteralPath $winlogon -Name 'AutoAdminLogon' -Value '0'")
	s.Line("foreach ($name in @('DefaultPassword', 'AutoLogonCount')) {")
	s.Line("    Remove-ItemProperty -LiteralPath $winlogon -Name $name -ErrorAction SilentlyContinue")
	s.Line("}")
	say(s, "", "changed: autologon off")
	s.Comment("Setup keeps the autologon password as the LSA secret DefaultPassword; storing")
	s.Comment("nothing under that name deletes it (LsaStorePrivateData with no data).")
	s.Line("Add-Type -TypeDefinition %s", powershell.Quote(lsaSecretType))
	s.Line("$status = [Kubenode.LsaSecret]::Delete('DefaultPassword')")
	s.Line("if ($status -ne 0 -and $status -ne 2) {")
	s.Line("    throw ('clearing the LSA secret DefaultPassword failed with Windows error ' + $status)")
	s.Line("}")
	say(s, "", "changed: LSA secret DefaultPassword cleared")
	s.Line("$system = 'HKLM:\\SOFTWARE\\Microsoft\\Windows\\CurrentVersion\\Policies\\System'")
	s.Line("Set-ItemProperty -LiteralPath $system -Name 'EnableLUA' -Value 1 -Type DWord")
	s.Line("Remove-ItemProperty -LiteralPath $system -Name 'LocalAccountTokenFilterPolicy' -ErrorAction SilentlyContinue")
	say(s, "", "changed: UAC on from the next boot, LocalAccountTokenFilterPolicy removed")
	s.Line("foreach ($name in @('WinRM', 'sshd')) {")
	s.Line("    if (Get-Service -Name $name -ErrorAction SilentlyContinue) {")
	s.Line("        Set-Service -Name $name -StartupType Disabled")
	s.Line(`        Write-Host "changed: service $name disabled (it stops with this boot)"`)
	s.Line("    }")
	s.Line("}")
}

// lsaSecretType deletes an LSA secret through LsaStorePrivateData.
const lsaSecretType = `using System;
using System.Runtime.InteropServices;
namespace Kubenode {
    public static class LsaSecret {
        [StructLayout(LayoutKind.Sequential)]
        struct LSA_UNICODE_STRING { public ushort Length; public ushort MaximumLength; public IntPtr Buffer; }
        [StructLayout(LayoutKind.Sequential)]
        struct LSA_OBJECT_ATTRIBUTES { public int Length; public IntPtr RootDirectory; public IntPtr ObjectName; public uint Attributes; public IntPtr SecurityDescriptor; public IntPtr SecurityQualityOfService; }
        [DllImport("advapi32.dll")]
        static extern uint LsaOpenPolicy(IntPtr system, ref LSA_OBJECT_ATTRIBUTES attributes, uint access, out IntPtr policy);
        [DllImport("advapi32.dll")]
        static extern uint LsaStorePrivateData(IntPtr policy, ref LSA_UNICODE_STRING key, IntPtr data);
        [DllImport("advapi32.dll")]
        static extern uint LsaNtStatusToWinError(uint status);
        [DllImport("advapi32.dll")]
        static extern uint LsaClose(IntPtr policy);
        public static uint Delete(string name) {
            var attributes = new LSA_OBJECT_ATTRIBUTES();
            attributes.Length = Marshal.SizeOf(typeof(LSA_OBJECT_ATTRIBUTES));
            IntPtr policy;
            uint status = LsaOpenPolicy(IntPtr.Zero, ref attributes, 0x20, out policy);
            if (status != 0) { return LsaNtStatusToWinError(status); }
            var key = new LSA_UNICODE_STRING();
            key.Buffer = Marshal.StringToHGlobalUni(name);
            key.Length = (ushort)(name.Length * 2);
            key.MaximumLength = (ushort)(key.Length + 2);
            status = LsaStorePrivateData(policy, ref key, IntPtr.Zero);
            Marshal.FreeHGlobal(key.Buffer);
            LsaClose(policy);
            return LsaNtStatusToWinError(status);
        }
    }
}`

// windowsCloserDelay is how long the closer waits before it closes WinRM:
// time for the sysprep step's command to return its exit code and output
// over the connection the closer is about to cut.
const windowsCloserDelay = 10

// windowsTransportCloser closes what carries this session, WinRM's Basic
// authentication over HTTP, its listeners and the bootstrap's firewall
// rules, then powers Windows off. The sysprep step starts it once sysprep
// has generalized Windows and returns; the power-off is in a finally, so a
// closing command that fails cannot leave the build VM running.
func windowsTransportCloser() string {
	s := powershell.New("kubenode-bake: after sysprep, close WinRM and the build's firewall rules, then power Windows off")
	s.Line("Start-Sleep -Seconds %d", windowsCloserDelay)
	s.Comment("Nobody reads this script's errors: try every closing command, whatever the one before did.")
	s.Line("$ErrorActionPreference = 'Continue'")
	s.Line("try {")
	s.Line("    foreach ($rule in %s) {", powershell.Array(autounattend.WindowsFirewallRules))
	s.Line("        Remove-NetFirewallRule -Name $rule -ErrorAction SilentlyContinue")
	s.Line("    }")
	s.Line("    Set-Item -Path 'WSMan:\\localhost\\Service\\Auth\\Basic' -Value $false -Force")
	s.Line("    Set-Item -Path 'WSMan:\\localhost\\Service\\AllowUnencrypted' -Value $false -Force")
	s.Line("    Remove-Item -Path 'WSMan:\\localhost\\Listener\\*' -Recurse -Force")
	s.Line("    # A build account other than the built-in Administrator (RID 500) still has the build password:")
	s.Line("    # disable it (this process runs as that account: WMI creates it with the caller's identity).")
	s.Line("    $account = [System.Security.Principal.WindowsIdentity]::GetCurrent().User")
	s.Line("    if ($account.Value -notlike '*-500') {")
	s.Line("        Disable-LocalUser -SID $account")
	s.Line("    }")
	s.Line("} finally {")
	s.Line("    & shutdown.exe /s /t 0 /f")
	s.Line("}")
	// It travels as -EncodedCommand: no byte-order mark.
	return strings.TrimPrefix(string(s.Bytes()), "\uFEFF")
}

func windowsSysprep(p Plan) []byte {
	s := newWinScript("generalize: close the build's doors, leave the first-boot answer file to sysprep, run sysprep; then close WinRM and power Windows off")
	s.Comment("This script holds the clone's answer file: it goes first.")
	s.Line("Remove-Item -LiteralPath $PSCommandPath -Force")
	s.Line("foreach ($file in %s) {", powershell.Array(windowsFirstBootFiles))
	s.Line("    if (Test-Path -LiteralPath $file) {")
	s.Line("        Remove-Item -LiteralPath $file -Force")
	s.Line(`        Write-Host "changed: removed $file"`)
	s.Line("    }")
	s.Line("}")
	windowsCloseDoors(s)
	s.Blank()
	s.Line("$utf8 = New-Object -TypeName System.Text.UTF8Encoding -ArgumentList $false")
	s.Line("[System.IO.File]::WriteAllText(%s, %s, $utf8)", powershell.Quote(windowsFirstBootAnswer), powershell.Quote(string(p.FirstBoot)))
	s.Line("New-Item -ItemType Directory -Force -Path %s | Out-Null", powershell.Quote(`C:\Windows\Setup\Scripts`))
	s.Line("[System.IO.File]::WriteAllText(%s, %s, [System.Text.Encoding]::ASCII)", powershell.Quote(windowsSetupComplete), powershell.Quote(windowsSetupCompleteCmd()))
	say(s, "", "changed: first-boot answer file and SetupComplete.cmd written")
	s.Blank()
	s.Line("$sysprep = Start-Process -FilePath 'C:\\Windows\\System32\\Sysprep\\sysprep.exe' -ArgumentList %s -Wait -PassThru", psList(windowsSysprepArgs()))
	s.Line("$state = (Get-ItemProperty -LiteralPath 'HKLM:\\SOFTWARE\\Microsoft\\Windows\\CurrentVersion\\Setup\\State' -Name 'ImageState').ImageState")
	s.Line("if ($sysprep.ExitCode -eq 0 -and $state -eq %s) {", powershell.Quote(windowsGeneralized))
	// A process started from a WinRM command (Start-Process included) is
	// in the job object of the WinRM shell, and Windows ends the job with
	// the shell, so the closer would die when this command returns.
	// Win32_Process.Create has the WMI service create the process, outside
	// that job (PowerShell/PowerShell issue #16001; PowerShell-Docs issue
	// #8020 on Start-Process in remote sessions). A scheduled task would
	// do too, but leaves a task to remove and runs as another account.
	s.Line("    # Started by the WMI service, outside this WinRM shell's job: it outlives this command.")
	s.Line("    $closer = [System.Convert]::ToBase64String([System.Text.Encoding]::Unicode.GetBytes(%s))", powershell.Quote(windowsTransportCloser()))
	s.Line("    $started = Invoke-CimMethod -ClassName Win32_Process -MethodName Create -Arguments @{ CommandLine = ('powershell.exe -NoProfile -NonInteractive -ExecutionPolicy Bypass -EncodedCommand ' + $closer) }")
	s.Line("    if ($started.ReturnValue -ne 0) {")
	s.Line("        throw ('sysprep generalized Windows, but starting the closer failed: Win32_Process.Create returned ' + $started.ReturnValue + '; the build VM is not powered off')")
	s.Line("    }")
	say(s, "    ", fmt.Sprintf("kubenode-bake: sysprep generalized Windows; in %d seconds WinRM and the build's firewall rules close and Windows powers off", windowsCloserDelay))
	s.Line("    exit 0")
	s.Line("}")
	s.Line("Write-Host ('sysprep failed: exit code ' + $sysprep.ExitCode + ', image state ' + $state)")
	s.Line("foreach ($log in @('setupact.log', 'setuperr.log')) {")
	s.Line("    $path = Join-Path %s $log", powershell.Quote(windowsSysprepLogs))
	s.Line("    if (Test-Path -LiteralPath $path) {")
	s.Line(`        Write-Host "--- last lines of ${path}:"`)
	s.Line("        Get-Content -LiteralPath $path -Tail 10 | ForEach-Object { Write-Host $_ }")
	s.Line("    }")
	s.Line("}")
	s.Line("if ($sysprep.ExitCode -ne 0) {")
	s.Line("    exit $sysprep.ExitCode")
	s.Line("}")
	s.Line("exit 1")
	return s.Bytes()
}

// windowsSysprepArgs generalizes for VMs on this hypervisor (/mode:vm keeps
// the drivers), skips the welcome screens with the first-boot answer file,
// and quits instead of powering off (/shutdown would race the closer): the
// step checks the result, then the closer closes WinRM and powers off.
func windowsSysprepArgs() []string {
	return []string{"/generalize", "/oobe", "/quit", "/mode:vm", "/quiet", "/unattend:" + windowsFirstBootAnswer}
}

// sysprep uploads and runs the sysprep step's script. Exit 0: sysprep has
// generalized Windows and the closer, started outside the WinRM shell,
// closes WinRM and powers Windows off. A dropped connection is taken as
// that power-off too. Any other exit is sysprep's failure, with the tail
// of its logs.
func (r *guest) sysprep(ctx context.Context, script []byte) error {
	if err := r.Comm.Upload(remote.UploadPath(windowsSysprepScript), strings.NewReader(string(script)), nil); err != nil {
		err = fmt.Errorf("step sysprep: uploading its script to %s: %w", windowsSysprepScript, err)
		r.UI.Error(err.Error())
		return err
	}
	command := powershellFile(windowsSysprepScript)
	tail := remote.NewLineTail()
	cmd := &packersdk.RemoteCmd{Command: command, Stdout: tail, Stderr: tail}
	if err := cmd.RunWithUi(ctx, r.Comm, r.UI); err != nil {
		err = fmt.Errorf("step %s: starting `%s`: %w", stepSysprep, command, err)
		r.UI.Error(err.Error())
		return err
	}
	switch code := cmd.ExitStatus(); code {
	case 0:
		r.UI.Say("kubenode-bake [sysprep]: Windows closes WinRM and powers itself off")
		return nil
	case packersdk.CmdDisconnect:
		// Not an error: the guest went down under the command.
		r.UI.Say("kubenode-bake [sysprep]: the connection closed: Windows is powering off")
		return nil
	default:
		err := &remote.StepError{Step: stepSysprep, Command: command, ExitCode: code, Tail: tail.String()}
		r.UI.Error(err.Error())
		return fmt.Errorf("%w\nsysprep did not generalize Windows; its logs are in %s on the build VM (packer build -on-error=abort keeps it)", err, windowsSysprepLogs)
	}
}
