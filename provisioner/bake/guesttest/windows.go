// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

// Package guesttest holds communicator doubles of a Linux and a Windows
// guest, a UI that records what it shows, and test fixtures, for the tests
// of the bake and of its operating systems' packages. It imports neither
// operating system's package: it plays the guest's side of the protocol.
package guesttest

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf16"

	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"

	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/remote"
)

// Windows is a communicator double for a Windows guest. It records
// uploads and commands, checks artifacts the way the verify script does
// (it reads the uploaded script), answers the boot check, and simulates the
// restart: after the shutdown command it first still answers with the old
// boot time, then refuses connections, then reports servicing, then the
// new boot.
type Windows struct {
	mu       sync.Mutex
	Files    map[string][]byte
	Log      []string // "upload <path>", "mkdir", "<step>", "restart", "boot-check"
	Commands []string

	Exit         map[string]int    // step -> exit code
	Output       map[string]string // step -> output
	NeedsRestart bool
	// updates is each windows-update round's output; after them a round
	// finds nothing.
	Updates []string
	// UpdateTaskNeverStarts: the Task Scheduler never runs the
	// windows-update task (its state stays Ready, it writes no log, its
	// last result stays 0x41303, "has not yet run"). The double then plays
	// the step's own wait loop from its script (see neverStartedUpdate) and
	// adds the guest time that loop would wait to UpdateWaited.
	UpdateTaskNeverStarts bool
	UpdateWaited          time.Duration
	Corrupt               string // upload path whose bytes arrive damaged
	// UploadsNeedDir: an upload into a folder that does not exist fails,
	// as with the SSH communicator (scp and SFTP create no folder; WinRM's
	// upload does). The folders that exist are Dirs and those a
	// `New-Item -ItemType Directory` command created.
	UploadsNeedDir bool
	// Dirs are the folders on the guest, by upload path (forward
	// slashes), in lower case; NewWindows starts with a fresh Windows'.
	Dirs map[string]bool

	Boot      int
	Lingering int // boot checks after the shutdown that still see the old boot
	DownFor   int // Start calls refused after that
	Servicing int // boot checks after that which report servicing
	NeverBack bool
	Refused   int
	// ResetAfterBack: the first commands and uploads after a boot check
	// has reported a restart finished fail with a connection reset (WinRM
	// answered once, then restarted or dropped the connection); Resets
	// counts them.
	ResetAfterBack int
	Resets         int
	resetting      int
	backBoot       int

	Build string // what the guest reports as its Windows build

	// Sysprepped: the sysprep step has returned (exit 0 or a dropped
	// connection). From then on the closer is removing WinRM and Windows
	// powers off: every command and upload is refused and kept in
	// AfterSysprep.
	Sysprepped   bool
	AfterSysprep []string

	// OperationalLog is the PowerShell Operational event log: PowerShell
	// writes a script block that calls Add-Type or DllImport into it in
	// full (event 4104), even with script block logging off. A script's
	// `wevtutil.exe ... 'cl', 'Microsoft-Windows-PowerShell/Operational'`
	// clears it.
	OperationalLog []string
	// AtSysprep is what the image holds when a sysprep step's script
	// starts sysprep.exe: nil until then.
	AtSysprep *WindowsImage

	// ACLs are the objects' own ACLs (windows_acl.go), by aclKey; Links
	// the objects that are links; Owners the objects' owners where not
	// Administrators.
	ACLs   map[string]*ACL
	Links  map[string]bool
	Owners map[string]string
	names  map[string]string // how the guest spells an object, by aclKey

	// What the steps left (windows_node.go): Services are the services'
	// command lines by name; Tasks the scheduled tasks by name; Features
	// the Windows features installed.
	Services map[string]string
	Tasks    map[string]WindowsTask
	Features map[string]bool
	// Now is the guest's clock (zero: a fixed time); FileTimes the last
	// write times of the files the steps and tasks wrote.
	Now       time.Time
	FileTimes map[string]time.Time
}

// WindowsImage is what the guest holds when sysprep runs, which every
// clone inherits.
type WindowsImage struct {
	// Files are the uploaded files still on the guest, by upload path.
	Files map[string][]byte
	// OperationalLog is the PowerShell Operational log then.
	OperationalLog []string
}

// NewWindows is a Windows guest whose every step succeeds.
func NewWindows() *Windows {
	dirs := map[string]bool{}
	for _, d := range freshWindowsDirs {
		dirs[d] = true
	}
	return &Windows{Files: map[string][]byte{}, Exit: map[string]int{}, Output: map[string]string{}, Dirs: dirs}
}

// freshWindowsDirs are folders a freshly installed Windows Server has; not
// C:/Windows/Setup/Scripts, which Setup does not create.
var freshWindowsDirs = []string{"c:", "c:/windows", "c:/windows/temp", "c:/windows/system32", "c:/windows/system32/sysprep",
	"c:/windows/setup", "c:/windows/panther", "c:/programdata", "c:/program files", "c:/users"}

// mkdirPaths finds each folder of a `New-Item -ItemType Directory -Force
// -Path` command: one quoted path or a list of them.
var (
	mkdirPaths = regexp.MustCompile(`New-Item -ItemType Directory -Force -Path (@\([^)]*\)|'(?:[^']|'')*')`)
	quotedPath = regexp.MustCompile(`'((?:[^']|'')*)'`)
)

var (
	setAsideFrom = regexp.MustCompile(`\$setup = '([^']+)'`)
	setAsideTo   = regexp.MustCompile(`\$before = '([^']+)'`)
	setAsideMark = regexp.MustCompile(`Select-String -LiteralPath \$setup -SimpleMatch -Quiet -Pattern '([^']+)'`)
	setAsideMove = regexp.MustCompile(`(?m)^    Move-Item -LiteralPath \$setup -Destination \$before$`)
)

// setAside plays a script that renames a file ($setup) not holding its
// mark to $before, and fails when $before is taken.
func (g *Windows) setAside(script string) (string, int) {
	from, to, mark := setAsideFrom.FindStringSubmatch(script), setAsideTo.FindStringSubmatch(script), setAsideMark.FindStringSubmatch(script)
	if from == nil || to == nil || mark == nil || !setAsideMove.MatchString(script) {
		return "", 0
	}
	setup, before := remote.UploadPath(from[1]), remote.UploadPath(to[1])
	data, ok := g.Files[setup]
	if !ok || strings.Contains(strings.ToLower(string(data)), strings.ToLower(mark[1])) {
		return "", 0
	}
	if _, taken := g.Files[before]; taken {
		return from[1] + " is not kubenode's, and " + to[1] + " is taken\r\n", 1
	}
	g.Files[before] = data
	delete(g.Files, setup)
	return "changed: " + from[1] + " renamed " + to[1] + "\r\n", 0
}

// mkdir records the folders a New-Item -ItemType Directory -Force script
// creates, with their parents (-Force creates them too).
func (g *Windows) mkdir(script string) {
	for _, m := range mkdirPaths.FindAllStringSubmatch(script, -1) {
		for _, q := range quotedPath.FindAllStringSubmatch(m[1], -1) {
			dir := strings.ToLower(remote.UploadPath(strings.ReplaceAll(q[1], "''", "'")))
			for ; dir != "." && dir != "/" && !g.Dirs[dir]; dir = path.Dir(dir) {
				g.Dirs[dir] = true
			}
		}
	}
}

var (
	fileArg = regexp.MustCompile(`-File "([^"]+)"$`)
	// EncodedRE finds the script of a -EncodedCommand.
	EncodedRE = regexp.MustCompile(`-EncodedCommand ([A-Za-z0-9+/=]+)$`)
	artifact  = regexp.MustCompile(`Test-KubenodeArtifact -Name '([^']+)' -Path '([^']+)' -Want '([0-9a-f]+)'`)
	download  = regexp.MustCompile(`Get-KubenodeArtifact -Name '([^']+)' -Url '([^']+)' -Path '([^']+)' -Shown '([^']+)'`)
)

// DecodeEncoded undoes -EncodedCommand: base64 of UTF-16LE.
func DecodeEncoded(b64 string) (string, error) {
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(raw)%2 != 0 {
		return "", fmt.Errorf("not base64 of UTF-16LE: %v", err)
	}
	u := make([]uint16, len(raw)/2)
	for i := range u {
		u[i] = uint16(raw[2*i]) | uint16(raw[2*i+1])<<8
	}
	return string(utf16.Decode(u)), nil
}

func (g *Windows) Start(_ context.Context, cmd *packersdk.RemoteCmd) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.Commands = append(g.Commands, cmd.Command)
	if g.Sysprepped {
		g.AfterSysprep = append(g.AfterSysprep, cmd.Command)
		return errors.New("dial tcp 192.0.2.10:5985: connect: connection refused (Windows is powering off after sysprep)")
	}
	if g.resetting > 0 {
		g.resetting--
		g.Resets++
		return errors.New("read tcp 192.0.2.1:50123->192.0.2.10:5985: read: connection reset by peer")
	}
	if g.Boot > 0 && g.Lingering == 0 && (g.NeverBack || g.DownFor > 0) {
		g.DownFor--
		g.Refused++
		return errors.New("dial tcp 192.0.2.10:5985: connect: connection refused")
	}
	out, code := g.handle(cmd.Command)
	if len(g.Log) > 0 && g.Log[len(g.Log)-1] == "sysprep" && (code == 0 || code == packersdk.CmdDisconnect) {
		g.Sysprepped = true
	}
	go func() {
		if cmd.Stdout != nil {
			_, _ = io.WriteString(cmd.Stdout, out)
		}
		cmd.SetExited(code)
	}()
	return nil
}

func (g *Windows) handle(command string) (string, int) {
	switch {
	case strings.HasPrefix(command, "shutdown /r /t 5 "):
		g.Log = append(g.Log, "restart")
		g.Boot++
		return "", 0
	case EncodedRE.MatchString(command):
		script, err := DecodeEncoded(EncodedRE.FindStringSubmatch(command)[1])
		if err != nil {
			return "Cannot process the command because the value specified with -EncodedCommand is not properly encoded", 1
		}
		return g.query(script)
	case fileArg.MatchString(command):
		file := fileArg.FindStringSubmatch(command)[1]
		script, ok := g.Files[remote.UploadPath(file)]
		if !ok {
			return "The argument '" + file + "' to the -File parameter does not exist.", 1
		}
		// The script's name without its order prefix: the step.
		_, step, _ := strings.Cut(strings.TrimSuffix(path.Base(remote.UploadPath(file)), ".ps1"), "-")
		play, ok := windowsSteps[step]
		if !ok {
			panic(fmt.Sprintf("guesttest: the Windows double knows no step %q (script %s): add it to windowsSteps with what the guest does", step, file))
		}
		g.Log = append(g.Log, step)
		if suspiciousScriptBlock.MatchString(string(script)) {
			g.OperationalLog = append(g.OperationalLog, string(script))
		}
		return play(g, step, string(script))
	}
	return "'" + command + "' is not recognized as an internal or external command", 1
}

// windowsSteps are the steps' scripts the double plays, by step: the name
// of the uploaded script without its order prefix (NN-<step>.ps1). A
// step not in it panics: a new step needs its behaviour here.
var windowsSteps = map[string]func(g *Windows, step, script string) (string, int){
	"fetch-artifacts":    func(g *Windows, _, script string) (string, int) { return g.fetch(script) },
	"verify-artifacts":   func(g *Windows, _, script string) (string, int) { return g.verify(script) },
	"automatic-updates":  (*Windows).step,
	"windows-update":     (*Windows).update,
	"containers-feature": (*Windows).containersFeature,
	"registry":           (*Windows).step,
	"time-sync":          (*Windows).step,
	"containerd":         (*Windows).step,
	"cni":                (*Windows).step,
	"kubelet":            (*Windows).step,
	"crictl":             (*Windows).step,
	"images":             (*Windows).step,
	"defender":           (*Windows).step,
	"cloudbase-init":     (*Windows).step,
	"joiner":             (*Windows).step,
	"permissions":        (*Windows).step,
	"self-check":         (*Windows).step,
	"cleanup":            (*Windows).step,
	"sysprep": func(g *Windows, step, script string) (string, int) {
		if out, code := g.sysprep(script); code != 0 {
			return out, code
		}
		return g.step(step, script)
	},
}

// step plays a step that succeeds unless Exit says otherwise, printing
// Output, after the ACLs its script sets, and records what a step that
// succeeds leaves (effects); containers-feature asks for a restart when
// NeedsRestart, before the first one.
func (g *Windows) step(step, script string) (string, int) {
	out := "changed: did " + step + "\r\n" + g.playACLs(script) + g.Output[step]
	if step == "containers-feature" && g.NeedsRestart && g.Boot == 0 {
		out += restartMarker + "\r\n"
	}
	if g.Exit[step] == 0 {
		g.effects(script)
	}
	return out, g.Exit[step]
}

// update plays a windows-update round: the next of Updates, then a round
// that finds nothing.
func (g *Windows) update(step, script string) (string, int) {
	round := 0
	for _, e := range g.Log {
		if e == step {
			round++
		}
	}
	if g.UpdateTaskNeverStarts {
		return g.neverStartedUpdate(script)
	}
	if round <= len(g.Updates) {
		return g.Updates[round-1], g.Exit[step]
	}
	return "ok: no update to install\r\nok: no restart needed\r\n", g.Exit[step]
}

// windowsQueryMarker starts the first line of the short scripts the flow
// runs with -EncodedCommand; the query's name follows it.
const windowsQueryMarker = "# kubenode-bake query: "

// windowsQueries are the short scripts the double answers, by name. A
// name not in it panics, as an unknown step does.
var windowsQueries = map[string]func(g *Windows, script string) (string, int){
	"staging": (*Windows).makeDirs,
	// The sysprep step's preparation makes the first-boot files' folders
	// and sets an existing SetupComplete.cmd aside, which the double
	// plays from its lines.
	"first-boot-prepare": (*Windows).makeDirs,
	"boot-check": func(g *Windows, _ string) (string, int) {
		g.Log = append(g.Log, "boot-check")
		boot, servicing := g.Boot, false
		if g.Boot > 0 && g.Lingering > 0 {
			g.Lingering--
			boot--
		} else if g.Boot > 0 && g.Servicing > 0 {
			g.Servicing--
			servicing = true
		} else if g.Boot > g.backBoot {
			g.backBoot = g.Boot
			g.resetting = g.ResetAfterBack
		}
		return fmt.Sprintf("kubenode-boot: 2026-11-22T10:%02d:00.0000000Z servicing=%t\r\n", boot, servicing), 0
	},
	"windows-build": func(g *Windows, _ string) (string, int) { return g.Build + "\r\n", 0 },
	"windows-os": func(g *Windows, _ string) (string, int) {
		return "kubenode-os: " + g.Build + " Windows Server 2022 Datacenter\r\n", 0
	},
	"joiner-version": func(*Windows, string) (string, int) { return "joiner v0.9.1\r\n", 0 },
	"inventory":      (*Windows).inventory,
}

// WindowsFeatures are the features a fresh Windows Server Core has
// installed; the double adds Containers once the containers-feature step
// has run.
var WindowsFeatures = []string{"FileAndStorage-Services", "PowerShell", "PowerShellRoot", "Storage-Services", "Windows-Defender", "WoW64-Support"}

var (
	inventoryDirs = regexp.MustCompile(`foreach \(\$dir in @\(([^)]*)\)\)`)
	binaryName    = regexp.MustCompile(`(?i)\.(exe|dll)$`)
)

// inventory answers the inventory query: the features, then each .exe
// and .dll under the folders its script lists, with its sha256.
func (g *Windows) inventory(script string) (string, int) {
	var out strings.Builder
	features := slices.Clone(WindowsFeatures)
	if slices.Contains(g.Log, "containers-feature") {
		features = append(features, "Containers")
	}
	for _, f := range features {
		out.WriteString("kubenode-feature: " + f + "\r\n")
	}
	m := inventoryDirs.FindStringSubmatch(script)
	if m == nil {
		return "the inventory query lists no folders", 1
	}
	var files []string
	for _, q := range quotedPath.FindAllStringSubmatch(m[1], -1) {
		dir := strings.ToLower(remote.UploadPath(strings.ReplaceAll(q[1], "''", "'"))) + "/"
		for p := range g.Files {
			if strings.HasPrefix(strings.ToLower(p), dir) && binaryName.MatchString(p) {
				files = append(files, p)
			}
		}
	}
	slices.Sort(files)
	for _, p := range files {
		sum := sha256.Sum256(g.Files[p])
		fmt.Fprintf(&out, "kubenode-file: %s %s\r\n", hex.EncodeToString(sum[:]), strings.ReplaceAll(p, "/", `\`))
	}
	return out.String(), 0
}

// query answers a -EncodedCommand script by the name on its first line;
// a script without one panics.
func (g *Windows) query(script string) (string, int) {
	first, _, _ := strings.Cut(script, "\n")
	name, named := strings.CutPrefix(strings.TrimSpace(first), windowsQueryMarker)
	if !named {
		panic("guesttest: the Windows double got an -EncodedCommand script without a query name (" + windowsQueryMarker + "<name>): " + script)
	}
	answer, ok := windowsQueries[name]
	if !ok {
		panic(fmt.Sprintf("guesttest: the Windows double knows no query %q: add it to windowsQueries with what the guest answers", name))
	}
	return answer(g, script)
}

// makeDirs plays a script that makes folders and may set a file aside.
func (g *Windows) makeDirs(script string) (string, int) {
	g.Log = append(g.Log, "mkdir")
	g.mkdir(script)
	return g.setAside(script)
}

var (
	updateDeadline = regexp.MustCompile(`\$deadline = \(Get-Date\)\.AddMinutes\((\d+)\)`)
	updateStartBy  = regexp.MustCompile(`\$startBy = \(Get-Date\)\.AddSeconds\((\d+)\)`)
	updatePoll     = regexp.MustCompile(`Start-Sleep -Seconds (\d+)`)
	// updateNotStarted is the step's throw for a task that has not run
	// (or ended without writing its log): a format string of the state,
	// the last result and the last run time.
	updateNotStarted   = regexp.MustCompile(`throw \('(The Windows Update task [^']*)' -f \$state, \$info\.LastTaskResult, \$info\.LastRunTime\)`)
	updateStillRunning = regexp.MustCompile(`throw '(Windows Update was still running [^']*)'`)
)

// neverStartedUpdate plays the windows-update step's wait loop, read from
// its script, against a task that never starts: every poll sees the state
// Ready, no log and the last result 0x41303. A script with a start check
// ($startBy and its throw) fails once $startBy has passed; one without
// waits until its $deadline (windows_update_timeout) and throws there. The
// guest time the loop waits is added to UpdateWaited.
func (g *Windows) neverStartedUpdate(script string) (string, int) {
	poll := time.Second
	if m := updatePoll.FindStringSubmatch(script); m != nil {
		n, _ := strconv.Atoi(m[1])
		poll = time.Duration(n) * time.Second
	}
	roundUp := func(d time.Duration) time.Duration { return (d + poll - 1) / poll * poll }
	if by, throw := updateStartBy.FindStringSubmatch(script), updateNotStarted.FindStringSubmatch(script); by != nil && throw != nil {
		n, _ := strconv.Atoi(by[1])
		g.UpdateWaited += roundUp(time.Duration(n)*time.Second + poll)
		msg := strings.NewReplacer("{0}", "Ready", "{1:X8}", "00041303", "{2}", "11/30/1999 00:00:00").Replace(throw[1])
		return msg + "\r\n", 1
	}
	if dl := updateDeadline.FindStringSubmatch(script); dl != nil {
		n, _ := strconv.Atoi(dl[1])
		g.UpdateWaited += roundUp(time.Duration(n)*time.Minute + poll)
		if throw := updateStillRunning.FindStringSubmatch(script); throw != nil {
			return throw[1] + "\r\n", 1
		}
	}
	return "the windows-update script's wait loop never ends for a task that never starts", 1
}

var (
	// suspiciousScriptBlock: script blocks PowerShell logs in full without
	// being asked to (a list of keywords in PowerShell's source, Add-Type
	// and DllImport among them).
	suspiciousScriptBlock = regexp.MustCompile(`(?i)\bAdd-Type\b|DllImport`)
	clearOperational      = regexp.MustCompile(`(?i)wevtutil(\.exe)?'? .*'cl', 'Microsoft-Windows-PowerShell/Operational'`)
	sysprepExe            = regexp.MustCompile(`(?i)sysprep\.exe' -ArgumentList`)
	unattendArg           = regexp.MustCompile(`'/unattend:([^']+)'`)
	// sshKeyRemoval and tempRemoval are the sysprep script's removals of
	// files by name in a folder, and in the build account's %TEMP%.
	sshKeyRemoval = regexp.MustCompile(`Get-ChildItem -LiteralPath '([^']+)' -Force -ErrorAction SilentlyContinue \| Where-Object \{ \$_\.Name -eq '([^']+)' -or \$_\.Name -like '([^']+)' \}\)\) \{\r?\n\s*Remove-Item -LiteralPath \$file\.FullName -Force`)
	tempRemoval   = regexp.MustCompile(`Get-ChildItem -Path \(Join-Path \$env:TEMP '([^']+)'\) -Force -ErrorAction SilentlyContinue\)\) \{\r?\n\s*Remove-Item -LiteralPath \$file\.FullName -Force`)
)

// WindowsTemp is the build account's %TEMP% on the double, by upload path.
const WindowsTemp = "C:/Users/Administrator/AppData/Local/Temp"

// removeMatching removes the files directly in dir whose name matches one
// of the wildcard patterns, as PowerShell's -like and -eq do (case-insensitive).
func (g *Windows) removeMatching(dir string, patterns ...string) {
	for p := range g.Files {
		if !strings.EqualFold(path.Dir(p), dir) {
			continue
		}
		for _, pattern := range patterns {
			if ok, _ := path.Match(strings.ToLower(pattern), strings.ToLower(path.Base(p))); ok {
				delete(g.Files, p)
			}
		}
	}
}

// sysprep plays the sysprep step's script up to sysprep.exe: the
// Operational log cleared if the script clears it before it starts
// sysprep, the files it removes by name before then removed, and sysprep failing when its answer file is not on the guest;
// what the guest then holds is kept in AtSysprep.
func (g *Windows) sysprep(script string) (string, int) {
	run := sysprepExe.FindStringIndex(script)
	if run == nil {
		return "the sysprep step's script does not start sysprep.exe", 1
	}
	if c := clearOperational.FindStringIndex(script); c != nil && c[0] < run[0] {
		g.OperationalLog = nil
	}
	if m := unattendArg.FindStringSubmatch(script); m != nil {
		if _, ok := g.Files[remote.UploadPath(m[1])]; !ok {
			return "sysprep failed: exit code 1, image state IMAGE_STATE_COMPLETE\r\n" +
				"--- last lines of C:\\Windows\\System32\\Sysprep\\Panther\\setuperr.log:\r\n" +
				"Error [0x0f0082] SYSPRP ... the unattend file " + m[1] + " could not be found\r\n", 1
		}
	}
	before := script[:run[0]]
	for _, m := range sshKeyRemoval.FindAllStringSubmatch(before, -1) {
		g.removeMatching(remote.UploadPath(m[1]), m[2], m[3])
	}
	for _, m := range tempRemoval.FindAllStringSubmatch(before, -1) {
		g.removeMatching(WindowsTemp, m[1])
	}
	g.AtSysprep = &WindowsImage{Files: maps.Clone(g.Files), OperationalLog: slices.Clone(g.OperationalLog)}
	return "", 0
}

// fetch does what the fetch script does, from its own lines: it downloads
// each artifact over real HTTP (GET, no proxy) into Files, damaged when its
// path is Corrupt.
func (g *Windows) fetch(script string) (string, int) {
	var out strings.Builder
	code := 0
	client := &http.Client{Transport: &http.Transport{Proxy: nil}, Timeout: time.Minute}
	for _, m := range download.FindAllStringSubmatch(script, -1) {
		name, url, p, shown := m[1], m[2], remote.UploadPath(m[3]), m[4]
		data, err := get(client, url)
		if err != nil {
			fmt.Fprintf(&out, "download failed: artifact %s from %s: %v\r\n", name, shown, err)
			code = 1
			continue
		}
		if p == g.Corrupt {
			data = append(data, 0)
		}
		g.Files[p] = data
		g.Log = append(g.Log, "download "+p)
		fmt.Fprintf(&out, "ok: downloaded artifact %s\r\n", name)
	}
	return out.String(), code
}

func get(client *http.Client, url string) ([]byte, error) {
	resp, err := client.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("The remote server returned an error: (%d) %s", resp.StatusCode, http.StatusText(resp.StatusCode))
	}
	return io.ReadAll(resp.Body)
}

// verify does what the verify script does, from its own lines.
func (g *Windows) verify(script string) (string, int) {
	var out strings.Builder
	code := 0
	for _, m := range artifact.FindAllStringSubmatch(script, -1) {
		name, p, want := m[1], m[2], m[3]
		data, ok := g.Files[remote.UploadPath(p)]
		if !ok {
			fmt.Fprintf(&out, "missing: artifact %s: %s is not on the guest\r\n", name, p)
			code = 1
			continue
		}
		sum := sha256.Sum256(data)
		if got := hex.EncodeToString(sum[:]); got != want {
			fmt.Fprintf(&out, "mismatch: artifact %s: %s has sha256 %s, want %s\r\n", name, p, got, want)
			code = 1
			continue
		}
		fmt.Fprintf(&out, "ok: artifact %s\r\n", name)
	}
	return out.String(), code
}

func (g *Windows) Upload(p string, r io.Reader, _ *os.FileInfo) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.Sysprepped {
		g.AfterSysprep = append(g.AfterSysprep, "upload "+p)
		return errors.New("dial tcp 192.0.2.10:5985: connect: connection refused (Windows is powering off after sysprep)")
	}
	if g.resetting > 0 {
		g.resetting--
		g.Resets++
		return errors.New("read tcp 192.0.2.1:50123->192.0.2.10:5985: read: connection reset by peer")
	}
	if strings.Contains(p, `\`) {
		return fmt.Errorf("upload path %q: the SSH communicator needs forward slashes", p)
	}
	if dir := strings.ToLower(path.Dir(p)); g.UploadsNeedDir && !g.Dirs[dir] {
		return fmt.Errorf("scp: %s: No such file or directory", path.Dir(p))
	}
	if p == g.Corrupt {
		data = append(data, 0)
	}
	g.Files[p] = data
	g.Log = append(g.Log, "upload "+p)
	return nil
}

func (g *Windows) UploadDir(string, string, []string) error { return errors.New("not used") }
func (g *Windows) Download(string, io.Writer) error         { return errors.New("not used") }
func (g *Windows) DownloadDir(string, string, []string) error {
	return errors.New("not used")
}

// Steps is the log without uploads and boot checks.
// Snapshot returns the recorded commands, log and refusals under the lock:
// a Start the flow gave up waiting for may still be running.
func (g *Windows) Snapshot() (commands, log []string, refused int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.Commands), slices.Clone(g.Log), g.Refused
}

func (g *Windows) Steps() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []string
	for _, e := range g.Log {
		if !strings.HasPrefix(e, "upload ") && !strings.HasPrefix(e, "download ") && e != "boot-check" {
			out = append(out, e)
		}
	}
	return out
}
