// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

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

// settle waits, each wait bounded by timeout, for cloud-init to finish
// (`cloud-init status --wait`; an error is reported with cloud-init's own
// summary and the bake goes on), stops apt's timers for the rest of the
// bake (their enablement in the image is left as it is: cleanup starts the
// ones it stopped again), then waits for the package manager's lock. Every
// wait prints what it waited for and how long it took.
func settle(p Plan) []byte { return render("settle.sh.tmpl", p) }
