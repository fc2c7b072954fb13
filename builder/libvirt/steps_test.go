// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package libvirt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	golibvirt "github.com/digitalocean/go-libvirt"
	"github.com/hashicorp/packer-plugin-sdk/multistep"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func testState(t *testing.T, c *Config, d Driver) multistep.StateBag {
	state := new(multistep.BasicStateBag)
	state.Put(stateConfig, c)
	state.Put(stateDriver, d)
	state.Put(stateUI, &packersdk.BasicUi{Reader: new(bytes.Buffer), Writer: new(bytes.Buffer), ErrorWriter: new(bytes.Buffer), PB: &packersdk.NoopProgressTracker{}})
	return state
}

func preparedLinux(t *testing.T) *Config {
	dir := t.TempDir()
	base := filepath.Join(dir, "base.qcow2")
	require.NoError(t, os.WriteFile(base, append([]byte("QFI\xfb\x00\x00\x00\x03"), make([]byte, 1016)...), 0o644))
	raw := linuxRaw()
	raw["disk_image"] = base
	raw["output_directory"] = filepath.Join(dir, "out")
	var c Config
	_, err := c.Prepare(raw)
	require.NoError(t, err)
	return &c
}

func TestStepCreateStorageAndCleanup(t *testing.T) {
	c := preparedLinux(t)
	m := NewMockDriver()
	state := testState(t, c, m)
	iso := filepath.Join(t.TempDir(), "seed.iso")
	require.NoError(t, os.WriteFile(iso, []byte("iso bytes"), 0o644))
	state.Put(stateSeedISO, iso)

	s := &stepCreateStorage{}
	require.Equal(t, multistep.ActionContinue, s.Run(context.Background(), state))
	pool := state.Get(statePool).(string)
	assert.True(t, strings.HasPrefix(pool, "kubenode-packer-deb-"))
	vols, _ := m.VolumeNames(pool)
	assert.ElementsMatch(t, []string{"packer-deb-base", "packer-deb.qcow2", "packer-deb-cd0.iso"}, vols)
	assert.Equal(t, []byte("iso bytes"), m.Pools[pool]["packer-deb-cd0.iso"])
	assert.Contains(t, m.Calls, "CreateVolume "+pool+" packer-deb.qcow2 qcow2 backing=/pools/"+pool+"/packer-deb-base", "linked clone on the uploaded base")

	s.Cleanup(state)
	assert.Empty(t, m.Pools, "cleanup removes every volume and the pool it created")
}

func TestStepCreateStorageFailureCleansUp(t *testing.T) {
	c := preparedLinux(t)
	m := NewMockDriver()
	m.FailOn["UploadVolume"] = errors.New("disk full")
	state := testState(t, c, m)
	s := &stepCreateStorage{}
	require.Equal(t, multistep.ActionHalt, s.Run(context.Background(), state))
	assert.ErrorContains(t, state.Get("error").(error), "disk full")
	s.Cleanup(state)
	assert.Empty(t, m.Pools)
	assert.Contains(t, m.Calls, "DeleteVolume "+state.Get(statePool).(string)+" packer-deb-base")
}

func TestStepCreateStorageUsesExistingPool(t *testing.T) {
	c := preparedLinux(t)
	c.StoragePool = "images"
	m := NewMockDriver()
	m.Pools["images"] = map[string][]byte{"unrelated": nil}
	state := testState(t, c, m)
	s := &stepCreateStorage{}
	require.Equal(t, multistep.ActionContinue, s.Run(context.Background(), state))
	s.Cleanup(state)
	assert.Equal(t, map[string][]byte{"unrelated": nil}, m.Pools["images"], "a user's pool keeps everything but our volumes")
	for _, call := range m.Calls {
		assert.NotContains(t, call, "CreatePool")
		assert.NotContains(t, call, "DeletePool")
	}
}

func TestStepShutdownACPI(t *testing.T) {
	c := preparedLinux(t)
	c.ShutdownCommand = ""
	c.ShutdownTimeout = time.Minute
	m := NewMockDriver()
	m.Domains[c.VMName] = StateRunning
	m.ShutoffAfter = 2
	old := shutdownPoll
	shutdownPoll = time.Millisecond
	defer func() { shutdownPoll = old }()
	state := testState(t, c, m)
	require.Equal(t, multistep.ActionContinue, (&stepShutdown{}).Run(context.Background(), state))
	assert.Contains(t, m.Calls, "ShutdownDomain "+c.VMName)
}

func TestStepShutdownWaitsForWindowsToPowerItselfOff(t *testing.T) {
	c := preparedLinux(t)
	c.Windows = &WindowsSeedConfig{Version: "2022"}
	c.ShutdownCommand = ""
	c.ShutdownTimeout = time.Minute
	m := NewMockDriver()
	m.Domains[c.VMName] = StateRunning
	old := shutdownPoll
	shutdownPoll = time.Millisecond
	defer func() { shutdownPoll = old }()
	m.shuttingDown, m.ShutoffAfter = true, 3 // sysprep, then the power-off, started by the bake
	state := testState(t, c, m)
	require.Equal(t, multistep.ActionContinue, (&stepShutdown{}).Run(context.Background(), state))
	assert.NotContains(t, m.Calls, "ShutdownDomain "+c.VMName, "no ACPI request while sysprep runs")

	c.ShutdownTimeout = 20 * time.Millisecond
	m.Domains[c.VMName] = StateRunning
	m.ShutoffAfter = 1 << 30
	require.Equal(t, multistep.ActionHalt, (&stepShutdown{}).Run(context.Background(), testState(t, c, m)))
}

func TestStepShutdownTimeout(t *testing.T) {
	c := preparedLinux(t)
	c.ShutdownCommand = ""
	c.ShutdownTimeout = 20 * time.Millisecond
	m := NewMockDriver()
	m.Domains[c.VMName] = StateRunning
	m.ShutoffAfter = 1 << 30
	old := shutdownPoll
	shutdownPoll = time.Millisecond
	defer func() { shutdownPoll = old }()
	state := testState(t, c, m)
	require.Equal(t, multistep.ActionHalt, (&stepShutdown{}).Run(context.Background(), state))
	assert.ErrorContains(t, state.Get("error").(error), "did not power off within shutdown_timeout")
}

func TestStepDefineDomainCleanup(t *testing.T) {
	c := preparedLinux(t)
	m := NewMockDriver()
	state := testState(t, c, m)
	state.Put(stateDiskPath, "/pools/p/disk.qcow2")
	state.Put(stateHostPort, 2299)
	s := &stepDefineDomain{}
	require.Equal(t, multistep.ActionContinue, s.Run(context.Background(), state))
	s.Cleanup(state)
	assert.Equal(t, []string{"DefineDomain", "DestroyDomain " + c.VMName, "UndefineDomain " + c.VMName}, m.Calls)

	// A failed undefine says how to finish by hand; --tpm only for a TPM,
	// as virsh before libvirt 8.9 does not know it.
	for _, tpm := range []bool{false, true} {
		c.TPM = tpm
		m := NewMockDriver()
		m.FailOn["UndefineDomain"] = errors.New("undefining domain: connection reset")
		state := testState(t, c, m)
		state.Put(stateDiskPath, "/pools/p/disk.qcow2")
		s := &stepDefineDomain{}
		require.Equal(t, multistep.ActionContinue, s.Run(context.Background(), state))
		s.Cleanup(state)
		hint := "virsh undefine " + c.VMName + " --nvram"
		if tpm {
			hint += " --tpm"
		}
		assert.Contains(t, state.Get(stateUI).(*packersdk.BasicUi).ErrorWriter.(*bytes.Buffer).String(),
			"cleanup: undefining domain: connection reset ("+hint+")\n")
	}
}

func TestSaveFirmwareState(t *testing.T) {
	dir := t.TempDir()
	nvram := filepath.Join(dir, "vm_VARS.fd")
	require.NoError(t, os.WriteFile(nvram, []byte("efi vars"), 0o600))
	old := swtpmStateDir
	swtpmStateDir = filepath.Join(dir, "swtpm")
	defer func() { swtpmStateDir = old }()
	uuid := "0b3a8f50-95a5-4f9a-a1c9-1d6f1c0e1a2b"
	require.NoError(t, os.MkdirAll(filepath.Join(swtpmStateDir, uuid, "tpm2"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(swtpmStateDir, uuid, "tpm2", "tpm2-00.permall"), []byte("tpm"), 0o600))

	m := NewMockDriver()
	m.XML["vm"] = `<domain type="kvm"><name>vm</name><uuid>` + uuid + `</uuid><os><type>hvm</type><nvram>` + nvram +
		`</nvram></os><devices><tpm model="tpm-crb"><backend type="emulator" version="2.0"></backend></tpm></devices></domain>`
	out := filepath.Join(dir, "out")
	require.NoError(t, os.Mkdir(out, 0o755))
	saved, err := saveFirmwareState(m, "vm", out)
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Join(out, efiVarsFile), filepath.Join(out, tpmStateDir)}, saved)
	data, _ := os.ReadFile(filepath.Join(out, efiVarsFile))
	assert.Equal(t, "efi vars", string(data))
	data, _ = os.ReadFile(filepath.Join(out, tpmStateDir, "tpm2", "tpm2-00.permall"))
	assert.Equal(t, "tpm", string(data))

	// firmware="efi" without <nvram> (a stopped, autoselected domain): the
	// default store is used.
	oldNV := nvramDir
	nvramDir = dir
	defer func() { nvramDir = oldNV }()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "auto_VARS.fd"), []byte("auto vars"), 0o600))
	m.XML["auto"] = `<domain type="kvm"><name>auto</name><os firmware="efi"><type>hvm</type></os></domain>`
	out2 := filepath.Join(dir, "out2")
	require.NoError(t, os.Mkdir(out2, 0o755))
	saved, err = saveFirmwareState(m, "auto", out2)
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Join(out2, efiVarsFile)}, saved)
}

func TestCommHost(t *testing.T) {
	c := preparedLinux(t)
	m := NewMockDriver()
	state := testState(t, c, m)
	host, err := c.commHost(state)
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1", host, "user networking: the forwarded port on loopback")

	c.Network = "default"
	_, err = c.commHost(state)
	assert.ErrorContains(t, err, "waiting for the guest's address")
	m.Address = "192.0.2.10"
	host, err = c.commHost(state)
	require.NoError(t, err)
	assert.Equal(t, "192.0.2.10", host)
}

func TestStepStartDomainHypervRefused(t *testing.T) {
	const qemuSays = "internal error: qemu unexpectedly closed the monitor: 2025-03-01T10:00:00.000000Z " +
		"qemu-system-x86_64: kernel doesn't allow setting HyperV VP_INDEX"
	c := preparedLinux(t)
	m := NewMockDriver()
	m.FailOn["StartDomain"] = fmt.Errorf("starting domain %q: %w", c.VMName, golibvirt.Error{Code: uint32(golibvirt.ErrInternalError), Message: qemuSays})
	state := testState(t, c, m)
	require.Equal(t, multistep.ActionHalt, (&stepStartDomain{}).Run(context.Background(), state))
	err := state.Get("error").(error)
	assert.ErrorContains(t, err, qemuSays, "QEMU's own words are kept")
	assert.ErrorContains(t, err, "set hyperv_enlightenments = false")
	assert.ErrorContains(t, err, `accelerator = "tcg"`)
	var le golibvirt.Error
	assert.ErrorAs(t, err, &le, "the libvirt error stays reachable")

	// Other start failures pass through without the hint.
	m = NewMockDriver()
	m.FailOn["StartDomain"] = errors.New("starting domain: Cannot access storage file")
	state = testState(t, c, m)
	require.Equal(t, multistep.ActionHalt, (&stepStartDomain{}).Run(context.Background(), state))
	assert.EqualError(t, state.Get("error").(error), "starting domain: Cannot access storage file")

	assert.True(t, hypervRefusedRE.MatchString("qemu-system-x86_64: Hyper-V synthetic interrupt controller (requested by 'hv-synic' cpu flag) is not supported by kernel"))
}

func TestStepShutdownWaitsForAGuestWithoutCommunicator(t *testing.T) {
	raw := linuxRaw()
	raw["communicator"] = "none"
	delete(raw, "linux")
	var c Config
	_, err := c.Prepare(raw)
	require.NoError(t, err, "communicator none needs no shutdown_command")
	c.ShutdownTimeout = time.Minute
	m := NewMockDriver()
	m.Domains[c.VMName] = StateRunning
	old := shutdownPoll
	shutdownPoll = time.Millisecond
	defer func() { shutdownPoll = old }()
	m.shuttingDown, m.ShutoffAfter = true, 3 // the installer powers the guest off
	require.Equal(t, multistep.ActionContinue, (&stepShutdown{}).Run(context.Background(), testState(t, &c, m)))
	assert.NotContains(t, m.Calls, "ShutdownDomain "+c.VMName, "no ACPI request: the guest powers itself off")

	c.ShutdownTimeout = 20 * time.Millisecond
	m.Domains[c.VMName] = StateRunning
	m.ShutoffAfter = 1 << 30
	state := testState(t, &c, m)
	require.Equal(t, multistep.ActionHalt, (&stepShutdown{}).Run(context.Background(), state))
	assert.ErrorContains(t, state.Get("error").(error), `communicator = "none"`)
}
