package autounattend

import (
	"strings"

	"github.com/kubenode/packer-plugin-kubenode/internal/powershell"
)

// The first-logon bootstrap opens the build communicator. It is found by
// scanning every file-system drive for WindowsBootstrapScript, so it works
// whatever letter the seed disc gets.

// bootstrapLocator is the PowerShell run by the FirstLogonCommands entry.
// It holds no double quotes: it is passed inside -Command "...". A missing
// script is written to COM1 too (best effort), like the bootstrap's own
// errors.
const bootstrapLocator = "$s = Get-PSDrive -PSProvider FileSystem | ForEach-Object { Join-Path $_.Root '" + WindowsBootstrapScript + "' } | " +
	"Where-Object { Test-Path -LiteralPath $_ } | Select-Object -First 1; " +
	"if (-not $s) { $m = '" + WindowsBootstrapScript + " is on no drive: attach the kubenode seed disc'; " +
	"try { $p = New-Object System.IO.Ports.SerialPort 'COM1', 115200; $p.WriteTimeout = 2000; $p.Open(); $p.Write('" + serialPrefix + " FAILED: ' + $m + [char]13 + [char]10); $p.Dispose() } catch { }; " +
	"throw $m }; & $s"

func bootstrapCommandLine() string {
	return `powershell.exe -NoLogo -NoProfile -NonInteractive -ExecutionPolicy Bypass -Command "` + bootstrapLocator + `"`
}

// Names of the firewall rules the bootstrap creates; the provisioner removes
// them before sysprep.
const (
	firewallGateRule  = "kubenode-build-gate"
	firewallWinRMHTTP = "kubenode-winrm-http"
	firewallWinRMTLS  = "kubenode-winrm-https"
	firewallSSH       = "kubenode-sshd"
	bootstrapLog      = `C:\Windows\Temp\kubenode-bootstrap.log`
)

// WindowsFirewallRules are the rules the bootstrap leaves open for the
// build (the gate rule removes itself); kubenode-bake removes every one
// before sysprep.
var WindowsFirewallRules = []string{firewallWinRMHTTP, firewallWinRMTLS, firewallSSH}

// RenderWindowsBootstrap returns the PowerShell script the first logon runs
// to open w's communicator.
func RenderWindowsBootstrap(w Windows) ([]byte, error) {
	if err := w.Validate(); err != nil {
		return nil, err
	}
	w = w.withDefaults()
	s := powershell.New("kubenode first-logon bootstrap: opens the " + w.Communicator + " communicator for the build.")
	serialProgress(s)
	s.Line("Start-Transcript -Path %s -Append | Out-Null", powershell.Quote(bootstrapLog))
	progress(s, "started ("+w.Communicator+")")
	s.Blank()

	ports := []string{"5985", "5986"}
	if w.Communicator == CommunicatorSSH {
		ports = []string{"22"}
	}
	s.Comment("Packer must not connect before this script ends (a service can start")
	s.Comment("listening early): block the ports now, unblock them last.")
	s.Line("New-NetFirewallRule -Name %s -DisplayName %s -Direction Inbound -Protocol TCP -LocalPort %s -Action Block | Out-Null",
		powershell.Quote(firewallGateRule), powershell.Quote("kubenode: hold build connections until the bootstrap ends"), strings.Join(ports, ","))
	s.Blank()
	s.Comment("The build account's password must not expire mid-build (Set-LocalUser works on every release, 2025 included).")
	s.Line("Set-LocalUser -Name %s -PasswordNeverExpires $true", powershell.Quote(w.Username))
	s.Blank()

	if w.Communicator == CommunicatorSSH {
		sshBootstrap(s, w)
	} else {
		winrmBootstrap(s, w)
	}

	s.Blank()
	s.Line("Remove-NetFirewallRule -Name %s", powershell.Quote(firewallGateRule))
	progress(s, "done: the "+w.Communicator+" ports are open to the build")
	s.Line("Stop-Transcript | Out-Null")
	return s.Bytes(), nil
}

// serialPrefix starts every line the bootstrap writes to COM1, the serial
// port the builder logs to output_directory/serial.log.
const serialPrefix = "kubenode-bootstrap:"

// serialProgress defines Write-KubenodeSerial, which writes a progress line
// to COM1 (and to the transcript), and a trap that writes any terminating
// error there before the script exits. A missing or busy port never stops
// the script: the write is best effort.
func serialProgress(s *powershell.Script) {
	s.Blank()
	s.Comment("Progress and errors go to COM1, which the builder logs to output_directory/serial.log")
	s.Comment("and prints when the build fails: a bootstrap that stops is never silent.")
	WindowsSerialWriter(s, serialPrefix)
	s.Line("trap {")
	s.Line("    Write-KubenodeSerial ('FAILED: ' + $_.Exception.Message + ' at ' + $_.InvocationInfo.PositionMessage)")
	s.Line("    try { Stop-Transcript | Out-Null } catch { }")
	s.Line("    exit 1")
	s.Line("}")
	s.Blank()
}

// WindowsSerialWriter defines Write-KubenodeSerial, which writes a line,
// prefix and UTC time first, to the host output and to COM1. A missing or
// busy port never stops the script: the write is best effort.
func WindowsSerialWriter(s *powershell.Script, prefix string) {
	s.Line("function Write-KubenodeSerial([string]$Message) {")
	s.Line("    $text = %s + (Get-Date).ToUniversalTime().ToString('yyyy-MM-ddTHH:mm:ssZ') + ' ' + ($Message -replace '\\s+', ' ')", powershell.Quote(prefix+" "))
	s.Line("    Write-Host $text")
	s.Line("    try {")
	s.Line("        $port = New-Object System.IO.Ports.SerialPort 'COM1', 115200, 'None', 8, 'One'")
	s.Line("        try {")
	s.Line("            $port.WriteTimeout = 2000")
	s.Line("            $port.Open()")
	s.Line("            $port.Write($text + \"`r`n\")")
	s.Line("        } finally {")
	s.Line("            $port.Dispose()")
	s.Line("        }")
	s.Line("    } catch {")
	s.Line("        Write-Host ('COM1 not written: ' + $_.Exception.Message)")
	s.Line("    }")
	s.Line("}")
}

// progress writes a stage of the bootstrap to COM1. msg is fixed text.
func progress(s *powershell.Script, msg string) {
	s.Line("Write-KubenodeSerial %s", powershell.Quote(msg))
}

func winrmBootstrap(s *powershell.Script, w Windows) {
	networkPrivate(s)
	s.Comment("Remote administration with a local account needs its full token.")
	s.Line("New-ItemProperty -Path %s -Name 'LocalAccountTokenFilterPolicy' -PropertyType DWord -Value 1 -Force | Out-Null",
		powershell.Quote(`HKLM:\SOFTWARE\Microsoft\Windows\CurrentVersion\Policies\System`))
	s.Blank()
	s.Comment("Enable-PSRemoting starts WinRM, sets it to start automatically and creates the HTTP")
	s.Comment("listener. No winrm quickconfig: it fails while any network is still Public, and")
	s.Comment("what it would add is done here (listener below, firewall rule and")
	s.Comment("LocalAccountTokenFilterPolicy above and below).")
	s.Line("Enable-PSRemoting -Force -SkipNetworkProfileCheck | Out-Null")
	s.Line(`if (-not (Get-ChildItem -Path 'WSMan:\localhost\Listener' | Where-Object { $_.Keys -contains 'Transport=HTTP' })) {`)
	s.Line(`    New-Item -Path 'WSMan:\localhost\Listener' -Transport HTTP -Address '*' -Force | Out-Null`)
	s.Line("}")
	progress(s, "remoting enabled, HTTP listener present")
	s.Comment("Long provisioning commands and large uploads.")
	s.Line(`Set-Item -Path 'WSMan:\localhost\MaxTimeoutms' -Value 1800000`)
	s.Line(`Set-Item -Path 'WSMan:\localhost\Shell\MaxMemoryPerShellMB' -Value 2048`)
	s.Comment("Basic auth over HTTP is for the build only: kubenode-bake turns both off before sysprep.")
	s.Line(`Set-Item -Path 'WSMan:\localhost\Service\AllowUnencrypted' -Value $true`)
	s.Line(`Set-Item -Path 'WSMan:\localhost\Service\Auth\Basic' -Value $true`)
	s.Line("New-NetFirewallRule -Name %s -DisplayName %s -Direction Inbound -Protocol TCP -LocalPort 5985 -Action Allow | Out-Null",
		powershell.Quote(firewallWinRMHTTP), powershell.Quote("kubenode: WinRM HTTP for the build"))
	if w.WinRMUseSSL {
		s.Blank()
		s.Comment("HTTPS listener with a self-signed certificate (set winrm_insecure in Packer).")
		s.Line("$cert = New-SelfSignedCertificate -DnsName $env:COMPUTERNAME -CertStoreLocation 'Cert:\\LocalMachine\\My'")
		s.Line(`Get-ChildItem -Path 'WSMan:\localhost\Listener' | Where-Object { $_.Keys -contains 'Transport=HTTPS' } | Remove-Item -Recurse -Force`)
		s.Line(`New-Item -Path 'WSMan:\localhost\Listener' -Transport HTTPS -Address '*' -CertificateThumbPrint $cert.Thumbprint -Force | Out-Null`)
		s.Line("New-NetFirewallRule -Name %s -DisplayName %s -Direction Inbound -Protocol TCP -LocalPort 5986 -Action Allow | Out-Null",
			powershell.Quote(firewallWinRMTLS), powershell.Quote("kubenode: WinRM HTTPS for the build"))
	}
	s.Blank()
	s.Comment("Delayed automatic start: a plain Automatic WinRM is not reliably up after the")
	s.Comment("restart the Containers feature asks for (image-builder's systemprep role and")
	s.Comment("rgl/windows-vagrant set delayed-auto for that). Set-Service in Windows PowerShell")
	s.Comment("5.1 has no AutomaticDelayedStart, so sc.exe.")
	s.Native("sc.exe config WinRM", "& sc.exe config WinRM start= delayed-auto")
	s.Line("Restart-Service -Name 'WinRM'")
	progress(s, "WinRM configured and restarted")
}

// Network Location Awareness classifies a new adapter some time after the
// first logon; until then its profile is Public (named "Identifying...") and
// setting it Private fails or is undone. The flip is retried every
// networkRetrySeconds for up to networkWaitMinutes.
const (
	networkRetrySeconds = 5
	networkWaitMinutes  = 5
)

// networkPrivate renders the bounded loop that sets every connection profile
// Private. Running out of time is written to COM1 and is not fatal: WinRM is
// enabled with -SkipNetworkProfileCheck and the build's firewall rule is for
// every profile.
func networkPrivate(s *powershell.Script) {
	s.Comment("WinRM's own firewall exception is narrower on a Public network: set every")
	s.Comment("profile Private, retried until Network Location Awareness has classified the adapter.")
	progress(s, "waiting for the network profile, to set it Private")
	s.Line("$deadline = (Get-Date).AddMinutes(%d)", networkWaitMinutes)
	s.Line("while ($true) {")
	s.Line("    $profiles = @(Get-NetConnectionProfile -ErrorAction SilentlyContinue)")
	s.Line("    $public = @($profiles | Where-Object { $_.NetworkCategory -eq 'Public' })")
	s.Line("    if ($profiles.Count -gt 0 -and $public.Count -eq 0) { break }")
	s.Line("    if (-not @($profiles | Where-Object { $_.Name -like 'Identifying*' })) {")
	s.Line("        try {")
	s.Line("            $public | Set-NetConnectionProfile -NetworkCategory Private")
	s.Line("        } catch {")
	s.Line("            Write-KubenodeSerial ('Set-NetConnectionProfile: ' + $_.Exception.Message + '; retrying')")
	s.Line("        }")
	s.Line("    }")
	s.Line("    if ((Get-Date) -gt $deadline) {")
	s.Line("        Write-KubenodeSerial ('WARNING: a network is still Public after %d minutes (' + (($profiles | ForEach-Object { $_.Name + '=' + $_.NetworkCategory }) -join ', ') + '); going on')", networkWaitMinutes)
	s.Line("        break")
	s.Line("    }")
	s.Line("    Start-Sleep -Seconds %d", networkRetrySeconds)
	s.Line("}")
	s.Line("Write-KubenodeSerial ('network profiles: ' + (($profiles | ForEach-Object { $_.Name + '=' + $_.NetworkCategory }) -join ', '))")
}

func sshBootstrap(s *powershell.Script, w Windows) {
	s.Comment("OpenSSH Server ships with Server 2025; 2019 and 2022 install it as a capability (needs Windows Update).")
	s.Line("if (-not (Get-Service -Name 'sshd' -ErrorAction SilentlyContinue)) {")
	s.Line("    Add-WindowsCapability -Online -Name 'OpenSSH.Server~~~~0.0.1.0' | Out-Null")
	s.Line("}")
	s.Line("New-Item -Path 'HKLM:\\SOFTWARE\\OpenSSH' -Force | Out-Null")
	s.Line("New-ItemProperty -Path 'HKLM:\\SOFTWARE\\OpenSSH' -Name 'DefaultShell' -PropertyType String -Value %s -Force | Out-Null",
		powershell.Quote(`C:\Windows\System32\WindowsPowerShell\v1.0\powershell.exe`))
	s.Blank()
	s.Comment("sshd reads administrators' keys only from this file, and only if SYSTEM and")
	s.Comment("Administrators alone may access it (SIDs: names are localized).")
	s.Line("$keys = %s", powershell.Array(w.SSHAuthorizedKeys))
	s.Line("$keyFile = Join-Path $env:ProgramData 'ssh\\administrators_authorized_keys'")
	s.Line("New-Item -ItemType Directory -Path (Split-Path -Parent $keyFile) -Force | Out-Null")
	s.Comment("UTF-8 without a BOM: sshd would not parse a first line that starts with one.")
	s.Line("[System.IO.File]::WriteAllLines($keyFile, [string[]]$keys)")
	s.Native("icacls on administrators_authorized_keys", "& icacls.exe $keyFile /inheritance:r /grant '*S-1-5-32-544:F' /grant '*S-1-5-18:F'")
	s.Line("New-NetFirewallRule -Name %s -DisplayName %s -Direction Inbound -Protocol TCP -LocalPort 22 -Action Allow | Out-Null",
		powershell.Quote(firewallSSH), powershell.Quote("kubenode: OpenSSH for the build"))
	s.Line("Set-Service -Name 'sshd' -StartupType Automatic")
	s.Line("Start-Service -Name 'sshd'")
	progress(s, "sshd configured and started")
}

// WindowsSeed returns the seed disc for w: the answer file and the bootstrap
// script, under WindowsSeedLabel. Attach it as a CD-ROM beside the install
// ISO; Setup finds Autounattend.xml at the root of any removable drive.
func WindowsSeed(w Windows) (Disc, error) {
	xmlBytes, err := RenderWindows(w)
	if err != nil {
		return Disc{}, err
	}
	script, err := RenderWindowsBootstrap(w)
	if err != nil {
		return Disc{}, err
	}
	return Disc{Label: WindowsSeedLabel, Files: []File{
		{Name: WindowsAnswerFile, Data: xmlBytes},
		{Name: WindowsBootstrapScript, Data: script},
	}}, nil
}
