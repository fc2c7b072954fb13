package libvirt

import (
	"context"
	"fmt"
	"regexp"
	"time"

	"github.com/hashicorp/packer-plugin-sdk/bootcommand"
	"github.com/hashicorp/packer-plugin-sdk/multistep"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
	"github.com/hashicorp/packer-plugin-sdk/template/interpolate"
)

// hypervRefusedRE matches QEMU's words when KVM will not give the guest
// the Hyper-V enlightenments asked for (seen under nested virtualization):
// "kernel doesn't allow setting HyperV VP_INDEX", "Hyper-V synic is not
// supported by kernel".
var hypervRefusedRE = regexp.MustCompile(`(?i)kernel doesn't allow setting hyper-?v|hyper-?v .*not supported by kernel`)

// userNetGateway is the host as seen from a guest on QEMU user networking.
const userNetGateway = "10.0.2.2"

// bootCommandData is what boot_command templates can use:
// {{ .HTTPIP }}, {{ .HTTPPort }}, {{ .Name }}.
type bootCommandData struct {
	HTTPIP   string
	HTTPPort int
	Name     string
}

// stepStartDomain boots the VM and waits until libvirt reports it running.
//
// Uses: config, driver, ui.
type stepStartDomain struct{}

func (s *stepStartDomain) Run(ctx context.Context, state multistep.StateBag) multistep.StepAction {
	c := state.Get(stateConfig).(*Config)
	d := state.Get(stateDriver).(Driver)
	ui := state.Get(stateUI).(packersdk.Ui)
	ui.Say(fmt.Sprintf("Starting domain %s", c.VMName))
	if err := d.StartDomain(c.VMName); err != nil {
		if hypervRefusedRE.MatchString(err.Error()) {
			err = fmt.Errorf("%w: this host's KVM refuses Hyper-V enlightenments (usual under nested virtualization); "+
				"set hyperv_enlightenments = false to build without them, or accelerator = \"tcg\" "+
				"(software emulation, much slower; leave hyperv_enlightenments unset)", err)
		}
		return halt(state, ui, err)
	}
	deadline := time.Now().Add(c.BootTimeout)
	for {
		st, err := d.DomainState(c.VMName)
		if err != nil {
			return halt(state, ui, err)
		}
		if st == StateRunning {
			return multistep.ActionContinue
		}
		if time.Now().After(deadline) {
			return halt(state, ui, fmt.Errorf("domain %s is %s, not running, %s after start (boot_timeout)", c.VMName, st, c.BootTimeout))
		}
		select {
		case <-ctx.Done():
			return multistep.ActionHalt
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func (s *stepStartDomain) Cleanup(multistep.StateBag) {}

// stepTypeBootCommand waits boot_wait, then types boot_command with
// libvirt's SendKey (no VNC client needed).
//
// Uses: config, driver, ui.
type stepTypeBootCommand struct{}

func (s *stepTypeBootCommand) Run(ctx context.Context, state multistep.StateBag) multistep.StepAction {
	c := state.Get(stateConfig).(*Config)
	d := state.Get(stateDriver).(Driver)
	ui := state.Get(stateUI).(packersdk.Ui)
	if len(c.BootCommand) == 0 {
		return multistep.ActionContinue
	}
	if c.BootWait > 0 {
		ui.Say(fmt.Sprintf("Waiting %s before typing the boot command", c.BootWait))
		select {
		case <-ctx.Done():
			return multistep.ActionHalt
		case <-time.After(c.BootWait):
		}
	}
	// The guest reaches the host's HTTP server at QEMU's user-network gateway.
	httpPort, _ := state.Get("http_port").(int)
	c.ctx.Data = &bootCommandData{HTTPIP: userNetGateway, HTTPPort: httpPort, Name: c.VMName}
	command, err := interpolate.Render(c.FlatBootCommand(), &c.ctx)
	if err != nil {
		return halt(state, ui, fmt.Errorf("boot_command: %w", err))
	}
	seq, err := bootcommand.GenerateExpressionSequence(command)
	if err != nil {
		return halt(state, ui, fmt.Errorf("boot_command: %w", err))
	}
	ui.Say("Typing the boot command")
	drv := &sendKeyDriver{domain: c.VMName, keys: d, interval: c.BootGroupInterval}
	if err := seq.Do(ctx, drv); err != nil {
		return halt(state, ui, fmt.Errorf("boot_command: %w", err))
	}
	return multistep.ActionContinue
}

func (s *stepTypeBootCommand) Cleanup(multistep.StateBag) {}
