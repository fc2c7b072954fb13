package linux

import (
	"fmt"
	"path"
	"time"
)

// stepSettle is the Linux bake's first step: the guest is left to finish
// what its own first boot started before the bake installs anything.
// cloud-init's final stage (its packages, runcmd) goes on after sshd
// answers, and apt's daily timers may start at any time; either holds the
// dpkg lock that the bake's apt-get needs.
const stepSettle = "settle"

// aptGet is how every bake script calls apt-get: it waits for the dpkg lock
// (apt >= 1.9.11 reads DPkg::Lock::Timeout; older apt ignores it) rather
// than failing at once when another apt-get holds it.
func aptGet(timeout time.Duration) string {
	return fmt.Sprintf("apt-get -o DPkg::Lock::Timeout=%d", seconds(timeout))
}

// aptTimers are the units that start apt on their own: apt-daily runs
// `apt-get update`, apt-daily-upgrade unattended-upgrades.
const aptTimers = "apt-daily.timer apt-daily-upgrade.timer"

// heldTimersFile records the timers the settle step stopped, for cleanup
// to start again.
func heldTimersFile(staging string) string { return path.Join(staging, "held-timers") }

func seconds(d time.Duration) int { return int((d + time.Second - 1) / time.Second) }

// linuxSettle waits, each wait bounded by timeout, for cloud-init to finish
// (`cloud-init status --wait`; an error is reported with cloud-init's own
// summary and the bake goes on), stops apt's timers for the rest of the
// bake (their enablement in the image is left as it is: cleanup starts the
// ones it stopped again), then waits for the package manager's lock. Every
// wait prints what it waited for and how long it took.
func linuxSettle(p Plan) []byte {
	s := newSh("settle: wait for cloud-init and the package manager, hold apt's timers")
	secs := seconds(p.SettleTimeout)
	s.line(`elapsed() { echo $(( $(date +%%s) - $1 )); }`)
	// cloud-init starts before sshd: "not run" when the bake connects
	// means it does not run in this boot (disabled, or its state cleaned
	// by an earlier bake's generalize), and --wait would wait for ever.
	s.line(`ci=''; if command -v cloud-init >/dev/null; then ci=$(cloud-init status 2>/dev/null | sed -n 's/^status: //p'); fi`)
	s.line(`case "$ci" in`)
	s.line(`  '') ;;`)
	s.line(`  'not run'|disabled) echo "ok: cloud-init does not run in this boot (status: $ci)";;`)
	s.line(`  *)`)
	s.line("  t0=$(date +%%s); rc=0")
	s.line("  timeout %d cloud-init status --wait >/dev/null 2>&1 || rc=$?", secs)
	s.line(`  case $rc in`)
	s.line(`    0) echo "ok: waited $(elapsed $t0)s for cloud-init ($(cloud-init status 2>/dev/null | paste -sd ' '))";;`)
	s.line(`    124) echo "cloud-init had not finished after %ds (settle_timeout); cloud-init status --long says:" >&2; cloud-init status --long >&2 || true; exit 1;;`, secs)
	s.line(`    *) echo "warning: cloud-init finished with errors after $(elapsed $t0)s; the bake goes on. cloud-init status --long says:"; cloud-init status --long 2>&1 | sed 's/^/  /' || true;;`)
	s.line("  esac;;")
	s.line("esac")
	s.line("held=''")
	s.line("for t in %s; do", aptTimers)
	s.line(`  if systemctl is-active -q "$t" 2>/dev/null; then systemctl stop "$t"; held="$held $t"; fi`)
	s.line("done")
	s.line(`printf '%%s\n' $held > %s`, q(heldTimersFile(p.Staging)))
	s.line(`if [ -n "$held" ]; then echo "ok: stopped$held until the bake ends (enabled in the image as before)"; fi`)
	s.line("if command -v apt-get >/dev/null; then")
	s.line("  t0=$(date +%%s)")
	// apt-get check takes the dpkg locks as an install does.
	s.line(`  if ! out=$(%s check -qq 2>&1); then echo "the dpkg lock was not free after $(elapsed $t0)s (settle_timeout %ds):" >&2; printf '%%s\n' "$out" >&2; exit 1; fi`, aptGet(p.SettleTimeout), secs)
	s.line(`  echo "ok: waited $(elapsed $t0)s for the dpkg lock"`)
	s.line("fi")
	// dnf waits for its own lock, without a bound.
	return s.bytes()
}

// linuxRestartTimers starts the apt timers the settle step stopped.
func linuxRestartTimers(s *sh, staging string) {
	f := q(heldTimersFile(staging))
	s.line(`if [ -s %s ]; then for t in $(cat %s); do systemctl start "$t"; done; echo "ok: started $(tr '\n' ' ' < %s)again"; fi`, f, f, f)
}
