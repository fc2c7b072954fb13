// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package libvirt

import (
	"encoding/xml"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"libvirt.org/go/libvirtxml"

	"github.com/kubenode/packer-plugin-kubenode/internal/golden"
)

func TestDomainCPU(t *testing.T) {
	for _, tc := range []struct {
		name, accel string
		spec        cpuSpec
		want        string
	}{
		{"kvm default", "kvm", cpuSpec{}, `<cpu mode="host-passthrough"></cpu>`},
		{"tcg default has x86-64-v2", "tcg", cpuSpec{}, `<cpu match="exact" mode="custom"><model fallback="forbid">Nehalem</model></cpu>`},
		{"maximum", "tcg", cpuSpec{Model: "maximum"}, `<cpu mode="maximum"></cpu>`},
		{"host-model", "kvm", cpuSpec{Model: "host-model"}, `<cpu mode="host-model"></cpu>`},
		{"named with features and topology", "kvm",
			cpuSpec{Model: "Skylake-Client-v4", Features: []string{"+aes", "-vmx"}, Topology: cpuTopology{1, 4, 2}},
			`<cpu match="exact" mode="custom"><model fallback="forbid">Skylake-Client-v4</model><topology sockets="1" cores="4" threads="2"></topology>` +
				`<feature policy="require" name="aes"></feature><feature policy="disable" name="vmx"></feature></cpu>`},
		{"passthrough with topology", "kvm", cpuSpec{Topology: cpuTopology{2, 1, 1}},
			`<cpu mode="host-passthrough"><topology sockets="2" cores="1" threads="1"></topology></cpu>`},
	} {
		x, err := xml.Marshal(domainCPU(tc.accel, tc.spec))
		require.NoError(t, err, tc.name)
		assert.Equal(t, tc.want, string(x), tc.name)
	}
}

func TestDomainXMLQemuArgs(t *testing.T) {
	args := func(s domainSpec) []string {
		x, err := domainXML(s)
		require.NoError(t, err)
		var d libvirtxml.Domain
		require.NoError(t, d.Unmarshal(x))
		var out []string
		if d.QEMUCommandline != nil {
			for _, a := range d.QEMUCommandline.Args {
				out = append(out, a.Value)
			}
		}
		return out
	}
	s := linuxSpec()
	s.QEMUArgs = [][]string{{"-device", "virtio-serial-pci"}, {"-smbios", "type=1,", "serial=kubenode"}, {"-no-hpet"}}
	assert.Equal(t, []string{
		"-netdev", "user,id=kubenode0,hostfwd=tcp:127.0.0.1:2222-:22",
		"-device", "virtio-net-pci,netdev=kubenode0,bus=pcie.0,addr=0x10",
		"-device", "virtio-serial-pci",
		"-smbios", "type=1,serial=kubenode", // joined without a separator, as the qemu builder does
		"-no-hpet",
	}, args(s), "the builder's network first, then qemuargs in order")

	s.Net = netSpec{Bridge: "br0"}
	assert.Equal(t, []string{"-device", "virtio-serial-pci", "-smbios", "type=1,serial=kubenode", "-no-hpet"}, args(s),
		"qemuargs alone when the network is not user-mode")
	s.QEMUArgs = nil
	assert.Empty(t, args(s))
}

func TestPatchDomainXML(t *testing.T) {
	base, err := domainXML(linuxSpec())
	require.NoError(t, err)
	for _, tc := range []struct {
		name    string
		patches []DomainXMLPatch
		has     []string
		lacks   []string
	}{
		{"add a device", []DomainXMLPatch{{XPath: "/domain/devices", Add: "<watchdog model='i6300esb' action='reset'/>"}},
			[]string{`<watchdog model="i6300esb" action="reset"/>`}, nil},
		{"add two elements", []DomainXMLPatch{{XPath: "/domain/devices", Add: "<watchdog model='i6300esb'/>\n<panic model='isa'/>"}},
			[]string{`<watchdog model="i6300esb"/>`, `<panic model="isa"/>`}, nil},
		{"replace every match in place", []DomainXMLPatch{{XPath: "//disk/driver", Replace: "<driver name='qemu' type='qcow2' cache='unsafe'/>"}},
			[]string{`<driver name="qemu" type="qcow2" cache="unsafe"/>
      <source file="/pool/debian-cd0.iso"/>`}, []string{`discard="unmap"`}},
		{"remove", []DomainXMLPatch{{XPath: "/domain/devices/input[@type='tablet']", Remove: true}}, nil, []string{"<input"}},
		{"in order", []DomainXMLPatch{
			{XPath: "/domain/devices", Add: "<watchdog model='i6300esb'/>"},
			{XPath: "/domain/devices/watchdog", Replace: "<watchdog model='itco' action='poweroff'/>"},
		}, []string{`<watchdog model="itco" action="poweroff"/>`}, []string{"i6300esb"}},
		{"qemu prefix declared", []DomainXMLPatch{{XPath: "/domain", Add: "<qemu:capabilities><qemu:del capability='usb-redir'/></qemu:capabilities>"}},
			[]string{`<domain type="qemu" xmlns:qemu="http://libvirt.org/schemas/domain/qemu/1.0">`, `<qemu:del capability="usb-redir"/>`}, nil},
		{"the builder's arguments", []DomainXMLPatch{{XPath: "/domain/commandline", Add: "<arg value='-no-hpet'/>"}},
			[]string{`<arg value="-no-hpet"/>
  </commandline>`}, nil},
	} {
		x, err := patchDomainXML(base, tc.patches)
		require.NoError(t, err, tc.name)
		for _, s := range tc.has {
			assert.Contains(t, x, s, tc.name)
		}
		for _, s := range tc.lacks {
			assert.NotContains(t, x, s, tc.name)
		}
		var d libvirtxml.Domain
		assert.NoError(t, d.Unmarshal(x), "%s: still a domain", tc.name)
	}
	same, err := patchDomainXML(base, nil)
	require.NoError(t, err)
	assert.Equal(t, base, same, "no patch, no rewrite")
}

// A TCG guest with every option of this file: a named CPU model with a
// feature and a topology, qemuargs, and domain_xml_patch blocks.
func TestDomainXMLOptionsGolden(t *testing.T) {
	s := linuxSpec()
	s.Name = "rocky9"
	s.CPUs = 4
	s.CPU = cpuSpec{Model: "Nehalem", Features: []string{"+aes"}, Topology: cpuTopology{Sockets: 1, Cores: 2, Threads: 2}}
	s.QEMUArgs = [][]string{{"-device", "virtio-serial-pci"}, {"-smbios", "type=1,serial=kubenode"}}
	x, err := domainXML(s)
	require.NoError(t, err)
	x, err = patchDomainXML(x, []DomainXMLPatch{
		{XPath: "/domain/devices", Add: "<watchdog model='i6300esb' action='reset'/>"},
		{XPath: "/domain/devices/input[@type='tablet']", Remove: true},
	})
	require.NoError(t, err)
	golden.Assert(t, "domain-linux-tcg-options.xml", []byte(x))
	assert.True(t, strings.HasPrefix(x, `<domain type="qemu">`))
}
