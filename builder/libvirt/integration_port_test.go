// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build integration

package libvirt

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"testing"

	"github.com/hashicorp/packer-plugin-sdk/multistep"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/internal/harness"
)

// TestStartRetriesWhenTheForwardedPortIsTaken: between the reservation
// and the start, something else binds the forwarded port. QEMU on the real
// libvirtd refuses to start with its own words, which the builder must
// recognise; it then redefines the domain with another reserved port and
// the VM runs.
func TestStartRetriesWhenTheForwardedPortIsTaken(t *testing.T) {
	harness.Libvirtd(t)
	setPackerCache(t)
	d, err := NewDriver("qemu:///system")
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() }) // after scratchDisk's cleanups

	disk := scratchDisk(t, d, "port")

	// A VNC port only when asked for, with a password: the hint names it.
	raw := tcgRaw(map[string]interface{}{"host_port_min": 47000, "host_port_max": 47099,
		"vnc_bind_address": "127.0.0.1", "vnc_password": "kn-" + randomSuffix()[:5]})
	raw["vm_name"] = "kn-it-port-" + randomSuffix()
	raw["output_directory"] = t.TempDir()
	var c Config
	_, err = c.Prepare(raw)
	require.NoError(t, err)
	state := testState(t, &c, d)
	state.Put(stateDiskPath, disk)

	fwd := &stepForwardPort{}
	require.Equal(t, multistep.ActionContinue, fwd.Run(context.Background(), state))
	defer fwd.Cleanup(state)
	taken := state.Get(stateHostPort).(int)
	// Someone else binds the reserved port before QEMU does.
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", taken))
	require.NoError(t, err)
	defer l.Close()

	def := &stepDefineDomain{}
	require.Equal(t, multistep.ActionContinue, def.Run(context.Background(), state))
	defer def.Cleanup(state)
	err = d.StartDomain(c.VMName)
	require.Error(t, err, "QEMU must refuse a forwarded port that is bound")
	assert.Regexp(t, portTakenRE, err.Error(), "QEMU's words for a taken port changed: %v", err)

	require.Equal(t, multistep.ActionContinue, (&stepStartDomain{}).Run(context.Background(), state), "%v", state.Get("error"))
	got := state.Get(stateHostPort).(int)
	assert.NotEqual(t, taken, got)
	st, err := d.DomainState(c.VMName)
	require.NoError(t, err)
	assert.Equal(t, StateRunning, st)
	x, err := d.DomainXML(c.VMName)
	require.NoError(t, err)
	assert.Contains(t, x, fmt.Sprintf("hostfwd=tcp:127.0.0.1:%d-:22", got))
	ui := state.Get(stateUI).(*packersdk.BasicUi).Writer.(*bytes.Buffer).String()
	assert.Contains(t, ui, fmt.Sprintf("retrying with 127.0.0.1:%d", got))
	assert.Regexp(t, `VNC viewer at 127\.0\.0\.1:59\d\d`, ui, "the VNC address is printed")
}
