package windows

import (
	"bytes"
	"context"
	"fmt"
	"slices"
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
	// itself first (PowerShell has read it whole).
	windowsSysprepScript = `C:\Windows\Temp\kubenode-sysprep.ps1`
	// windowsFirstBootAnswer is the answer file given to sysprep /unattend:.
	// It is uploaded as a file, never written by a script: PowerShell logs
	// a script block that calls Add-Type in full (event 4104), even with
	// script block logging off, and the sysprep script does.
	windowsFirstBootAnswer = `C:\Windows\System32\Sysprep\kubenode-firstboot.xml`
	// windowsSetupComplete runs as SYSTEM once Setup has finished on a
	// clone's first boot (after the oobeSystem pass, before the logon
	// screen): it runs windowsFirstBootScript, then removes the answer file
	// and its copies.
	windowsSetupComplete = `C:\Windows\Setup\Scripts\SetupComplete.cmd`
	// windowsSetupCompleteBefore is a SetupComplete.cmd that was there
	// before ours (the base image's, or an earlier provisioner's): the
	// sysprep step renames it so, and ours calls it.
	windowsSetupCompleteBefore = `C:\Windows\Setup\Scripts\SetupComplete-before-kubenode.cmd`
	// windowsSetupCompleteMark is in our SetupComplete.cmd, and in no
	// other.
	windowsSetupCompleteMark = "rem kubenode:"
	// windowsFirstBootScript closes again, on each clone, what the closer
	// closed in the build VM (the closer's errors are not checked), and
	// gives the clone an Administrator password of its own when
	// clone_admin_password is empty.
	windowsFirstBootScript = `C:\Windows\Setup\Scripts\kubenode-first-boot.ps1`
	// windowsFirstBootLog is the transcript of windowsFirstBootScript.
	windowsFirstBootLog = windowsJoinerDir + `\first-boot.log`
	// The sysprep step records the build account's SID here for the first
	// boot: sysprep gives the clone a new machine SID, the account keeps its
	// relative ID (the SID's last part).
	windowsBuildAccountKey   = `HKLM:\SOFTWARE\kubenode`
	windowsBuildAccountValue = "BuildAccountSid"
	// windowsPowerShellLog holds event 4104, script blocks PowerShell
	// logged; the sysprep step clears it before sysprep.
	windowsPowerShellLog = "Microsoft-Windows-PowerShell/Operational"
	// windowsWinRMPolicy is the WinRM service's Group Policy key: its
	// AllowBasic and AllowUnencryptedTraffic override the service's own
	// settings, and apply when the service starts (the DISA Windows Server
	// 2016 STIG checks these values: WN16-CC-000530 for Basic, and the
	// WinRM service's unencrypted-traffic rule).
	windowsWinRMPolicy = `SOFTWARE\Policies\Microsoft\Windows\WinRM\Service`
	windowsSysprepLogs = `C:\Windows\System32\Sysprep\Panther`
	// OpenSSH for Windows keeps its host keys and the administrators'
	// authorized keys here; its sshd service makes host keys when there are
	// none (PowerShell/openssh-portable pull request #259).
	windowsSSHDir       = `C:\ProgramData\ssh`
	windowsSSHAdminKeys = "administrators_authorized_keys"
	windowsSSHHostKeys  = "ssh_host_*"
	// windowsWinRMCPTemp is the temporary file of Packer's WinRM upload
	// (packer-community/winrmcp), in the build account's %TEMP%.
	windowsWinRMCPTemp = "winrmcp-*.tmp"
	// windowsGeneralized is the image state sysprep /generalize /oobe
	// leaves before it powers Windows off.
	windowsGeneralized = "IMAGE_STATE_GENERALIZE_RESEAL_TO_OOBE"
)

// firstBootPaths are the guest paths of FirstBootFiles.
func firstBootPaths(p Plan) []string {
	var out []string
	for _, f := range FirstBootFiles(p) {
		out = append(out, f.Path)
	}
	return out
}

// firstBootDirs are the folders of FirstBootFiles, each once, in order.
func firstBootDirs(p Plan) []string {
	var dirs []string
	for _, f := range FirstBootFiles(p) {
		dir := f.Path[:strings.LastIndex(f.Path, `\`)]
		if !slices.Contains(dirs, dir) {
			dirs = append(dirs, dir)
		}
	}
	return dirs
}

// firstBootPrepare readies the guest for FirstBootFiles. It creates their
// folders: SSH's scp and SFTP uploads, unlike WinRM's, create none, and a
// fresh Windows has no C:\Windows\Setup\Scripts. A SetupComplete.cmd
// already there that is not ours (the base image's, or an earlier
// provisioner's) is renamed windowsSetupCompleteBefore, which ours calls;
// when that name is taken too, it fails rather than lose either.
func firstBootPrepare(p Plan) string {
	s := &strings.Builder{}
	fmt.Fprintf(s, "New-Item -ItemType Directory -Force -Path %s | Out-Null\n", psList(firstBootDirs(p)))
	fmt.Fprintf(s, "$setup = %s\n", powershell.Quote(windowsSetupComplete))
	fmt.Fprintf(s, "$before = %s\n", powershell.Quote(windowsSetupCompleteBefore))
	fmt.Fprintf(s, "if ((Test-Path -LiteralPath $setup) -and -not (Select-String -LiteralPath $setup -SimpleMatch -Quiet -Pattern %s)) {\n", powershell.Quote(windowsSetupCompleteMark))
	s.WriteString("    if (Test-Path -LiteralPath $before) {\n")
	s.WriteString("        Write-Output ($setup + ' is not kubenode''s, and ' + $before + ' is taken: merge them into ' + $before + ' (kubenode''s SetupComplete.cmd calls it) or remove one, then build again')\n")
	s.WriteString("        exit 1\n")
	s.WriteString("    }\n")
	s.WriteString("    Move-Item -LiteralPath $setup -Destination $before\n")
	s.WriteString("    Write-Output ('changed: ' + $setup + ' renamed ' + $before + ': the first boot runs it after kubenode''s first-boot script')\n")
	s.WriteString("}\n")
	return s.String()
}

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
	if p.ClusterAPI {
		// Cluster API's bootstrap marks its success here as SYSTEM; nobody
		// else may fake it.
		dirs = append(dirs, windowsLockedDir{ClusterAPISentinelDir, true})
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

// GuestFile is a file the flow uploads to the guest as it is.
type GuestFile struct {
	// Path is the file's path on the guest, e.g. C:\Windows\Setup\Scripts\SetupComplete.cmd.
	Path    string
	Content []byte
}

// FirstBootFiles are the files the sysprep step uploads before its script
// runs, for each clone's first boot: the answer file sysprep applies,
// windowsFirstBootScript and the SetupComplete.cmd that runs it. None
// without Generalize.
func FirstBootFiles(p Plan) []GuestFile {
	if !p.Generalize {
		return nil
	}
	return []GuestFile{
		{Path: windowsFirstBootAnswer, Content: p.FirstBoot},
		{Path: windowsFirstBootScript, Content: windowsFirstBoot(p)},
		{Path: windowsSetupComplete, Content: []byte(windowsSetupCompleteCmd(p))},
	}
}

// windowsSetupCompleteCmd is the clone's SetupComplete.cmd: it runs the
// first-boot script, then deletes it and the answer files (they hold the
// Administrator password), calls the SetupComplete.cmd that was there
// before (windowsSetupCompleteBefore) if there was one, in a Cluster API
// image sets cloudbase-init's service automatic and starts it (Setup has
// finished: what its plugins do stays), and deletes itself. A failing
// first-boot script stops none of that: its transcript says what failed.
func windowsSetupCompleteCmd(p Plan) string {
	var b strings.Builder
	fmt.Fprintf(&b, "@echo off\r\n%s close what the build opened, then remove the answer files, which hold the Administrator password.\r\n", windowsSetupCompleteMark)
	fmt.Fprintf(&b, "%s\r\n", windowsFirstBootCommand)
	for _, f := range append([]string{windowsFirstBootScript}, windowsFirstBootFiles...) {
		fmt.Fprintf(&b, "if exist \"%s\" del /f /q \"%s\"\r\n", f, f)
	}
	b.WriteString("rem The SetupComplete.cmd that was here before kubenode's, if any.\r\n")
	fmt.Fprintf(&b, "if exist \"%s\" call \"%s\"\r\n", windowsSetupCompleteBefore, windowsSetupCompleteBefore)
	if p.ClusterAPI {
		b.WriteString("rem Cluster API: cloudbase-init runs the machine's bootstrap data (kubeadm join) now that Setup has finished.\r\n")
		fmt.Fprintf(&b, "sc.exe config %s start= auto\r\n", cloudbaseInitService)
		fmt.Fprintf(&b, "sc.exe start %s\r\n", cloudbaseInitService)
	}
	b.WriteString("del /f /q \"%~f0\"\r\n")
	return b.String()
}

// windowsFirstBootCommand runs windowsFirstBootScript; by full path: Setup's
// environment is not a logon's.
const windowsFirstBootCommand = `%SystemRoot%\System32\WindowsPowerShell\v1.0\powershell.exe -NoProfile -NonInteractive -ExecutionPolicy Bypass -File "` + windowsFirstBootScript + `"`

// PasswordClasses are the characters of a random Windows password, one
// string per class Windows' password complexity counts (upper, lower,
// digit, symbol); look-alikes (I, O, l, 0, 1) are left out.
var PasswordClasses = []string{"ABCDEFGHJKLMNPQRSTUVWXYZ", "abcdefghijkmnopqrstuvwxyz", "23456789", "-_.!#%+="}

// PasswordLength is the length of a random Windows password.
const PasswordLength = 32

// windowsFirstBoot is the script each clone runs once, as SYSTEM, from
// SetupComplete.cmd. It does again what the closer did in the build VM,
// whose errors nobody reads (it runs after the build's last command): the
// build account disabled, found by its relative ID under the clone's new
// machine SID, and the recorded SID removed; WinRM's Basic authentication and unencrypted traffic off,
// by Group Policy, which holds whether or not WinRM runs; the build's
// firewall rules removed; WinRM and sshd disabled. With
// RandomClonePassword it first gives the built-in Administrator a random
// password made on the clone and stored nowhere; if that fails, it
// disables the account rather than leave it the image's placeholder
// password. Every part checks before it acts, finds what it needs itself
// and runs even if one before it failed; each line goes to the transcript
// (windowsFirstBootLog) and COM1.
func windowsFirstBoot(p Plan) []byte {
	s := powershell.New("kubenode-bake: first boot of each clone: close again what the build opened; runs once, as SYSTEM, from SetupComplete.cmd")
	s.Blank()
	autounattend.WindowsSerialWriter(s, "kubenode-first-boot:")
	s.Blank()
	s.Line("$failed = $false")
	firstBootPart(s, "the log file", func(b indented) {
		b.Line("New-Item -ItemType Directory -Force -Path %s | Out-Null", powershell.Quote(windowsJoinerDir))
		b.Line("Start-Transcript -Path %s -Append | Out-Null", powershell.Quote(windowsFirstBootLog))
	})
	if p.RandomClonePassword {
		firstBootPartOr(s, "the Administrator's own password", func(b indented) {
			b.Comment("clone_admin_password is empty: the answer file's password, the same in every clone and")
			b.Comment("readable in the image until this boot deletes the answer file, is replaced by one made")
			b.Comment("here. It is never written or shown.")
			b.Line("$admin = %s", windowsBuiltinAdmin)
			b.Line("if (-not $admin) {")
			b.Line("    throw 'no local account with relative ID 500'")
			b.Line("}")
			b.Line("$classes = %s", psList(PasswordClasses))
			b.Line("$all = -join $classes")
			b.Line("$random = [System.Security.Cryptography.RandomNumberGenerator]::Create()")
			b.Line("$byte = New-Object -TypeName byte[] -ArgumentList 1")
			b.Line("$password = New-Object -TypeName System.Security.SecureString")
			b.Line("for ($i = 0; $i -lt %d; $i++) {", PasswordLength)
			b.Line("    $set = $all")
			b.Line("    if ($i -lt $classes.Count) {")
			b.Line("        $set = $classes[$i]")
			b.Line("    }")
			b.Line("    # Bytes past the last whole multiple of the set's length are drawn again: no bias.")
			b.Line("    do {")
			b.Line("        $random.GetBytes($byte)")
			b.Line("    } while ($byte[0] -ge 256 - (256 %% $set.Length))")
			b.Line("    $password.AppendChar($set[$byte[0] %% $set.Length])")
			b.Line("}")
			b.Line("$random.Dispose()")
			b.Line("Set-LocalUser -SID $admin.SID -Password $password")
			b.Line("$password.Dispose()")
			b.Line("Write-KubenodeSerial 'changed: the built-in Administrator has a password made on this clone, stored nowhere'")
		}, func(b indented) {
			b.Comment("Fail closed: the account would keep the image's placeholder password, which anyone")
			b.Comment("holding the image can read from its answer file.")
			b.Line("try {")
			b.Line("    $builtin = %s", windowsBuiltinAdmin)
			b.Line("    if (-not $builtin) {")
			b.Line("        Write-KubenodeSerial 'ok: no local account with relative ID 500 to disable'")
			b.Line("    } else {")
			b.Line("        Disable-LocalUser -SID $builtin.SID")
			b.Line("        Write-KubenodeSerial ('changed: the built-in Administrator ' + $builtin.SID.Value + ' disabled: it would keep the image''s placeholder password')")
			b.Line("    }")
			b.Line("} catch {")
			b.Line("    Write-KubenodeSerial ('FAILED: disabling the built-in Administrator: ' + $_.Exception.Message)")
			b.Line("}")
		})
	}
	firstBootPart(s, "the build account", func(b indented) {
		b.Line("$recorded = (Get-ItemProperty -LiteralPath %s -Name %s -ErrorAction SilentlyContinue).%s",
			powershell.Quote(windowsBuildAccountKey), powershell.Quote(windowsBuildAccountValue), windowsBuildAccountValue)
		b.Line("if (-not $recorded) {")
		b.Line("    throw %s", powershell.Quote("the image holds no build account SID ("+windowsBuildAccountKey+" "+windowsBuildAccountValue+")"))
		b.Line("}")
		b.Line("$rid = $recorded.Split('-')[-1]")
		b.Line("if ($rid -eq '500') {")
		b.Line("    Write-KubenodeSerial ('ok: the build account ' + $recorded + ' is the built-in Administrator: it stays enabled')")
		b.Line("} else {")
		b.Line("    # This clone's machine SID, from any local account: every one is under it.")
		b.Line("    $machine = (Get-LocalUser | Select-Object -First 1).SID.AccountDomainSid")
		b.Line("    if (-not $machine) {")
		b.Line("        throw 'no local account to read the machine SID from'")
		b.Line("    }")
		b.Line("    $sid = New-Object -TypeName System.Security.Principal.SecurityIdentifier -ArgumentList ($machine.Value + '-' + $rid)")
		b.Line("    $account = Get-LocalUser -SID $sid -ErrorAction SilentlyContinue")
		b.Line("    if (-not $account) {")
		b.Line("        Write-KubenodeSerial ('ok: no account ' + $sid.Value + ' (the build account, ' + $recorded + ' in the build VM)')")
		b.Line("    } elseif ($account.Enabled) {")
		b.Line("        Disable-LocalUser -SID $sid")
		b.Line("        Write-KubenodeSerial ('changed: the build account ' + $sid.Value + ' disabled: it was enabled')")
		b.Line("    } else {")
		b.Line("        Write-KubenodeSerial ('ok: the build account ' + $sid.Value + ' is disabled')")
		b.Line("    }")
		b.Line("}")
		b.Comment("Used: the clone keeps no trace of the build VM's account.")
		b.Line("Remove-ItemProperty -LiteralPath %s -Name %s", powershell.Quote(windowsBuildAccountKey), powershell.Quote(windowsBuildAccountValue))
		b.Line("$left = Get-Item -LiteralPath %s", powershell.Quote(windowsBuildAccountKey))
		b.Line("if ($left.ValueCount -eq 0 -and $left.SubKeyCount -eq 0) {")
		b.Line("    Remove-Item -LiteralPath %s", powershell.Quote(windowsBuildAccountKey))
		b.Line("}")
		b.Line("Write-KubenodeSerial %s", powershell.Quote("changed: "+windowsBuildAccountKey+" "+windowsBuildAccountValue+" removed: used"))
	})
	firstBootPart(s, "WinRM Basic authentication and unencrypted traffic", func(b indented) {
		b.Line("$key = 'HKLM:'")
		b.Line("foreach ($part in %s.Split('\\')) {", powershell.Quote(windowsWinRMPolicy))
		b.Line("    $key = $key + '\\' + $part")
		b.Line("    if (-not (Test-Path -LiteralPath $key)) {")
		b.Line("        New-Item -Path $key | Out-Null")
		b.Line("    }")
		b.Line("}")
		b.Line("foreach ($name in @('AllowBasic', 'AllowUnencryptedTraffic')) {")
		b.Line("    $current = (Get-ItemProperty -LiteralPath $key -Name $name -ErrorAction SilentlyContinue).$name")
		b.Line("    if ($null -ne $current -and [int]$current -eq 0) {")
		b.Line("        Write-KubenodeSerial ('ok: WinRM policy ' + $name + ' = 0')")
		b.Line("    } else {")
		b.Line("        New-ItemProperty -LiteralPath $key -Name $name -PropertyType DWord -Value 0 -Force | Out-Null")
		b.Line("        Write-KubenodeSerial ('changed: WinRM policy ' + $name + ' = 0, was ' + $current)")
		b.Line("    }")
		b.Line("}")
	})
	firstBootPart(s, "the build's firewall rules", func(b indented) {
		b.Line("foreach ($rule in %s) {", psList(autounattend.WindowsFirewallRules))
		b.Line("    if (Get-NetFirewallRule -Name $rule -ErrorAction SilentlyContinue) {")
		b.Line("        Remove-NetFirewallRule -Name $rule")
		b.Line("        Write-KubenodeSerial ('changed: firewall rule ' + $rule + ' removed: it was still there')")
		b.Line("    } else {")
		b.Line("        Write-KubenodeSerial ('ok: no firewall rule ' + $rule)")
		b.Line("    }")
		b.Line("}")
	})
	firstBootPart(s, "the WinRM and sshd services", func(b indented) {
		b.Line("foreach ($name in @('WinRM', 'sshd')) {")
		b.Line("    $service = Get-Service -Name $name -ErrorAction SilentlyContinue")
		b.Line("    if (-not $service) {")
		b.Line("        Write-KubenodeSerial ('ok: no service ' + $name)")
		b.Line("    } elseif ($service.StartType -eq 'Disabled' -and $service.Status -eq 'Stopped') {")
		b.Line("        Write-KubenodeSerial ('ok: service ' + $name + ' disabled')")
		b.Line("    } else {")
		b.Line("        Set-Service -Name $name -StartupType Disabled")
		b.Line("        Stop-Service -Name $name -Force")
		b.Line("        Write-KubenodeSerial ('changed: service ' + $name + ' disabled and stopped: it was ' + $service.StartType + ', ' + $service.Status)")
		b.Line("    }")
		b.Line("}")
	})
	s.Blank()
	s.Line("if ($failed) {")
	s.Line("    Write-KubenodeSerial 'done, with the failures above'")
	s.Line("} else {")
	s.Line("    Write-KubenodeSerial 'done'")
	s.Line("}")
	s.Line("try {")
	s.Line("    Stop-Transcript | Out-Null")
	s.Line("} catch {")
	s.Line("}")
	s.Line("if ($failed) {")
	s.Line("    exit 1")
	s.Line("}")
	return s.Bytes()
}

// firstBootPart renders one part of the first-boot script in its own try:
// a failure is logged and the next part runs. A part reads nothing another
// part set: each finds what it needs itself.
func firstBootPart(s *powershell.Script, what string, body func(indented)) {
	firstBootPartOr(s, what, body, nil)
}

// firstBootPartOr is firstBootPart whose catch, once the failure is
// logged, runs onFailure.
func firstBootPartOr(s *powershell.Script, what string, body, onFailure func(indented)) {
	s.Blank()
	s.Comment(what)
	s.Line("try {")
	body(indented{s})
	s.Line("} catch {")
	s.Line("    $failed = $true")
	s.Line("    Write-KubenodeSerial (%s + $_.Exception.Message)", powershell.Quote("FAILED: "+what+": "))
	if onFailure != nil {
		onFailure(indented{s})
	}
	s.Line("}")
}

// windowsBuiltinAdmin finds the built-in Administrator: relative ID 500
// under this machine's SID, whatever its name.
const windowsBuiltinAdmin = "Get-LocalUser | Where-Object { $_.SID.Value -like 'S-1-5-21-*-500' } | Select-Object -First 1"

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
	s := newWinScript("generalize: close the build's doors, check the uploaded first-boot files, clear the PowerShell log, run sysprep; then close WinRM and power Windows off", psNative)
	s.Line("Remove-Item -LiteralPath $PSCommandPath -Force")
	s.Line("foreach ($file in %s) {", powershell.Array(windowsAnswerFiles))
	s.Line("    if (Test-Path -LiteralPath $file) {")
	s.Line("        Remove-Item -LiteralPath $file -Force")
	s.Line(`        Write-Host "changed: removed $file"`)
	s.Line("    }")
	s.Line("}")
	windowsCloseDoors(s)
	s.Blank()
	s.Comment("The clones' first boot disables the build account by SID: sysprep gives them a new")
	s.Comment("machine SID, the account keeps its relative ID. This process runs as the build account.")
	s.Line("if (-not (Test-Path -LiteralPath %s)) {", powershell.Quote(windowsBuildAccountKey))
	s.Line("    New-Item -Path %s | Out-Null", powershell.Quote(windowsBuildAccountKey))
	s.Line("}")
	s.Line("$build = [System.Security.Principal.WindowsIdentity]::GetCurrent().User.Value")
	s.Line("New-ItemProperty -LiteralPath %s -Name %s -PropertyType String -Value $build -Force | Out-Null", powershell.Quote(windowsBuildAccountKey), powershell.Quote(windowsBuildAccountValue))
	s.Line(`Write-Host "changed: the build account $build recorded for the clones' first boot"`)
	s.Blank()
	s.Comment("The answer file, the first-boot script and SetupComplete.cmd were uploaded as files.")
	s.Line("foreach ($file in %s) {", powershell.Array(firstBootPaths(p)))
	s.Line("    if (-not (Test-Path -LiteralPath $file -PathType Leaf)) {")
	s.Line(`        throw "$file is missing: the upload before this script did not arrive"`)
	s.Line("    }")
	s.Line("}")
	say(s, "", "ok: the first-boot answer file, script and SetupComplete.cmd are in place")
	s.Blank()
	s.Comment("The build's SSH key (the key Packer logged on with) and the SSH host keys, which every")
	s.Comment("clone would share: this session is authenticated already, and an sshd started on a")
	s.Comment("clone makes new host keys when there are none.")
	s.Line("foreach ($file in @(Get-ChildItem -LiteralPath %s -Force -ErrorAction SilentlyContinue | Where-Object { $_.Name -eq %s -or $_.Name -like %s })) {",
		powershell.Quote(windowsSSHDir), powershell.Quote(windowsSSHAdminKeys), powershell.Quote(windowsSSHHostKeys))
	s.Line("    Remove-Item -LiteralPath $file.FullName -Force")
	s.Line(`    Write-Host ('changed: removed ' + $file.FullName)`)
	s.Line("}")
	s.Comment("Packer's WinRM upload stages each file base64-coded in %TEMP% and removes it after;")
	s.Comment("one it failed to remove would hold a copy of what it uploaded (the first-boot answer file).")
	s.Line("foreach ($file in @(Get-ChildItem -Path (Join-Path $env:TEMP %s) -Force -ErrorAction SilentlyContinue)) {", powershell.Quote(windowsWinRMCPTemp))
	s.Line("    Remove-Item -LiteralPath $file.FullName -Force")
	s.Line(`    Write-Host ('changed: removed ' + $file.FullName)`)
	s.Line("}")
	s.Comment("PowerShell logged this script in full (event 4104: it calls Add-Type), as it logs")
	s.Comment("any script block it finds suspicious, even with script block logging off: no clone")
	s.Comment("keeps the build's scripts.")
	native(s, "", "wevtutil cl "+windowsPowerShellLog, "wevtutil.exe", "cl", windowsPowerShellLog)
	say(s, "", "changed: the "+windowsPowerShellLog+" event log cleared")
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

// sysprep creates the first-boot files' folders, uploads the files
// (FirstBootFiles), then the sysprep
// step's script, and runs it. Exit 0: sysprep has
// generalized Windows and the closer, started outside the WinRM shell,
// closes WinRM and powers Windows off. A dropped connection is taken as
// that power-off too. Any other exit is sysprep's failure, with the tail
// of its logs.
func (r *guest) sysprep(ctx context.Context, p Plan, script []byte) error {
	if p.Generalize {
		if _, err := r.Run(ctx, stepSysprep, powershellEncoded(firstBootPrepare(p))); err != nil {
			return fmt.Errorf("%w\nthe first-boot files were not uploaded: their folders could not be made, or %s could not be set aside", err, windowsSetupComplete)
		}
	}
	for _, f := range FirstBootFiles(p) {
		if err := r.Comm.Upload(remote.UploadPath(f.Path), bytes.NewReader(f.Content), nil); err != nil {
			err = fmt.Errorf("step sysprep: uploading %s: %w", f.Path, err)
			r.UI.Error(err.Error())
			return err
		}
	}
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

// indented writes a block's lines one level in.
type indented struct{ s *powershell.Script }

func (i indented) Line(format string, args ...any) { i.s.Line("    "+format, args...) }
func (i indented) Comment(text string)             { i.s.Line("    # %s", text) }
