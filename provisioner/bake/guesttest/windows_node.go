// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package guesttest

import (
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/remote"
)

// What a step that succeeds leaves on the guest, as the double reads it
// from the step's script: the files it writes with Set-KubenodeFile (a
// literal path and content) or copies with Copy-KubenodeFile (from a
// file the double holds), the services it registers (the service
// fragment's $binPath, then the Win32_Service query by name), and the
// scheduled tasks it registers (New-ScheduledTaskAction, then
// Register-ScheduledTask) or removes (Unregister-ScheduledTask). A
// scheduled task is run by RunTask.

// WindowsTask is a scheduled task on the double.
type WindowsTask struct{ Execute, Arguments string }

const psLiteral = `'((?:[^']|'')*)'`

var (
	setFileRE    = regexp.MustCompile(`(?m)^\s*Set-KubenodeFile -Path ` + psLiteral + ` -Content ` + psLiteral)
	copyFileRE   = regexp.MustCompile(`Copy-KubenodeFile -Source ` + psLiteral + ` -Destination ` + psLiteral)
	serviceRE    = regexp.MustCompile(`\$binPath = ` + psLiteral + `\r?\n\$service = Get-CimInstance -ClassName Win32_Service -Filter 'Name=''([^']+)'''`)
	taskActionRE = regexp.MustCompile(`New-ScheduledTaskAction -Execute ` + psLiteral + ` -Argument ` + psLiteral + `[^\n]*\n(?:[^\n]*\n)*?\s*Register-ScheduledTask -TaskName ` + psLiteral)
	taskRemoveRE = regexp.MustCompile(`Unregister-ScheduledTask -TaskName ` + psLiteral)
)

// undouble undoes a single-quoted PowerShell literal's doubled quotes.
func undouble(s string) string { return strings.ReplaceAll(s, "''", "'") }

// effects records what a step's script leaves on the guest.
func (g *Windows) effects(script string) {
	if g.Services == nil {
		g.Services = map[string]string{}
	}
	if g.Tasks == nil {
		g.Tasks = map[string]WindowsTask{}
	}
	for _, m := range setFileRE.FindAllStringSubmatch(script, -1) {
		p := remote.UploadPath(undouble(m[1]))
		g.Files[p] = []byte(undouble(m[2]))
		g.touch(p)
	}
	for _, m := range copyFileRE.FindAllStringSubmatch(script, -1) {
		if data, ok := g.Files[remote.UploadPath(undouble(m[1]))]; ok {
			to := remote.UploadPath(undouble(m[2]))
			g.Files[to] = data
			g.touch(to)
		}
	}
	for _, m := range serviceRE.FindAllStringSubmatch(script, -1) {
		g.Services[m[2]] = undouble(m[1])
	}
	for _, m := range taskActionRE.FindAllStringSubmatch(script, -1) {
		g.Tasks[undouble(m[3])] = WindowsTask{Execute: undouble(m[1]), Arguments: undouble(m[2])}
	}
	for _, m := range taskRemoveRE.FindAllStringSubmatch(script, -1) {
		delete(g.Tasks, undouble(m[1]))
	}
}

// now is the guest's clock: Now, or a fixed time.
func (g *Windows) now() time.Time {
	if g.Now.IsZero() {
		return time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	}
	return g.Now
}

// touch sets a file's last write time to now.
func (g *Windows) touch(p string) {
	if g.FileTimes == nil {
		g.FileTimes = map[string]time.Time{}
	}
	g.FileTimes[p] = g.now()
}

var (
	taskFileRE    = regexp.MustCompile(`-File (\S+)$`)
	rotateLogRE   = regexp.MustCompile(`(?m)^\$log = ` + psLiteral + `\r?$`)
	rotateBytesRE = regexp.MustCompile(`(?m)^\$maxBytes = (\d+)\r?$`)
	rotateAgeRE   = regexp.MustCompile(`(?m)^\$maxAgeHours = (\d+)\r?$`)
	// rotateCopyRE: the log is copied aside and truncated in place, so
	// kube-log-runner, which holds it open, goes on writing to it.
	rotateCopyRE = regexp.MustCompile(`\$stream\.CopyTo\(\$copy\)[\s\S]*\$stream\.SetLength\(0\)`)
)

// RunTask runs a scheduled task as the Task Scheduler would: the script
// its action runs with -File, read from the guest. The double knows one
// kind, the kubelet log's rotation, and plays it from the script's own
// values: a log past $maxBytes is copied aside as
// <name>-<yyyyMMdd-HHmmss><ext> and truncated in place, and files moved
// aside more than $maxAgeHours ago (by FileTimes; a file without one is
// new) are removed.
func (g *Windows) RunTask(name string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	task, ok := g.Tasks[name]
	if !ok {
		return fmt.Errorf("no scheduled task %s", name)
	}
	file := taskFileRE.FindStringSubmatch(task.Arguments)
	if file == nil {
		return fmt.Errorf("task %s runs no script (-File): %s %s", name, task.Execute, task.Arguments)
	}
	script, ok := g.Files[remote.UploadPath(file[1])]
	if !ok {
		return fmt.Errorf("task %s: its script %s is not on the guest", name, file[1])
	}
	s := string(script)
	logM, bytesM, ageM := rotateLogRE.FindStringSubmatch(s), rotateBytesRE.FindStringSubmatch(s), rotateAgeRE.FindStringSubmatch(s)
	if logM == nil || bytesM == nil || ageM == nil || !rotateCopyRE.MatchString(s) {
		return fmt.Errorf("task %s: the double cannot play %s", name, file[1])
	}
	log := remote.UploadPath(undouble(logM[1]))
	maxBytes, _ := strconv.Atoi(bytesM[1])
	maxAge, _ := strconv.Atoi(ageM[1])
	dir, base := path.Dir(log), path.Base(log)
	ext := path.Ext(base)
	stem := strings.TrimSuffix(base, ext)
	if data, ok := g.Files[log]; ok && len(data) > maxBytes {
		aside := dir + "/" + stem + "-" + g.now().Format("20060102-150405") + ext
		g.Files[aside] = data
		g.touch(aside)
		g.Files[log] = nil
		g.touch(log)
	}
	cutoff := g.now().Add(-time.Duration(maxAge) * time.Hour)
	for p := range g.Files {
		if ok, _ := path.Match(dir+"/"+stem+"-*"+ext, p); ok && g.FileTimes[p].Before(cutoff) && !g.FileTimes[p].IsZero() {
			delete(g.Files, p)
			delete(g.FileTimes, p)
		}
	}
	return nil
}

// WindowsFeatureRestarts are the features the double's Windows has, by
// name, each with whether installing it asks for a restart. Containers'
// restart is NeedsRestart's.
var WindowsFeatureRestarts = map[string]bool{
	"Containers": false, "Hyper-V-PowerShell": false,
	"RemoteAccess": true, "Routing": true, "RSAT-RemoteAccess-PowerShell": false, "DirectAccess-VPN": true,
	"NET-Framework-45-Core": false, "Web-Server": false,
}

var featuresRE = regexp.MustCompile(`(?m)^\$features = @\(((?:'(?:[^']|'')*'(?:, )?)*)\)\r?$`)

// containersFeature plays the containers-feature step: each feature of its
// $features list is installed, a name Windows does not have fails the step
// as the script's throw does, and installing one that asks for a restart
// prints the restart marker, as NeedsRestart does before the first
// restart.
func (g *Windows) containersFeature(step, script string) (string, int) {
	m := featuresRE.FindStringSubmatch(script)
	if m == nil {
		return "the containers-feature script has no $features list", 1
	}
	if g.Features == nil {
		g.Features = map[string]bool{}
	}
	restart := false
	for _, q := range quotedPath.FindAllStringSubmatch(m[1], -1) {
		name := unquote(q[1])
		asks, known := WindowsFeatureRestarts[name]
		if !known {
			return "windows_features: this Windows has no feature named " + name + " (Get-WindowsFeature lists the names)\r\n", 1
		}
		if !g.Features[name] {
			g.Features[name] = true
			restart = restart || asks
		}
	}
	out, code := g.step(step, script)
	if restart && !strings.Contains(out, restartMarker) {
		out += restartMarker + "\r\n"
	}
	return out, code
}

// restartMarker is the line a step prints when Windows must restart.
const restartMarker = "kubenode-bake: restart required"
