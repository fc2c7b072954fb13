// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package windows

import (
	"slices"
	"strings"

	"github.com/kubenode/packer-plugin-kubenode/autounattend"
)

// The sysprep step and each clone's first boot, rendered from the
// templates in scripts/sysprep: the step's script (sysprep.ps1.tmpl), the
// closer it starts (closer.ps1.tmpl), and the files uploaded for the
// clones' first boot (first-boot.ps1.tmpl, setup-complete.cmd.tmpl), with
// the command that readies their folders (first-boot-prepare.ps1.tmpl).
// The guest locations are in sysprep_const.go; running the step is in
// sysprep_run.go.

// sysprepInput is what the sysprep templates print: the plan's choices
// and the guest locations they name.
type sysprepInput struct {
	RandomClonePassword bool
	ClusterAPI          bool
	// Time are the time sources ntp_servers names.
	Time timeSources

	AnswerFiles []string
	// FirstBootPaths and FirstBootDirs, of FirstBootFiles, are set by the
	// sysprep script and the first-boot prepare command only: the files
	// are rendered from this input too.
	FirstBootPaths []string
	FirstBootDirs  []string
	// Remove are the files SetupComplete.cmd deletes after the first-boot
	// script has run.
	Remove        []string
	FirewallRules []string
	SysprepArgs   []string

	SetupComplete        string
	SetupCompleteBefore  string
	SetupCompleteMark    string
	JoinerDir            string
	FirstBootLog         string
	BuildAccountKey      string
	BuildAccountValue    string
	WinRMPolicy          string
	SSHDir               string
	SSHAdminKeys         string
	SSHHostKeys          string
	WinRMCPTemp          string
	PowerShellLog        string
	Generalized          string
	SysprepLogs          string
	CloudbaseInitService string
	LsaSecretType        string
	PasswordClasses      []string
	PasswordLength       int
	CloserDelay          int
	// Closer is the rendered closer, which the sysprep script starts.
	Closer string
}

func newSysprepInput(p Plan) sysprepInput {
	return sysprepInput{
		RandomClonePassword: p.RandomClonePassword,
		ClusterAPI:          p.ClusterAPI,
		Time:                p.timeSources(),

		AnswerFiles:   answerFiles,
		Remove:        append([]string{firstBootScript}, firstBootAnswerFiles...),
		FirewallRules: autounattend.WindowsFirewallRules,
		SysprepArgs:   sysprepArgs(),

		SetupComplete:        setupComplete,
		SetupCompleteBefore:  setupCompleteBefore,
		SetupCompleteMark:    setupCompleteMark,
		JoinerDir:            joinerDir,
		FirstBootLog:         firstBootLog,
		BuildAccountKey:      buildAccountKey,
		BuildAccountValue:    buildAccountValue,
		WinRMPolicy:          winRMPolicy,
		SSHDir:               sshDir,
		SSHAdminKeys:         sshAdminKeys,
		SSHHostKeys:          sshHostKeys,
		WinRMCPTemp:          winRMCPTemp,
		PowerShellLog:        powerShellLog,
		Generalized:          generalizedState,
		SysprepLogs:          sysprepLogs,
		CloudbaseInitService: cloudbaseInitService,
		LsaSecretType:        lsaSecretType,
		PasswordClasses:      PasswordClasses,
		PasswordLength:       PasswordLength,
		CloserDelay:          closerDelay,
	}
}

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
// provisioner's) is renamed setupCompleteBefore, which ours calls;
// when that name is taken too, it fails rather than lose either. It
// travels as -EncodedCommand after its query name's line (powershellQuery),
// its lines ended with LF like those of the other short scripts.
func firstBootPrepare(p Plan) string {
	in := newSysprepInput(p)
	in.FirstBootDirs = firstBootDirs(p)
	return templates.RenderString("first-boot-prepare.lf.ps1.tmpl", in)
}

// GuestFile is a file the flow uploads to the guest as it is.
type GuestFile struct {
	// Path is the file's path on the guest, e.g. C:\Windows\Setup\Scripts\SetupComplete.cmd.
	Path    string
	Content []byte
}

// FirstBootFiles are the files the sysprep step uploads before its script
// runs, for each clone's first boot: the answer file sysprep applies,
// firstBootScript and the SetupComplete.cmd that runs it. None
// without Generalize.
func FirstBootFiles(p Plan) []GuestFile {
	if !p.Generalize {
		return nil
	}
	return []GuestFile{
		{Path: firstBootAnswer, Content: p.FirstBoot},
		{Path: firstBootScript, Content: firstBoot(p)},
		{Path: setupComplete, Content: []byte(setupCompleteCmd(p))},
	}
}

// setupCompleteCmd is the clone's SetupComplete.cmd: it runs the
// first-boot script, then deletes it and the answer files (they hold the
// Administrator password), calls the SetupComplete.cmd that was there
// before (setupCompleteBefore) if there was one, in a Cluster API
// image sets cloudbase-init's service automatic and starts it (Setup has
// finished: what its plugins do stays), and deletes itself. A failing
// first-boot script stops none of that: its transcript says what failed.
func setupCompleteCmd(p Plan) string {
	return templates.RenderString("setup-complete.cmd.tmpl", newSysprepInput(p))
}

// firstBoot is the script each clone runs once, as SYSTEM, from
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
// (firstBootLog) and COM1.
func firstBoot(p Plan) []byte {
	return templates.Render("first-boot.ps1.tmpl", newSysprepInput(p))
}

// transportCloser closes what carries this session, WinRM's Basic
// authentication over HTTP, its listeners and the bootstrap's firewall
// rules, then powers Windows off. The sysprep step starts it once sysprep
// has generalized Windows and returns; the power-off is in a finally, so a
// closing command that fails cannot leave the build VM running. It
// travels as -EncodedCommand: it has no byte-order mark.
func transportCloser() string {
	return templates.RenderString("closer.ps1.tmpl", newSysprepInput(Plan{}))
}

// generalize is the sysprep step's script: it closes the build's
// doors, checks the uploaded first-boot files, clears the PowerShell log,
// runs sysprep and, once sysprep has generalized Windows, starts the
// closer outside the WinRM shell.
func generalize(p Plan) []byte {
	in := newSysprepInput(p)
	in.FirstBootPaths = firstBootPaths(p)
	in.Closer = transportCloser()
	return templates.Render("sysprep.ps1.tmpl", in)
}

// sysprepArgs generalizes for VMs on this hypervisor (/mode:vm keeps
// the drivers), skips the welcome screens with the first-boot answer file,
// and quits instead of powering off (/shutdown would race the closer): the
// step checks the result, then the closer closes WinRM and powers off.
func sysprepArgs() []string {
	return []string{"/generalize", "/oobe", "/quit", "/mode:vm", "/quiet", "/unattend:" + firstBootAnswer}
}
