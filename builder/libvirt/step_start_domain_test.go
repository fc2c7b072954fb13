// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package libvirt

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/packer-plugin-sdk/multistep"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBootPressAnyKeyPressesSpaceThenTypesTheCommand(t *testing.T) {
	c := preparedLinux(t)
	c.BootPressAnyKey = 300 * time.Millisecond
	c.BootWait = 100 * time.Millisecond // already past when the presses end
	c.BootCommand = []string{"c"}
	c.BootGroupInterval = time.Millisecond
	old := pressAnyKeyEvery
	pressAnyKeyEvery = 20 * time.Millisecond
	defer func() { pressAnyKeyEvery = old }()
	m := NewMockDriver()
	state := testState(t, c, m)
	start := time.Now()
	state.Put(stateStartedAt, start)

	require.Equal(t, multistep.ActionContinue, (&stepTypeBootCommand{}).Run(context.Background(), state))
	assert.GreaterOrEqual(t, time.Since(start), c.BootPressAnyKey, "presses last from power-on for boot_press_any_key")
	require.GreaterOrEqual(t, len(m.Keys), 6, "the space bar is pressed again and again")
	last := m.Keys[len(m.Keys)-1]
	for _, k := range m.Keys[:len(m.Keys)-1] {
		assert.Equal(t, []uint32{keySpace}, k)
	}
	assert.Equal(t, []uint32{46}, last, "then boot_command's 'c' is typed, after every press")
}

func TestBootPressAnyKeyAloneAndBootWaitFromPowerOn(t *testing.T) {
	c := preparedLinux(t)
	c.BootPressAnyKey = 50 * time.Millisecond
	c.BootCommand = nil
	m := NewMockDriver()
	state := testState(t, c, m)
	state.Put(stateStartedAt, time.Now())
	require.Equal(t, multistep.ActionContinue, (&stepTypeBootCommand{}).Run(context.Background(), state))
	assert.NotEmpty(t, m.Keys, "presses without a boot_command")

	// boot_wait counts from power-on: a start long ago types at once.
	c.BootPressAnyKey = 0
	c.BootWait = time.Hour
	c.BootCommand = []string{"x"}
	m = NewMockDriver()
	state = testState(t, c, m)
	state.Put(stateStartedAt, time.Now().Add(-2*time.Hour))
	done := make(chan multistep.StepAction, 1)
	go func() { done <- (&stepTypeBootCommand{}).Run(context.Background(), state) }()
	select {
	case a := <-done:
		assert.Equal(t, multistep.ActionContinue, a)
	case <-time.After(5 * time.Second):
		t.Fatal("boot_wait was counted from the step, not from power-on")
	}
}

func TestPrepareBootPressAnyKey(t *testing.T) {
	raw := linuxRaw()
	raw["boot_press_any_key"] = "-1s"
	var c Config
	_, err := c.Prepare(raw)
	assert.ErrorContains(t, err, "boot_press_any_key")

	raw["boot_press_any_key"] = "45s"
	c = Config{}
	_, err = c.Prepare(raw)
	require.NoError(t, err)
	assert.Equal(t, 45*time.Second, c.BootPressAnyKey)
}

func TestStartRetriesWithAnotherPortWhenTheForwardedOneIsTaken(t *testing.T) {
	setPackerCache(t)
	c := preparedLinux(t)
	c.HostPortMin, c.HostPortMax = 20000, 20100
	c.QemuArgs = [][]string{{"-smbios", "type=11,value=kubenode:port={{ .SSHHostPort }}"}}
	m := NewMockDriver()
	state := testState(t, c, m)
	state.Put(stateDiskPath, "/d.qcow2")
	fwd := &stepForwardPort{}
	require.Equal(t, multistep.ActionContinue, fwd.Run(context.Background(), state))
	defer fwd.Cleanup(state)
	first := state.Get(stateHostPort).(int)
	def := &stepDefineDomain{}
	require.Equal(t, multistep.ActionContinue, def.Run(context.Background(), state), "%v", state.Get("error"))
	require.Len(t, m.Defined, 1)
	assert.Contains(t, m.Defined[0], "kubenode:port="+itoa(first))
	// As libvirt returns it once defined: with the UUID it gave the domain.
	m.XML = map[string]string{c.VMName: "<domain type='qemu'><name>" + c.VMName + "</name><uuid>4b5bd55c-0000-4000-8000-000000000001</uuid></domain>"}
	m.StartErrs = []error{errors.New("internal error: process exited while connecting to monitor: " +
		"qemu-system-x86_64: -netdev user,id=kubenode0,hostfwd=tcp:127.0.0.1:20000-:22: Could not set up host forwarding rule 'tcp:127.0.0.1:20000-:22'")}

	require.Equal(t, multistep.ActionContinue, (&stepStartDomain{}).Run(context.Background(), state))
	second := state.Get(stateHostPort).(int)
	assert.NotEqual(t, first, second)
	require.Len(t, m.Defined, 2, "the domain is redefined once")
	assert.Contains(t, m.Defined[1], "hostfwd=tcp:127.0.0.1:"+itoa(second)+"-:22")
	assert.Contains(t, m.Defined[1], "kubenode:port="+itoa(second), "qemuargs follow the new port")
	assert.Contains(t, m.Defined[1], "<uuid>4b5bd55c-0000-4000-8000-000000000001</uuid>", "redefined with the domain's UUID")
	assert.NotContains(t, m.Defined[1], itoa(first))
	assert.Equal(t, 2, countCalls(m.Calls, "StartDomain "+c.VMName))
}

func TestVNCAddress(t *testing.T) {
	x := `<domain type='qemu'><name>v</name><devices><graphics type='vnc' port='5901' autoport='yes' listen='127.0.0.1'><listen type='address' address='127.0.0.1'/></graphics></devices></domain>`
	assert.Equal(t, "127.0.0.1:5901", vncAddress(x))
	assert.Equal(t, "", vncAddress(`<domain type='qemu'><name>v</name><devices><graphics type='vnc' port='-1' autoport='yes'/></devices></domain>`), "not started yet")
	assert.Contains(t, vncHint("127.0.0.1:5901", "qemu:///system", "v"), "127.0.0.1:5901")
	assert.Contains(t, vncHint("127.0.0.1:5901", "qemu+ssh://me@hv/system", "v"), "ssh -L 5901:127.0.0.1:5901 me@hv")
}

func TestWithUUIDOf(t *testing.T) {
	defined := `<domain type='qemu'>
  <name>v</name>
  <uuid>98970e4f-040a-42ff-a8a1-4911e42e71d4</uuid>
</domain>`
	assert.Equal(t, `<domain type="qemu"><name>v</name><uuid>98970e4f-040a-42ff-a8a1-4911e42e71d4</uuid><vcpu>2</vcpu></domain>`,
		withUUIDOf(`<domain type="qemu"><name>v</name><vcpu>2</vcpu></domain>`, defined))
	assert.Equal(t, `<domain><name>v</name><uuid>x</uuid></domain>`, withUUIDOf(`<domain><name>v</name><uuid>x</uuid></domain>`, defined), "a UUID of its own is kept")
	assert.Equal(t, `<domain><name>v</name></domain>`, withUUIDOf(`<domain><name>v</name></domain>`, `<domain/>`))
}
