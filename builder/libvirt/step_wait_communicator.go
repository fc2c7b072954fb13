package libvirt

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/hashicorp/packer-plugin-sdk/multistep"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
)

// stepWaitCommunicator runs the SDK's StepConnect and says, every 30 s,
// how long it has waited; when it fails on a KVM guest whose serial console
// stayed silent it says that KVM may be hanging and suggests tcg.
//
// Uses: config, ui, serial_log.
type stepWaitCommunicator struct {
	connect multistep.Step
}

const waitReportEvery = 30 * time.Second

func (s *stepWaitCommunicator) Run(ctx context.Context, state multistep.StateBag) multistep.StepAction {
	c := state.Get(stateConfig).(*Config)
	ui := state.Get(stateUI).(packersdk.Ui)
	if c.Comm.Type == "none" {
		return s.connect.Run(ctx, state)
	}
	start := time.Now()
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(waitReportEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				ui.Message(fmt.Sprintf("Still waiting for %s (%s elapsed of %s)", c.Comm.Type, time.Since(start).Round(time.Second), c.commTimeout()))
			}
		}
	}()
	action := s.connect.Run(ctx, state)
	close(done)
	if action == multistep.ActionContinue {
		ui.Say(fmt.Sprintf("Connected with %s after %s", c.Comm.Type, time.Since(start).Round(time.Second)))
		return action
	}
	if _, cancelled := state.GetOk(multistep.StateCancelled); !cancelled && c.Accelerator == "kvm" {
		if p, _ := state.Get(stateSerialLog).(string); p != "" {
			if st, err := os.Stat(p); err == nil && st.Size() == 0 {
				ui.Error("The guest printed nothing on its serial console: on some hosts KVM guests hang right after the firmware starts. Try accelerator = \"tcg\" (slower, but it boots).")
			}
		}
	}
	return action
}

func (s *stepWaitCommunicator) Cleanup(state multistep.StateBag) { s.connect.Cleanup(state) }

func (c *Config) commTimeout() time.Duration {
	if c.Comm.Type == "winrm" {
		return c.Comm.WinRMTimeout
	}
	return c.Comm.SSHTimeout
}
