// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package windows

import (
	_ "embed"
	"strings"
)

// Guest locations of the sysprep step.
const (
	// sysprepScript is where the sysprep step's script runs from: the
	// cleanup step has removed the staging directory. The script removes
	// itself first (PowerShell has read it whole).
	sysprepScript = `C:\Windows\Temp\kubenode-sysprep.ps1`
	// firstBootAnswer is the answer file given to sysprep /unattend:.
	// It is uploaded as a file, never written by a script: PowerShell logs
	// a script block that calls Add-Type in full (event 4104), even with
	// script block logging off, and the sysprep script does.
	firstBootAnswer = `C:\Windows\System32\Sysprep\kubenode-firstboot.xml`
	// setupComplete runs as SYSTEM once Setup has finished on a
	// clone's first boot (after the oobeSystem pass, before the logon
	// screen): it runs firstBootScript, then removes the answer file
	// and its copies.
	setupComplete = `C:\Windows\Setup\Scripts\SetupComplete.cmd`
	// setupCompleteBefore is a SetupComplete.cmd that was there
	// before ours (the base image's, or an earlier provisioner's): the
	// sysprep step renames it so, and ours calls it.
	setupCompleteBefore = `C:\Windows\Setup\Scripts\SetupComplete-before-kubenode.cmd`
	// setupCompleteMark is in our SetupComplete.cmd, and in no
	// other.
	setupCompleteMark = "rem kubenode:"
	// firstBootScript closes again, on each clone, what the closer
	// closed in the build VM (the closer's errors are not checked), and
	// gives the clone an Administrator password of its own when
	// clone_admin_password is empty.
	firstBootScript = `C:\Windows\Setup\Scripts\kubenode-first-boot.ps1`
	// firstBootLog is the transcript of firstBootScript.
	firstBootLog = joinerDir + `\first-boot.log`
	// The sysprep step records the build account's SID here for the first
	// boot: sysprep gives the clone a new machine SID, the account keeps its
	// relative ID (the SID's last part).
	buildAccountKey   = `HKLM:\SOFTWARE\kubenode`
	buildAccountValue = "BuildAccountSid"
	// powerShellLog holds event 4104, script blocks PowerShell
	// logged; the sysprep step clears it before sysprep.
	powerShellLog = "Microsoft-Windows-PowerShell/Operational"
	// winRMPolicy is the WinRM service's Group Policy key: its
	// AllowBasic and AllowUnencryptedTraffic override the service's own
	// settings, and apply when the service starts (the DISA Windows Server
	// 2016 STIG checks these values: WN16-CC-000530 for Basic, and the
	// WinRM service's unencrypted-traffic rule).
	winRMPolicy = `SOFTWARE\Policies\Microsoft\Windows\WinRM\Service`
	sysprepLogs = `C:\Windows\System32\Sysprep\Panther`
	// OpenSSH for Windows keeps its host keys and the administrators'
	// authorized keys here; its sshd service makes host keys when there are
	// none (PowerShell/openssh-portable pull request #259).
	sshDir       = `C:\ProgramData\ssh`
	sshAdminKeys = "administrators_authorized_keys"
	sshHostKeys  = "ssh_host_*"
	// winRMCPTemp is the temporary file of Packer's WinRM upload
	// (packer-community/winrmcp), in the build account's %TEMP%.
	winRMCPTemp = "winrmcp-*.tmp"
	// generalizedState is the image state sysprep /generalize /oobe
	// leaves before it powers Windows off.
	generalizedState = "IMAGE_STATE_GENERALIZE_RESEAL_TO_OOBE"
)

// firstBootAnswerFiles are the answer files a clone's first boot removes
// once Setup has applied them: ours, and the copies Setup keeps.
var firstBootAnswerFiles = append([]string{firstBootAnswer}, answerFiles...)

// firstBootCommand runs firstBootScript; by full path: Setup's
// environment is not a logon's.
const firstBootCommand = `%SystemRoot%\System32\WindowsPowerShell\v1.0\powershell.exe -NoProfile -NonInteractive -ExecutionPolicy Bypass -File "` + firstBootScript + `"`

// PasswordClasses are the characters of a random Windows password, one
// string per class Windows' password complexity counts (upper, lower,
// digit, symbol); look-alikes (I, O, l, 0, 1) are left out.
var PasswordClasses = []string{"ABCDEFGHJKLMNPQRSTUVWXYZ", "abcdefghijkmnopqrstuvwxyz", "23456789", "-_.!#%+="}

// PasswordLength is the length of a random Windows password.
const PasswordLength = 32

// builtinAdmin finds the built-in Administrator: relative ID 500
// under this machine's SID, whatever its name.
const builtinAdmin = "Get-LocalUser | Where-Object { $_.SID.Value -like 'S-1-5-21-*-500' } | Select-Object -First 1"

// closerDelay is how long the closer waits before it closes WinRM:
// time for the sysprep step's command to return its exit code and output
// over the connection the closer is about to cut.
const closerDelay = 10

// lsaSecretType is C# that deletes an LSA secret through
// LsaStorePrivateData; the sysprep script adds it with Add-Type.
//
//go:embed scripts/sysprep/lsasecret.cs
var lsaSecretFile string

var lsaSecretType = strings.TrimSuffix(lsaSecretFile, "\n")
