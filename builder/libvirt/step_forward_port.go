package libvirt

import (
	"context"
	"fmt"
	"net"

	"github.com/hashicorp/packer-plugin-sdk/multistep"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
)

// stepForwardPort picks a free port on 127.0.0.1 for user-mode networking
// to forward to the communicator port. QEMU binds it when the VM starts,
// which ends the forward: there is nothing to clean up.
//
// Uses: config, ui. Produces: host_port.
type stepForwardPort struct{}

func (s *stepForwardPort) Run(ctx context.Context, state multistep.StateBag) multistep.StepAction {
	c := state.Get(stateConfig).(*Config)
	ui := state.Get(stateUI).(packersdk.Ui)
	if c.Network != "user" || c.Comm.Type == "none" {
		return multistep.ActionContinue
	}
	port, err := freePort(c.HostPortMin, c.HostPortMax)
	if err != nil {
		return halt(state, ui, fmt.Errorf("host_port_min/host_port_max: %w", err))
	}
	ui.Say(fmt.Sprintf("Forwarding 127.0.0.1:%d to the guest's %s port %d", port, c.Comm.Type, c.Comm.Port()))
	state.Put(stateHostPort, port)
	return multistep.ActionContinue
}

func (s *stepForwardPort) Cleanup(multistep.StateBag) {}

// freePort returns the first port in [min, max] that can be bound on 127.0.0.1.
func freePort(min, max int) (int, error) {
	for p := min; p <= max; p++ {
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err == nil {
			l.Close()
			return p, nil
		}
	}
	return 0, fmt.Errorf("no free port on 127.0.0.1 between %d and %d", min, max)
}
