// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package libvirt

import (
	"context"
	"fmt"
	"regexp"
	"time"

	"github.com/hashicorp/packer-plugin-sdk/multistep"
	sdknet "github.com/hashicorp/packer-plugin-sdk/net"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
)

// stepForwardPort reserves a port on 127.0.0.1 for user-mode networking to
// forward to the communicator port. The reservation is the SDK's port lock
// file in Packer's cache, held until Cleanup: parallel builds, in this
// packer process or another, never pick the same port. The port itself is
// free again by the time the VM starts, since QEMU must bind it; should
// something else take it in between, stepStartDomain asks for another with
// next.
//
// Uses: config, ui. Produces: host_port, port_reservation.
type stepForwardPort struct {
	res *portReservation
}

// portReservation holds the lock of the forwarded port and can trade it
// for another.
type portReservation struct {
	min, max int
	l        *sdknet.Listener
	// tried are ports already found taken, never offered again.
	tried map[int]bool
}

func (s *stepForwardPort) Run(ctx context.Context, state multistep.StateBag) multistep.StepAction {
	c := state.Get(stateConfig).(*Config)
	ui := state.Get(stateUI).(packersdk.Ui)
	if c.Network != "user" || c.Comm.Type == "none" {
		return multistep.ActionContinue
	}
	s.res = &portReservation{min: c.HostPortMin, max: c.HostPortMax, tried: map[int]bool{}}
	port, err := s.res.next(ctx)
	if err != nil {
		return halt(state, ui, fmt.Errorf("host_port_min/host_port_max: %w", err))
	}
	ui.Say(fmt.Sprintf("Forwarding 127.0.0.1:%d to the guest's %s port %d", port, c.Comm.Type, c.Comm.Port()))
	state.Put(stateHostPort, port)
	state.Put(statePortReservation, s.res)
	return multistep.ActionContinue
}

func (s *stepForwardPort) Cleanup(multistep.StateBag) {
	if s.res != nil {
		s.res.release()
		s.res = nil
	}
}

// next releases the port held, if any, and reserves another free one in
// [min, max]: its lock file taken and the port seen free on 127.0.0.1.
func (r *portReservation) next(ctx context.Context) (int, error) {
	if r.l != nil {
		r.tried[r.l.Port] = true
		r.release()
	}
	if len(r.tried) > r.max-r.min {
		return 0, fmt.Errorf("every port from %d to %d is taken", r.min, r.max)
	}
	ctx, cancel := context.WithTimeout(ctx, portSearchTimeout)
	defer cancel()
	for {
		l, err := sdknet.ListenRangeConfig{Network: "tcp", Addr: "127.0.0.1", Min: r.min, Max: r.max + 1}.Listen(ctx)
		if err != nil {
			return 0, fmt.Errorf("no free port on 127.0.0.1 between %d and %d: %w", r.min, r.max, err)
		}
		if r.tried[l.Port] {
			l.Close()
			continue
		}
		// Free the port for QEMU, keep the lock file until release.
		l.Listener.Close()
		r.l = l
		return l.Port, nil
	}
}

// release drops the lock of the port held.
func (r *portReservation) release() {
	if r.l != nil {
		// The listener is closed already: Close unlocks, then reports that.
		_ = r.l.Close()
		r.l = nil
	}
}

// portSearchTimeout bounds the search for a free, unlocked port.
var portSearchTimeout = 30 * time.Second

// portTakenRE matches QEMU's words when it cannot bind a forwarded port:
// "Could not set up host forwarding rule 'tcp:127.0.0.1:2222-:22'".
var portTakenRE = regexp.MustCompile(`(?i)could not set up host forwarding rule`)
