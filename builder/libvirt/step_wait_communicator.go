// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package libvirt

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/hashicorp/packer-plugin-sdk/multistep"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"

	"github.com/kubenode/packer-plugin-kubenode/internal/tick"
)

// stepWaitCommunicator runs the SDK's StepConnect and says, every 30 s,
// how long it has waited; when it fails on a KVM guest whose serial console
// stayed silent it says that KVM may be hanging and suggests tcg.
//
// For SSH it first waits, probing every second, until the guest's port
// sends an SSH banner, and only then lets StepConnect connect. StepConnect
// alone waits 5 s between attempts, and its first attempt can hang for
// most of a minute: QEMU's user-mode networking accepts the connection on
// the host before the guest can answer it, and the handshake then waits
// until the guest is up enough to refuse it (seen here: 42 s). ssh_timeout
// covers both waits together.
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
	stop := tick.Every(waitReportEvery, func() bool {
		ui.Message(fmt.Sprintf("Still waiting for %s (%s elapsed of %s)", c.Comm.Type, time.Since(start).Round(time.Second), c.commTimeout()))
		return true
	})
	action := s.probeThenConnect(ctx, state, c)
	stop()
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

// probeThenConnect waits for the SSH banner (unless a bastion or proxy
// stands between), then runs StepConnect with what is left of ssh_timeout.
func (s *stepWaitCommunicator) probeThenConnect(ctx context.Context, state multistep.StateBag, c *Config) multistep.StepAction {
	if c.Comm.Type != "ssh" || c.Comm.SSHBastionHost != "" || c.Comm.SSHProxyHost != "" {
		return s.connect.Run(ctx, state)
	}
	timeout := c.Comm.SSHTimeout
	start := time.Now()
	ui := state.Get(stateUI).(packersdk.Ui)
	ui.Say(fmt.Sprintf("Waiting for the guest's SSH server to answer (up to ssh_timeout, %s)...", timeout))
	pctx, cancel := context.WithTimeout(ctx, timeout)
	addr, err := waitForSSHBanner(pctx, func() (string, error) {
		host, err := c.commHost(state)
		if err != nil {
			return "", err
		}
		port, err := c.commPort(state)
		if err != nil {
			return "", err
		}
		return net.JoinHostPort(host, strconv.Itoa(port)), nil
	}, bannerProbeEvery, bannerReadTimeout)
	cancel()
	if err != nil {
		if ctx.Err() != nil { // interrupted: as StepConnect, no error of its own
			return multistep.ActionHalt
		}
		return halt(state, ui, fmt.Errorf("Timeout waiting for SSH: no SSH server answered at %s within ssh_timeout (%s): %w", addr, timeout, err))
	}
	// StepConnect reads its timeout from the config: give it what is left.
	defer func() { c.Comm.SSHTimeout = timeout }()
	c.Comm.SSHTimeout = max(timeout-time.Since(start), minConnectAfterBanner)
	return s.connect.Run(ctx, state)
}

const (
	bannerProbeEvery  = time.Second
	bannerReadTimeout = 3 * time.Second
	// minConnectAfterBanner is what StepConnect gets at least once a banner
	// was seen, so a banner just before ssh_timeout still leads to a login.
	minConnectAfterBanner = 30 * time.Second
)

// waitForSSHBanner returns the address once a connection to it receives
// data: an SSH server speaks first, with its identification string
// (RFC 4253 section 4.2), while a port forward whose guest is not up yet
// stays silent or is reset. Each attempt gets readTimeout; a refused,
// reset, closed or silent connection is tried again after every. addr is
// asked again on each attempt (a guest's address may appear late). When
// ctx ends first it returns the last address and the last error.
func waitForSSHBanner(ctx context.Context, addr func() (string, error), every, readTimeout time.Duration) (string, error) {
	var last string
	var lastErr error
	for {
		a, err := addr()
		if err == nil {
			last = a
			if err = sshBanner(ctx, a, readTimeout); err == nil {
				return a, nil
			}
		}
		lastErr = err
		select {
		case <-ctx.Done():
			return last, lastErr
		case <-time.After(every):
		}
	}
}

// sshBanner connects to addr and waits for its first byte.
func sshBanner(ctx context.Context, addr string, readTimeout time.Duration) error {
	actx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(actx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	deadline, _ := actx.Deadline()
	if err := conn.SetReadDeadline(deadline); err != nil {
		return err
	}
	if _, err := conn.Read(make([]byte, 1)); err != nil {
		return fmt.Errorf("%s accepted the connection but sent nothing: %w", addr, err)
	}
	return nil
}

func (c *Config) commTimeout() time.Duration {
	if c.Comm.Type == "winrm" {
		return c.Comm.WinRMTimeout
	}
	return c.Comm.SSHTimeout
}
