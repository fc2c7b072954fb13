// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build integration

package libvirt

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/packer-plugin-sdk/multistep"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/internal/harness"
)

// TestDomainOptionsOnLibvirt defines, through stepDefineDomain and the real
// driver, TCG domains with qemuargs, a domain_xml_patch and cpu_model on the
// real libvirtd: libvirt accepts them with its schema check on, the default
// TCG CPU gives the guest the x86-64-v2 features, and a patch that breaks
// the schema is refused at define time, where libvirt without the check
// would have dropped the misspelt element without a word.
func TestDomainOptionsOnLibvirt(t *testing.T) {
	harness.Libvirtd(t)
	d, err := NewDriver("qemu:///system")
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() }) // after scratchDisk's cleanups

	disk := scratchDisk(t, d, "options")

	prepare := func(t *testing.T, extra map[string]interface{}) *Config {
		raw := tcgRaw(extra)
		raw["vm_name"] = "kn-it-options-" + randomSuffix()
		raw["output_directory"] = t.TempDir()
		var c Config
		_, err := c.Prepare(raw)
		require.NoError(t, err)
		return &c
	}
	define := func(t *testing.T, c *Config) (multistep.StateBag, *stepDefineDomain, multistep.StepAction) {
		state := testState(t, c, d)
		state.Put(stateDiskPath, disk)
		state.Put(stateHostPort, freeLoopbackPort(t))
		s := &stepDefineDomain{}
		return state, s, s.Run(context.Background(), state)
	}
	virsh := func(args ...string) string {
		out, err := exec.Command("virsh", append([]string{"-c", "qemu:///system"}, args...)...).CombinedOutput()
		require.NoError(t, err, "virsh %v: %s", args, out)
		return string(out)
	}

	t.Run("accepted", func(t *testing.T) {
		c := prepare(t, map[string]interface{}{
			"sockets": 1, "cores": 2, "threads": 1,
			"qemuargs": [][]string{{"-device", "virtio-serial-pci,id=kubenode-serial-{{ .SSHHostPort }},bus=pcie.0,addr=0x11"}},
			"domain_xml_patch": []map[string]interface{}{
				{"xpath": "/domain/devices", "add": "<watchdog model='i6300esb' action='reset'/>"},
				{"xpath": "/domain/devices/input[@type='tablet']", "remove": true},
			},
		})
		state, s, action := define(t, c)
		require.Equal(t, multistep.ActionContinue, action, "%v", state.Get("error"))
		defer s.Cleanup(state)
		serialID := fmt.Sprintf("kubenode-serial-%d", state.Get(stateHostPort).(int)) // {{ .SSHHostPort }} filled in

		x := virsh("dumpxml", c.VMName)
		assert.Contains(t, x, "<watchdog model='i6300esb' action='reset'>")
		assert.NotContains(t, x, "<input type='tablet'")
		assert.Contains(t, x, "<qemu:arg value='virtio-serial-pci,id="+serialID+",bus=pcie.0,addr=0x11'/>")
		assert.Contains(t, x, "<model fallback='forbid'>Nehalem</model>")
		assert.Contains(t, x, "<topology sockets='1' dies='1' cores='2' threads='1'/>")

		// Started, QEMU's vCPU has the x86-64-v2 features RHEL 9 needs, and
		// qemuargs reached QEMU's command line.
		require.NoError(t, d.StartDomain(c.VMName))
		defer d.DestroyDomain(c.VMName)
		time.Sleep(time.Second)
		var cpus struct {
			Return []struct {
				QOMPath string `json:"qom-path"`
			} `json:"return"`
		}
		require.NoError(t, json.Unmarshal([]byte(virsh("qemu-monitor-command", c.VMName, `{"execute":"query-cpus-fast"}`)), &cpus))
		require.Len(t, cpus.Return, 2, "cores = 2")
		for _, feature := range []string{"sse4.2", "sse4.1", "ssse3", "popcnt", "cx16", "lahf-lm"} {
			out := virsh("qemu-monitor-command", c.VMName,
				`{"execute":"qom-get","arguments":{"path":"`+cpus.Return[0].QOMPath+`","property":"`+feature+`"}}`)
			assert.Contains(t, out, `"return":true`, "vCPU feature %s", feature)
		}
		qtree := virsh("qemu-monitor-command", c.VMName, "--hmp", "info qtree")
		assert.Contains(t, qtree, `id "`+serialID+`"`, "the qemuargs device exists in the running VM")
	})

	t.Run("maximum", func(t *testing.T) {
		c := prepare(t, map[string]interface{}{"cpu_model": "maximum"})
		state, s, action := define(t, c)
		require.Equal(t, multistep.ActionContinue, action, "%v", state.Get("error"))
		defer s.Cleanup(state)
		assert.Contains(t, virsh("dumpxml", c.VMName), "<cpu mode='maximum'")
	})

	t.Run("schema refuses a bad patch", func(t *testing.T) {
		c := prepare(t, map[string]interface{}{
			"domain_xml_patch": []map[string]interface{}{{"xpath": "/domain/devices", "add": "<wathcdog model='i6300esb'/>"}},
		})
		state, s, action := define(t, c)
		defer s.Cleanup(state)
		require.Equal(t, multistep.ActionHalt, action)
		err := state.Get("error").(error)
		t.Logf("libvirt: %v", err)
		assert.True(t, isInvalidDomainXML(err), "VIR_ERR_XML_INVALID_SCHEMA: %v", err)
		assert.ErrorContains(t, err, "failed to validate against schema")
		assert.ErrorContains(t, err, "the domain XML after domain_xml_patch: libvirt's schema refuses it; fix the patch")
		_, err = d.DomainState(c.VMName)
		assert.True(t, IsNotFound(err), "nothing was defined: %v", err)

		// Without the check libvirt takes the same XML and drops the
		// misspelt element silently.
		_, x, err := c.renderDomain(state)
		require.NoError(t, err)
		f := filepath.Join(t.TempDir(), "domain.xml")
		require.NoError(t, os.WriteFile(f, []byte(x), 0o644))
		virsh("define", f)
		defer d.UndefineDomain(c.VMName)
		assert.NotContains(t, virsh("dumpxml", c.VMName), "wathcdog")
	})
}

func freeLoopbackPort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
