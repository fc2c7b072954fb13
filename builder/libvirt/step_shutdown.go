// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package libvirt

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/packer-plugin-sdk/multistep"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
)

// stepShutdown runs shutdown_command through the communicator, or asks
// for an ACPI power-off, then waits up to shutdown_timeout for the VM to be
// off. A Windows guest without shutdown_command is only waited for: the
// bake's sysprep powers it off. So is any guest with communicator = "none":
// its unattended install (or whatever it runs) ends by powering it off.
//
// Uses: config, driver, ui, communicator.
type stepShutdown struct{}

// shutdownPoll is how often the domain state is read; tests shrink it.
var shutdownPoll = time.Second

func (s *stepShutdown) Run(ctx context.Context, state multistep.StateBag) multistep.StepAction {
	c := state.Get(stateConfig).(*Config)
	d := state.Get(stateDriver).(Driver)
	ui := state.Get(stateUI).(packersdk.Ui)
	none := c.Comm.Type == "none"
	if none {
		ui.Say(fmt.Sprintf("Waiting up to %s for the guest to power itself off (communicator = \"none\")", c.ShutdownTimeout))
	} else if c.ShutdownCommand != "" {
		comm, ok := state.Get("communicator").(packersdk.Communicator)
		if !ok {
			return halt(state, ui, fmt.Errorf("shutdown_command needs a communicator"))
		}
		ui.Say(fmt.Sprintf("Running shutdown_command: %s", c.ShutdownCommand))
		cmd := &packersdk.RemoteCmd{Command: c.ShutdownCommand}
		// The connection may drop as the guest goes down: that is expected.
		if err := comm.Start(ctx, cmd); err != nil {
			return halt(state, ui, fmt.Errorf("shutdown_command: %w", err))
		}
	} else if c.Windows != nil {
		// kubenode-bake's generalize ends with sysprep, then closes WinRM
		// and powers the guest off: an ACPI request could cut that short.
		ui.Say("Waiting for Windows to power itself off (sysprep; no shutdown_command)")
	} else {
		ui.Say("Asking the guest to power off (ACPI)")
		if err := d.ShutdownDomain(c.VMName); err != nil {
			return halt(state, ui, err)
		}
	}
	start := time.Now()
	lastReport := start
	for {
		st, err := d.DomainState(c.VMName)
		if err != nil {
			return halt(state, ui, err)
		}
		if st == StateShutoff {
			ui.Say(fmt.Sprintf("Guest powered off after %s", time.Since(start).Round(time.Second)))
			return multistep.ActionContinue
		}
		if time.Since(start) > c.ShutdownTimeout {
			hint := "the guest may need acpid, or a shutdown_command such as \"sudo shutdown -P now\""
			if none {
				hint = "with communicator = \"none\" the guest must power itself off (e.g. the installer's last step); raise shutdown_timeout for a long install"
			}
			if !none && c.ShutdownCommand == "" && c.Windows != nil {
				hint = "kubenode-bake's generalize (sysprep) powers Windows off; without it, set a shutdown_command; raise shutdown_timeout for a slow sysprep"
			}
			if c.ShutdownCommand != "" {
				hint = "check that shutdown_command powers the guest off; raise shutdown_timeout for slow ones like sysprep"
			}
			return halt(state, ui, fmt.Errorf("the guest did not power off within shutdown_timeout (%s): %s", c.ShutdownTimeout, hint))
		}
		if time.Since(lastReport) >= waitReportEvery {
			ui.Message(fmt.Sprintf("Waiting for the guest to power off (%s elapsed of %s)", time.Since(start).Round(time.Second), c.ShutdownTimeout))
			lastReport = time.Now()
		}
		select {
		case <-ctx.Done():
			return multistep.ActionHalt
		case <-time.After(shutdownPoll):
		}
	}
}

func (s *stepShutdown) Cleanup(multistep.StateBag) {}
