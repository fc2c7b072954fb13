// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package windows

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"

	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
	"github.com/hashicorp/packer-plugin-sdk/retry"

	"github.com/kubenode/packer-plugin-kubenode/internal/baked"
	"github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/units"
	"github.com/kubenode/packer-plugin-kubenode/internal/psquote"
	"github.com/kubenode/packer-plugin-kubenode/internal/versions"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/deliver"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/node"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/remote"
)

// guest is the connection to a Windows guest, with the flow's restarts,
// Windows Update rounds and sysprep.
type guest struct {
	*remote.Remote
	// settleUntil, set by a restart, is until when the first command after
	// it is tried again when it cannot start (see settled).
	settleUntil time.Time
}

// Upload is a file the Windows flow puts on the guest, and checks there,
// before anything is installed.
type Upload struct {
	// Name is the artifact's name in messages; default: Remote's file name.
	Name string
	// Local is the file on this machine.
	Local string
	// Remote is its path on the guest, e.g. C:\Windows\Temp\kubenode\kubelet.exe.
	Remote string
	// SHA256 is the hex digest the guest must find.
	SHA256 string
	// URL, when set, is where the guest downloads the file from instead of
	// its upload through the communicator; Shown is the URL without its
	// secret path, for messages.
	URL, Shown string
}

func (u Upload) name() string {
	if u.Name != "" {
		return u.Name
	}
	return path.Base(remote.UploadPath(u.Remote))
}

// The restart after the Containers feature: the guest is asked for its boot
// time before, and polled after, with a growing delay, until it answers
// with a new one (the way Packer's windows-restart provisioner waits:
// commands fail while the machine is down, then it answers again). Tests
// shrink these.
var (
	restartBackoff = retry.Backoff{InitialBackoff: 5 * time.Second, MaxBackoff: 30 * time.Second, Multiplier: 1.5}
	// restartAttempt bounds one check: a connection to a machine that
	// is going down can hang.
	restartAttempt = 2 * time.Minute
	// settleBudget bounds how long the first command after a
	// restart (its script's upload and its start) is tried again: WinRM can
	// answer the boot check and then reset the next connection while
	// services still start. settleBackoff spaces the tries.
	settleBudget  = 2 * time.Minute
	settleBackoff = retry.Backoff{InitialBackoff: 2 * time.Second, MaxBackoff: 15 * time.Second, Multiplier: 2}
)

// restartCommand restarts in 5 s, so the command returns its exit
// code before the connection drops; what (a constant) is the reason Windows
// logs.
func restartCommand(what string) string {
	return `shutdown /r /t 5 /c "kubenode-bake: ` + what + `"`
}

// Restart reasons, in the UI and in the restart command.
const (
	restartForContainers = "the Containers feature"
	restartForUpdates    = "Windows updates"
)

// windowsUpdateMaxRounds bounds the windows-update rounds: a round that
// still installs or restarts after this many means an update that does not
// stick.
const windowsUpdateMaxRounds = 5

// bootCheck prints the boot time and whether component servicing
// (the features' second phase) is still going on.
const bootCheck = `$os = Get-CimInstance -ClassName Win32_OperatingSystem
$cbs = 'HKLM:\SOFTWARE\Microsoft\Windows\CurrentVersion\Component Based Servicing'
$servicing = (Test-Path -LiteralPath ($cbs + '\RebootInProgress')) -or (Test-Path -LiteralPath ($cbs + '\PackagesPending'))
Write-Output ('kubenode-boot: ' + $os.LastBootUpTime.ToUniversalTime().ToString('o') + ' servicing=' + $servicing)`

// result is what run learned on the guest: the images the images step
// listed, the version the installed joiner reports and the inventory.
type result struct {
	Images    []baked.Image
	Joiner    string
	Inventory baked.Inventory
}

// run bakes a Windows guest: it uploads the artifacts to the plan's
// staging directory (or has the guest download those with a URL from srv,
// which it closes once they have arrived), checks their sha256 on the
// guest, then runs each step's script (uploaded, then run with powershell
// -File: a script does not fit the 8191-character command line),
// restarting Windows after the Containers feature when it asks for it.
// windows-update runs in rounds (see windowsUpdate). Every step reports in
// the UI; a failed step's command, exit code and last output lines are
// shown and returned.
func run(ctx context.Context, rem *remote.Remote, plan Plan, uploads []Upload, srv *deliver.Server) (result, error) {
	var res result
	steps, err := Steps(plan)
	if err != nil {
		return res, err
	}
	plan = plan.WithDefaults()
	r := &guest{Remote: rem}
	ui := rem.UI
	ui.Say(fmt.Sprintf("kubenode-bake: Windows Server %s (build %d), Kubernetes %s, containerd %s, CNI plugins %s, pause image %s",
		plan.Windows.Version, plan.Windows.Build, plan.Kubernetes.Version, plan.Containerd.Version, plan.CNIPlugins.Version, plan.PauseImage))

	mkdir := "New-Item -ItemType Directory -Force -Path " + psquote.Quote(plan.Staging) + " | Out-Null"
	if _, err := r.Run(ctx, "staging", powershellQuery(queryStaging, mkdir)); err != nil {
		return res, err
	}
	var fetch []Upload
	for _, u := range uploads {
		if u.URL != "" {
			fetch = append(fetch, u)
		}
	}
	if len(fetch) < len(uploads) {
		ui.Say(fmt.Sprintf("kubenode-bake: uploading %d artifacts to %s through the communicator", len(uploads)-len(fetch), plan.Staging))
	}
	for _, u := range uploads {
		if u.URL != "" {
			continue
		}
		ui.Message(fmt.Sprintf("%s: %s -> %s", u.name(), u.Local, u.Remote))
		if err := r.Upload(u.Local, u.Remote); err != nil {
			return res, fmt.Errorf("uploading artifact %s: %w", u.name(), err)
		}
	}
	if len(fetch) > 0 {
		ui.Say(fmt.Sprintf("kubenode-bake [fetch-artifacts]: the guest downloads %d artifacts to %s over HTTP", len(fetch), plan.Staging))
		out, err := r.script(ctx, plan.Staging, "00-fetch-artifacts", FetchScript(fetch))
		var se *remote.StepError
		switch {
		case err == nil:
		case !errors.As(err, &se):
			return res, err
		case srv == nil || !srv.Fallback:
			return res, fmt.Errorf("the guest could not download the artifacts, so nothing was installed:\n  %s",
				strings.Join(node.LinesWith(out, "download failed: "), "\n  "))
		default:
			// HTTP was the default, not asked for: what the guest could
			// not download goes through the communicator, as it did
			// before there was a server.
			failed := node.LinesWith(out, "download failed: ")
			var missed []Upload
			for _, u := range fetch {
				if len(node.LinesWith(out, "download failed: artifact "+u.name()+" from ")) > 0 {
					missed = append(missed, u)
				}
			}
			if len(failed) > 0 {
				ui.Error(fmt.Sprintf("kubenode-bake: warning: the guest could not download %d artifacts (%s); they are uploaded through WinRM/SSH instead, which is slow. "+
					"Let the guest reach this machine's port (artifact_http_port names one), or set artifact_delivery = \"communicator\" to skip the attempt", len(missed), failed[0]))
			}
			for _, u := range missed {
				ui.Message(fmt.Sprintf("%s: %s -> %s", u.name(), u.Local, u.Remote))
				if err := r.Upload(u.Local, u.Remote); err != nil {
					return res, fmt.Errorf("uploading artifact %s: %w", u.name(), err)
				}
			}
		}
	}
	if srv != nil {
		_ = srv.Close()
	}
	ui.Say("kubenode-bake [verify-artifacts]")
	out, err := r.script(ctx, plan.Staging, "00-verify-artifacts", VerifyScript(uploads))
	if err != nil {
		var se *remote.StepError
		if errors.As(err, &se) {
			return res, fmt.Errorf("the artifacts on the guest are not the ones checked on this machine, so nothing was installed:\n  %s",
				strings.Join(node.LinesWith(out, "mismatch: ", "missing: "), "\n  "))
		}
		return res, err
	}

	changed := 0
	for i, s := range steps {
		ui.Say(fmt.Sprintf("kubenode-bake [%s]", s.Name))
		if s.Name == stepSysprep {
			if res.Joiner, err = r.joinerVersion(ctx, plan); err != nil {
				return res, err
			}
			if res.Inventory, err = r.inventory(ctx); err != nil {
				return res, err
			}
			ui.Say(fmt.Sprintf("kubenode-bake: Windows baked, %d changes; sysprep generalizes it and powers it off", changed))
			return res, r.sysprep(ctx, plan, s.Script)
		}
		if s.Name == stepWindowsUpdate {
			installed, err := r.windowsUpdate(ctx, plan, fmt.Sprintf("%02d-%s", i+1, s.Name), s.Script)
			changed += installed
			if err != nil {
				return res, err
			}
			continue
		}
		out, err := r.script(ctx, plan.Staging, fmt.Sprintf("%02d-%s", i+1, s.Name), s.Script)
		if err != nil {
			return res, node.SelfCheckFailure(s.Name, out, err)
		}
		if s.Name == node.StepImages {
			res.Images = node.ParseImageListing(out)
		}
		changed += strings.Count(out, "changed: ")
		if s.Name == stepContainersFeature && strings.Contains(out, restartMarker) {
			if err := r.restart(ctx, plan.RestartTimeout, restartForContainers); err != nil {
				ui.Error(err.Error())
				return res, err
			}
		}
	}
	if res.Joiner, err = r.joinerVersion(ctx, plan); err != nil {
		return res, err
	}
	if res.Inventory, err = r.inventory(ctx); err != nil {
		return res, err
	}
	ui.Say(fmt.Sprintf("kubenode-bake: Windows baked, %d changes", changed))
	return res, nil
}

// joinerVersion asks the installed joiner for its version ("" without a
// joiner). It runs before sysprep: once sysprep returns, the closer removes
// WinRM and powers Windows off, so nothing is asked after.
func (r *guest) joinerVersion(ctx context.Context, plan Plan) (string, error) {
	if !plan.InstallJoiner {
		return "", nil
	}
	code, out, err := r.Exec(ctx, powershellQuery(queryJoinerVersion, "& "+psquote.Quote(units.WindowsJoinerPath)+" version"))
	fields := strings.Fields(out)
	if err != nil || code != 0 || len(fields) < 2 {
		err := fmt.Errorf("asking the guest for the joiner's version: exit %d, %v: %s", code, err, strings.TrimSpace(out))
		r.UI.Error(err.Error())
		return "", err
	}
	return fields[1], nil
}

// script uploads a step's script to the staging directory and runs it.
func (r *guest) script(ctx context.Context, staging, name string, script []byte) (string, error) {
	guestPath := staging + `\` + name + ".ps1"
	upload := func() error { return r.Comm.Upload(remote.UploadPath(guestPath), bytes.NewReader(script), nil) }
	if err := r.settled(ctx, "uploading the script of "+name, upload); err != nil {
		err = fmt.Errorf("step %s: uploading its script to %s: %w", name, guestPath, err)
		r.UI.Error(err.Error())
		return "", err
	}
	return r.run(ctx, stepName(name), powershellFile(guestPath))
}

// run is remote.Run, except for the first command after a restart: a
// command that could not start (the connection refused or reset; it never
// ran, so trying it again runs it once) is tried again until settleUntil.
func (r *guest) run(ctx context.Context, step, command string) (string, error) {
	if r.settleUntil.IsZero() {
		return r.Run(ctx, step, command)
	}
	tail := remote.NewLineTail()
	var cmd *packersdk.RemoteCmd
	err := r.settled(ctx, "step "+step, func() error {
		tail = remote.NewLineTail()
		cmd = &packersdk.RemoteCmd{Command: command, Stdout: tail, Stderr: tail}
		return cmd.RunWithUi(ctx, r.Comm, r.UI)
	})
	r.settleUntil = time.Time{}
	if err != nil {
		err = fmt.Errorf("step %s: starting `%s`: %w", step, command, err)
		r.UI.Error(err.Error())
		return "", err
	}
	if code := cmd.ExitStatus(); code != 0 {
		err := &remote.StepError{Step: step, Command: command, ExitCode: code, Tail: tail.String()}
		r.UI.Error(err.Error())
		return tail.All(), err
	}
	return tail.All(), nil
}

// settled runs f; after a restart, until settleUntil, it runs f again with
// a growing delay while f fails. Outside that window f runs once.
func (r *guest) settled(ctx context.Context, what string, f func() error) error {
	delay := settleBackoff.InitialBackoff
	for {
		err := f()
		if err == nil || r.settleUntil.IsZero() || ctx.Err() != nil || time.Now().Add(delay).After(r.settleUntil) {
			return err
		}
		r.UI.Message(fmt.Sprintf("the first command after the restart: %s failed (%v); trying again in %s", what, err, delay))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
		delay = min(time.Duration(float64(delay)*settleBackoff.Multiplier), settleBackoff.MaxBackoff)
	}
}

// stepName drops the order prefix of a script name.
func stepName(script string) string {
	if _, name, ok := strings.Cut(script, "-"); ok {
		return name
	}
	return script
}

// bootState asks the guest for its boot time and whether servicing runs.
func (r *guest) bootState(ctx context.Context) (boot string, servicing bool, err error) {
	code, out, err := r.Exec(ctx, powershellQuery(queryBootCheck, bootCheck))
	if err != nil {
		return "", false, err
	}
	for _, line := range strings.Split(out, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "kubenode-boot: ")
		if !ok {
			continue
		}
		boot, flag, _ := strings.Cut(rest, " servicing=")
		return boot, strings.EqualFold(flag, "True"), nil
	}
	return "", false, fmt.Errorf("the boot check exited with %d and printed no boot time: %s", code, strings.TrimSpace(out))
}

// windowsUpdate runs the windows-update step in rounds: each round
// searches, downloads and installs; when it printed restartMarker,
// Windows restarts; when it installed something, the next round searches
// again (an update can bring the next). It ends with a round that finds
// nothing and needs no restart, and fails after windowsUpdateMaxRounds
// rounds or when windows_update_timeout runs out: the first round's script
// stops itself within the whole timeout, later ones within what is left,
// and a restart's wait ends with it too. It returns the updates installed.
func (r *guest) windowsUpdate(ctx context.Context, plan Plan, name string, first []byte) (int, error) {
	timeout := plan.WindowsUpdateTimeout
	deadline := time.Now().Add(timeout)
	phase, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	outOfTime := func(round int) error {
		return fmt.Errorf("windows_update_timeout: Windows Update ran out of its %s after round %d, with updates still to install; "+
			"raise windows_update_timeout, or set windows_update = false", timeout, round)
	}
	installed := 0
	script := first
	for round := 1; ; round++ {
		if round > 1 {
			left := time.Until(deadline)
			if left <= 0 {
				err := outOfTime(round - 1)
				r.UI.Error(err.Error())
				return installed, err
			}
			script = windowsUpdateScript(plan.Staging, left)
			r.UI.Say(fmt.Sprintf("kubenode-bake [%s] round %d, %s left of windows_update_timeout", stepWindowsUpdate, round, left.Round(time.Second)))
		}
		out, err := r.script(ctx, plan.Staging, name, script)
		if err != nil {
			return installed, err
		}
		n := strings.Count(out, "changed: installed ")
		installed += n
		restart := strings.Contains(out, restartMarker)
		if n == 0 && !restart {
			r.UI.Say(fmt.Sprintf("Windows Update round %d: nothing left to install; %d updates installed in all", round, installed))
			return installed, nil
		}
		if round == windowsUpdateMaxRounds {
			err := fmt.Errorf("windows_update: Windows Update still installed updates or asked for a restart in round %d of %d; "+
				"an update that does not stick is named above (installed again each round); hide or fix it, or set windows_update = false", round, windowsUpdateMaxRounds)
			r.UI.Error(err.Error())
			return installed, err
		}
		if !restart {
			r.UI.Say(fmt.Sprintf("Windows Update round %d: %d updates installed, searching again", round, n))
			continue
		}
		r.UI.Say(fmt.Sprintf("Windows Update round %d: %d updates installed, restarting", round, n))
		if err := r.restart(phase, plan.RestartTimeout, restartForUpdates); err != nil {
			if ctx.Err() == nil && phase.Err() != nil {
				err = outOfTime(round)
			}
			r.UI.Error(err.Error())
			return installed, err
		}
	}
}

// restart restarts Windows for what (restartForContainers or
// restartForUpdates) and waits until it answers with a new boot time and
// has finished configuring features, for at most timeout.
func (r *guest) restart(ctx context.Context, timeout time.Duration, what string) error {
	before, _, err := r.bootState(ctx)
	if err != nil {
		return fmt.Errorf("restart: reading the boot time before restarting: %w", err)
	}
	r.UI.Say("kubenode-bake [restart]: Windows restarts to finish installing " + what)
	command := restartCommand(what)
	code, out, err := r.Exec(ctx, command)
	if err != nil {
		return fmt.Errorf("restart: `%s`: %w", command, err)
	}
	// 1115: a shutdown is in progress; 1190: one is scheduled already.
	if code != 0 && code != 1115 && code != 1190 {
		return &remote.StepError{Step: "restart", Command: command, ExitCode: code, Tail: "  " + strings.TrimSpace(out)}
	}
	r.UI.Message(fmt.Sprintf("waiting up to %s (restart_timeout) for Windows to come back", timeout))
	wait, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	backoff := restartBackoff
	var last error
	var boot string
	err = retry.Config{StartTimeout: timeout, RetryDelay: backoff.Linear}.Run(wait, func(ctx context.Context) error {
		attempt, cancel := context.WithTimeout(ctx, restartAttempt)
		defer cancel()
		now, servicing, err := r.bootState(attempt)
		switch {
		case err != nil:
			last = fmt.Errorf("no answer yet: %w", err)
		case now == before:
			last = errors.New("Windows has not restarted yet")
		case servicing:
			last = errors.New("Windows is still configuring the features it installed")
		default:
			boot = now
			return nil
		}
		r.UI.Message("still waiting: " + last.Error())
		return last
	})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("restart: Windows did not come back within restart_timeout (%s) after the restart for %s; last check: %v. "+
			"A slow guest needs a longer restart_timeout; otherwise look at its console", timeout, what, last)
	}
	r.UI.Say("kubenode-bake [restart]: Windows is back, booted at " + boot)
	r.settleUntil = time.Now().Add(min(settleBudget, timeout))
	return nil
}

// powershellEncoded runs a short script as -EncodedCommand (base64 of
// UTF-16LE), which needs no quoting in either cmd.exe or PowerShell.
func powershellEncoded(script string) string {
	u := utf16.Encode([]rune(script))
	b := make([]byte, 0, 2*len(u))
	for _, c := range u {
		b = append(b, byte(c), byte(c>>8))
	}
	return "powershell.exe -NoProfile -NonInteractive -ExecutionPolicy Bypass -EncodedCommand " + base64.StdEncoding.EncodeToString(b)
}

// The short scripts the flow runs with -EncodedCommand, by name. Each
// starts with a comment naming it, so the PowerShell log of a guest (and a
// guest double) tells them apart without reading their code.
const (
	queryMarker           = "# kubenode-bake query: "
	queryStaging          = "staging"
	queryFirstBootPrepare = "first-boot-prepare"
	queryBootCheck        = "boot-check"
	queryWindowsBuild     = "windows-build"
	queryWindowsOS        = "windows-os"
	queryJoinerVersion    = "joiner-version"
	queryInventory        = "inventory"
)

// powershellQuery runs the short script named name as -EncodedCommand,
// after its name's comment line.
func powershellQuery(name, script string) string {
	return powershellEncoded(queryMarker + name + "\n" + script)
}

// powershellFile runs an uploaded script; its exit code is the command's.
func powershellFile(file string) string {
	return `powershell.exe -NoProfile -NonInteractive -ExecutionPolicy Bypass -File "` + file + `"`
}

// osQuery prints the guest's build number and product name from the
// registry, after a marker.
const osQuery = `$v = Get-ItemProperty -LiteralPath 'HKLM:\SOFTWARE\Microsoft\Windows NT\CurrentVersion'
Write-Output ('kubenode-os: ' + $v.CurrentBuildNumber + ' ' + $v.ProductName)`

// guestOS asks the guest which Windows it runs, for the image's
// manifest; win is the release row of its build number.
func guestOS(ctx context.Context, r *remote.Remote, win versions.WindowsRelease) (baked.GuestOS, error) {
	code, out, err := r.Exec(ctx, powershellQuery(queryWindowsOS, osQuery))
	if err == nil && code == 0 {
		for _, line := range strings.Split(out, "\n") {
			if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "kubenode-os: "); ok {
				build, name, _ := strings.Cut(rest, " ")
				return baked.GuestOS{ID: "windows", Version: win.Version, Name: name, Build: build}, nil
			}
		}
	}
	return baked.GuestOS{}, fmt.Errorf("asking the guest for its Windows product name and build (registry, Windows NT\\CurrentVersion): exit %d, %v: %s", code, err, strings.TrimSpace(out))
}

// Release asks the guest which Windows it runs: the version table's
// release of the build number it reports.
func Release(ctx context.Context, r *remote.Remote) (versions.WindowsRelease, error) {
	code, out, err := r.Exec(ctx, powershellQuery(queryWindowsBuild, "(Get-CimInstance -ClassName Win32_OperatingSystem).BuildNumber"))
	if err != nil || code != 0 {
		return versions.WindowsRelease{}, fmt.Errorf("asking the guest for its Windows build: exit %d, %v: %s", code, err, strings.TrimSpace(out))
	}
	build, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		return versions.WindowsRelease{}, fmt.Errorf("asking the guest for its Windows build: %q is not a build number", strings.TrimSpace(out))
	}
	return versions.LookupWindowsBuild(build)
}

// Bake bakes a Windows guest as img describes it (NewPlan; img.Windows is
// the guest's Release) and returns what was baked, for the image's
// manifest: the guest's product name and build are asked first, the
// joiner's version before sysprep.
func Bake(ctx context.Context, ui packersdk.Ui, r *remote.Remote, img node.Image, srv *deliver.Server) (baked.Record, error) {
	plan, err := NewPlan(img)
	if err != nil {
		return baked.Record{}, err
	}
	guest, err := guestOS(ctx, r, img.Windows)
	if err != nil {
		return baked.Record{}, err
	}
	rec, err := bakePlan(ctx, r, plan, img.Artifacts, srv)
	if err != nil {
		return baked.Record{}, err
	}
	rec.Facts.Bootstrap = img.Bootstrap
	rec.OS = guest
	return rec, nil
}

// bakePlan has the guest download the artifacts (resolved and checked on
// this machine) from srv, or uploads them when srv is nil, and runs the
// plan: it returns what was baked (the record's Facts and Inventory).
func bakePlan(ctx context.Context, r *remote.Remote, plan Plan, arts []versions.Artifact, srv *deliver.Server) (baked.Record, error) {
	plan = plan.WithDefaults()
	uploads := make([]Upload, len(arts))
	facts := baked.Facts{Kubernetes: plan.Kubernetes.Version, Containerd: plan.Containerd.Version, CNIPlugins: plan.CNIPlugins.Version,
		PauseImage: plan.PauseImage, Checksums: map[string]string{}, Images: []baked.Image{}}
	for i, a := range arts {
		uploads[i] = Upload{Name: a.Name, Local: a.Local, Remote: plan.Staging + `\` + a.FileName, SHA256: a.SHA256}
		if srv != nil {
			uploads[i].URL, uploads[i].Shown = srv.URL(a), srv.Origin()+"/.../"+a.FileName
		}
		facts.Checksums[a.Name] = a.SHA256
	}
	res, err := run(ctx, r, plan, uploads, srv)
	if err != nil {
		return baked.Record{}, err
	}
	if res.Images != nil {
		facts.Images = res.Images
	}
	facts.Joiner = res.Joiner
	return baked.Record{Facts: facts, Inventory: res.Inventory}, nil
}
