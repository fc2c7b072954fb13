// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package libvirt

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/packer-plugin-sdk/multistep"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeGuestPort listens on 127.0.0.1 and treats connection i (from 0) with
// serve(i, conn); it returns the address and the number of connections.
func fakeGuestPort(t *testing.T, serve func(i int, c net.Conn)) (string, *atomic.Int32) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	var n atomic.Int32
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			i := int(n.Add(1)) - 1
			go func() { defer c.Close(); serve(i, c) }()
		}
	}()
	return l.Addr().String(), &n
}

func TestWaitForSSHBannerWaitsThroughResetsAndSilence(t *testing.T) {
	// As QEMU's user-mode forward does before the guest's sshd is up: the
	// host side accepts, then closes (guest refused) or says nothing.
	addr, n := fakeGuestPort(t, func(i int, c net.Conn) {
		switch i {
		case 0:
			return
		case 1:
			time.Sleep(time.Second) // longer than the read timeout
		default:
			_, _ = c.Write([]byte("SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3\r\n"))
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := waitForSSHBanner(ctx, func() (string, error) { return addr, nil }, 10*time.Millisecond, 200*time.Millisecond)
	require.NoError(t, err)
	assert.Equal(t, addr, got)
	assert.Equal(t, int32(3), n.Load(), "a closed and a silent connection, then the banner")
}

func TestWaitForSSHBannerAsksForTheAddressAgain(t *testing.T) {
	addr, _ := fakeGuestPort(t, func(_ int, c net.Conn) { _, _ = c.Write([]byte("SSH-2.0-x\r\n")) })
	calls := 0
	got, err := waitForSSHBanner(context.Background(), func() (string, error) {
		calls++
		if calls < 3 {
			return "", errors.New("no DHCP lease yet")
		}
		return addr, nil
	}, time.Millisecond, time.Second)
	require.NoError(t, err)
	assert.Equal(t, addr, got)
	assert.Equal(t, 3, calls)
}

func TestWaitForSSHBannerGivesUpWithTheLastReason(t *testing.T) {
	addr, _ := fakeGuestPort(t, func(_ int, c net.Conn) { time.Sleep(2 * time.Second) })
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	got, err := waitForSSHBanner(ctx, func() (string, error) { return addr, nil }, 10*time.Millisecond, 100*time.Millisecond)
	require.Error(t, err)
	assert.Equal(t, addr, got)
	assert.Contains(t, err.Error(), "accepted the connection but sent nothing")
	assert.Less(t, time.Since(start), 2*time.Second, "the context bounds the wait, not the silent peer")
}

// recordConnect stands in for the SDK's StepConnect.
type recordConnect struct {
	ran     bool
	timeout time.Duration
	c       *Config
}

func (r *recordConnect) Run(context.Context, multistep.StateBag) multistep.StepAction {
	r.ran, r.timeout = true, r.c.Comm.SSHTimeout
	return multistep.ActionContinue
}
func (r *recordConnect) Cleanup(multistep.StateBag) {}

func sshConfigAt(t *testing.T, addr string, timeout time.Duration) *Config {
	c := preparedLinux(t)
	host, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	c.Comm.SSHHost = host
	c.Comm.SSHTimeout = timeout
	p, _ := strconv.Atoi(port)
	c.Comm.SSHPort = p
	return c
}

func TestStepWaitCommunicatorConnectsOnceTheBannerCame(t *testing.T) {
	addr, n := fakeGuestPort(t, func(i int, c net.Conn) {
		if i > 0 {
			_, _ = c.Write([]byte("SSH-2.0-x\r\n"))
		}
	})
	c := sshConfigAt(t, addr, 5*time.Minute)
	state := testState(t, c, NewMockDriver())
	connect := &recordConnect{c: c}
	s := &stepWaitCommunicator{connect: connect}
	require.Equal(t, multistep.ActionContinue, s.Run(context.Background(), state))
	assert.True(t, connect.ran)
	assert.Equal(t, int32(2), n.Load())
	assert.Less(t, connect.timeout, 5*time.Minute, "StepConnect gets what is left of ssh_timeout")
	assert.Greater(t, connect.timeout, 4*time.Minute)
	assert.Equal(t, 5*time.Minute, c.Comm.SSHTimeout, "ssh_timeout itself is unchanged afterwards")
}

func TestStepWaitCommunicatorTimesOutNamingTheKey(t *testing.T) {
	addr, _ := fakeGuestPort(t, func(_ int, c net.Conn) {}) // closes at once
	c := sshConfigAt(t, addr, 1500*time.Millisecond)
	state := testState(t, c, NewMockDriver())
	connect := &recordConnect{c: c}
	s := &stepWaitCommunicator{connect: connect}
	require.Equal(t, multistep.ActionHalt, s.Run(context.Background(), state))
	assert.False(t, connect.ran, "nothing to log in to")
	err := state.Get("error").(error)
	assert.Contains(t, err.Error(), "ssh_timeout (1.5s)")
	assert.Contains(t, err.Error(), addr)
	assert.Contains(t, state.Get(stateUI).(*packersdk.BasicUi).ErrorWriter.(*bytes.Buffer).String(), "Timeout waiting for SSH")
}

func TestStepWaitCommunicatorCancelledWhileProbing(t *testing.T) {
	addr, _ := fakeGuestPort(t, func(_ int, c net.Conn) {})
	c := sshConfigAt(t, addr, time.Minute)
	state := testState(t, c, NewMockDriver())
	connect := &recordConnect{c: c}
	s := &stepWaitCommunicator{connect: connect}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	require.Equal(t, multistep.ActionHalt, s.Run(ctx, state))
	assert.False(t, connect.ran)
	assert.Less(t, time.Since(start), 5*time.Second)
}

func TestStepWaitCommunicatorLeavesOtherCommunicatorsToTheSDK(t *testing.T) {
	for _, mod := range []func(c *Config){
		func(c *Config) { c.Comm.Type = "winrm" },
		func(c *Config) { c.Comm.SSHBastionHost = "bastion.example.com" },
		func(c *Config) { c.Comm.SSHProxyHost = "proxy.example.com" },
	} {
		c := sshConfigAt(t, "127.0.0.1:1", time.Minute) // nothing listens there
		mod(c)
		state := testState(t, c, NewMockDriver())
		connect := &recordConnect{c: c}
		s := &stepWaitCommunicator{connect: connect}
		require.Equal(t, multistep.ActionContinue, s.Run(context.Background(), state))
		assert.True(t, connect.ran)
	}
}
