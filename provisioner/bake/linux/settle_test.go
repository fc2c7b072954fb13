// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package linux

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// settleGuest runs the settle step against fake cloud-init, systemctl and
// apt-get: status is what a plain `cloud-init status` says, cloudInit the
// body of the fake `cloud-init status --wait`,
// aptCheck of `apt-get ... check`. It returns the output, the error, the
// calls the fakes logged and the plan (whose Staging holds the record).
func settleGuest(t *testing.T, timeout time.Duration, status, cloudInit, aptCheck string) (string, error, string, Plan) {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	log := filepath.Join(dir, "calls")
	require.NoError(t, os.MkdirAll(bin, 0o755))
	fake := func(name, body string) {
		script := "#!/bin/sh\necho \"" + name + " $*\" >> " + q(log) + "\n" + body + "\n"
		require.NoError(t, os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755))
	}
	fake("cloud-init", `case "$*" in "status --wait") `+cloudInit+`;; "status --long") echo "status: error"; echo "errors: locale failed";; *) echo "status: `+status+`";; esac`)
	fake("systemctl", `if [ "$1" = is-active ]; then [ "$3" = apt-daily.timer ]; fi`)
	fake("apt-get", `case "$*" in *check*) `+aptCheck+`;; esac`)
	p := testPlan()
	p.SettleTimeout = timeout
	p.Staging = filepath.Join(dir, "staging")
	require.NoError(t, os.MkdirAll(p.Staging, 0o700))
	cmd := exec.Command("sh", "-c", string(settle(p)))
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	calls, _ := os.ReadFile(log)
	return string(out), err, string(calls), p
}

// The bake waits for cloud-init and the dpkg lock, says for how long, and
// holds apt's timers until cleanup starts them again.
func TestLinuxSettleWaits(t *testing.T) {
	out, err, calls, p := settleGuest(t, 5*time.Second, "running", "sleep 1", "sleep 1")
	require.NoError(t, err, out)
	assert.Regexp(t, `ok: waited [12]s for cloud-init \(status: running\)`, out)
	assert.Contains(t, out, "ok: stopped apt-daily.timer until the bake ends")
	assert.Regexp(t, `ok: waited [12]s for the dpkg lock`, out)
	assert.Contains(t, calls, "apt-get -o DPkg::Lock::Timeout=5 check -qq")
	assert.Contains(t, calls, "systemctl stop apt-daily.timer")
	assert.NotContains(t, calls, "systemctl stop apt-daily-upgrade.timer", "a timer that was not running stays as it was")

	// Cleanup starts the held timer again, before the staging directory goes.
	cleanup := exec.Command("sh", "-c", string(cleanup(p)))
	cleanup.Env = append(os.Environ(), "PATH="+filepath.Join(filepath.Dir(p.Staging), "bin")+":"+os.Getenv("PATH"))
	cout, err := cleanup.CombinedOutput()
	require.NoError(t, err, string(cout))
	assert.Contains(t, string(cout), "ok: started apt-daily.timer again")
	after, _ := os.ReadFile(filepath.Join(filepath.Dir(p.Staging), "calls"))
	assert.Contains(t, string(after), "systemctl start apt-daily.timer")
	assert.NoDirExists(t, p.Staging)
}

// A cloud-init that ends in error is reported with its own summary and the
// bake goes on; one still running at the timeout fails the step; so does a
// dpkg lock that stays taken.
func TestLinuxSettleFailures(t *testing.T) {
	out, err, _, _ := settleGuest(t, 5*time.Second, "running", "exit 1", "true")
	require.NoError(t, err, out)
	assert.Contains(t, out, "warning: cloud-init finished with errors")
	assert.Contains(t, out, "  errors: locale failed")

	out, err, _, _ = settleGuest(t, time.Second, "running", "sleep 20", "true")
	require.Error(t, err)
	assert.Contains(t, out, "cloud-init had not finished after 1s (settle_timeout)")
	assert.Contains(t, out, "status: error")

	out, err, _, _ = settleGuest(t, time.Second, "done", "true", "echo 'E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 667 (apt-get)' >&2; exit 100")
	require.Error(t, err)
	assert.Contains(t, out, "the dpkg lock was not free after")
	assert.Contains(t, out, "held by process 667")
}

// A cloud-init that does not run in this boot (its state cleaned by an
// earlier bake's generalize, or disabled) is not waited for: --wait would
// wait for ever.
func TestLinuxSettleCloudInitNotRunning(t *testing.T) {
	for _, status := range []string{"not run", "disabled"} {
		out, err, calls, _ := settleGuest(t, 5*time.Second, status, "sleep 20", "true")
		require.NoError(t, err, out)
		assert.Contains(t, out, "ok: cloud-init does not run in this boot (status: "+status+")")
		assert.NotContains(t, calls, "status --wait")
	}
}

// Every apt-get the bake runs waits for the dpkg lock, and settle is the
// first step.
func TestLinuxAptWaitsForTheLock(t *testing.T) {
	p := testPlan()
	p.SettleTimeout = 3 * time.Minute
	steps := Steps(p)
	require.Equal(t, stepSettle, steps[0].Name)
	for _, s := range steps {
		for _, line := range strings.Split(string(s.Script), "\n") {
			if i := strings.Index(line, "apt-get "); i >= 0 && !strings.Contains(line, "command -v apt-get") && !strings.Contains(line, "no apt-get") {
				assert.Contains(t, line[i:], "apt-get -o DPkg::Lock::Timeout=180 ", "%s: %s", s.Name, line)
			}
		}
	}
}
