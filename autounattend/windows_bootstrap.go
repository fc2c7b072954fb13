// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package autounattend

import (
	"embed"
	"strconv"
	"strings"
	"text/template"

	"github.com/kubenode/packer-plugin-kubenode/internal/psquote"
	"github.com/kubenode/packer-plugin-kubenode/internal/scripttmpl"
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

//go:embed scripts/*.ps1.tmpl
var scriptFiles embed.FS

// scripts are the PowerShell templates: every value they print goes
// through psquote.Quote (q) or psquote.Array (array), or is a number
// (num). They are stored with LF line ends and read with CRLF, Windows'.
var scripts = scripttmpl.MustParse(scripttmpl.CRLF(scriptFiles), scriptPattern, scriptFuncs, scriptSafe...)

const scriptPattern = "scripts/*.ps1.tmpl"

var (
	scriptFuncs = template.FuncMap{"q": psquote.Quote, "array": psquote.Array, "num": strconv.Itoa}
	scriptSafe  = []string{"q", "array", "num"}
)

// bootstrapInput fills scripts/bootstrap.ps1.tmpl.
type bootstrapInput struct {
	SSH               bool // the ssh communicator, else winrm
	WinRMUseSSL       bool
	Username          string
	SSHAuthorizedKeys []string
	Serial            serialWriterInput
	Log               string
	// The firewall rules it creates.
	GateRule, WinRMHTTPRule, WinRMTLSRule, SSHRule string
	// The wait for the network profile to turn Private (see networkRetrySeconds).
	NetworkRetrySeconds, NetworkWaitMinutes int
}

// serialWriterInput fills scripts/serial-writer.ps1.tmpl.
type serialWriterInput struct {
	Prefix string // starts every line, before the time
}

// RenderWindowsBootstrap returns the PowerShell script the first logon runs
// to open w's communicator.
func RenderWindowsBootstrap(w Windows) ([]byte, error) {
	if err := w.Validate(); err != nil {
		return nil, err
	}
	w = w.withDefaults()
	in := bootstrapInput{
		SSH: w.Communicator == CommunicatorSSH, WinRMUseSSL: w.WinRMUseSSL,
		Username: w.Username, SSHAuthorizedKeys: w.SSHAuthorizedKeys,
		Serial: serialWriterInput{Prefix: serialPrefix}, Log: bootstrapLog,
		GateRule: firewallGateRule, WinRMHTTPRule: firewallWinRMHTTP, WinRMTLSRule: firewallWinRMTLS, SSHRule: firewallSSH,
		NetworkRetrySeconds: networkRetrySeconds, NetworkWaitMinutes: networkWaitMinutes,
	}
	return append([]byte(psquote.UTF8BOM), scripts.Render("bootstrap.ps1.tmpl", in)...), nil
}

// serialPrefix starts every line the bootstrap writes to COM1, the serial
// port the builder logs to output_directory/serial.log.
const serialPrefix = "kubenode-bootstrap:"

// WindowsSerialWriter is the PowerShell function Write-KubenodeSerial,
// without a line end after it: it writes a line, prefix and UTC time
// first, to the host output and to COM1. A missing or busy port never
// stops the script: the write is best effort.
func WindowsSerialWriter(prefix string) string {
	fn := scripts.RenderString("serial-writer.ps1.tmpl", serialWriterInput{Prefix: prefix})
	return strings.TrimSuffix(fn, "\r\n")
}

// Network Location Awareness classifies a new adapter some time after the
// first logon; until then its profile is Public (named "Identifying...") and
// setting it Private fails or is undone. The bootstrap retries the flip
// every networkRetrySeconds for up to networkWaitMinutes; running out of
// time is written to COM1 and is not fatal: WinRM is enabled with
// -SkipNetworkProfileCheck and the build's firewall rule is for every
// profile.
const (
	networkRetrySeconds = 5
	networkWaitMinutes  = 5
)

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
