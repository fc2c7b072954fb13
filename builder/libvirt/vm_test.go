// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package libvirt

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"libvirt.org/go/libvirtxml"
)

func TestVMDomainXML(t *testing.T) {
	x, err := VM{
		Name: "lab-node", Accelerator: "tcg", CPUs: 2, MemoryMiB: 2048,
		Disk: "/pool/node.qcow2", CDROMs: []string{"/pool/cidata.iso", "/pool/join.iso"},
		SSHPort: 2222, SerialLog: "/tmp/serial.log",
	}.DomainXML()
	require.NoError(t, err)
	var d libvirtxml.Domain
	require.NoError(t, d.Unmarshal(x))
	assert.Equal(t, "qemu", d.Type, "tcg is a qemu domain")
	assert.Equal(t, uint(2048), d.Memory.Value)
	var cdroms []string
	for _, disk := range d.Devices.Disks {
		switch disk.Device {
		case "disk":
			assert.Equal(t, "/pool/node.qcow2", disk.Source.File.File)
			assert.Equal(t, "virtio", disk.Target.Bus)
		case "cdrom":
			cdroms = append(cdroms, disk.Source.File.File)
		}
	}
	assert.Equal(t, []string{"/pool/cidata.iso", "/pool/join.iso"}, cdroms)
	assert.Contains(t, x, "hostfwd=tcp:127.0.0.1:2222-:22")
	assert.Contains(t, x, "/tmp/serial.log")

	noFwd, err := VM{Name: "n", Accelerator: "kvm", CPUs: 1, MemoryMiB: 512, Disk: "/d.qcow2"}.DomainXML()
	require.NoError(t, err)
	assert.NotContains(t, noFwd, "-:22", "no SSH port, no forward to it")
	assert.Contains(t, noFwd, "type=\"kvm\"")
	assert.NotContains(t, noFwd, "dhcpstart=", "QEMU's default guest address")
	assert.NotContains(t, noFwd, ",mac=", "QEMU's default MAC")
}

func TestVMDomainXMLGivesACloneItsOwnAddressAndMAC(t *testing.T) {
	x, err := VM{Name: "n2", Accelerator: "tcg", CPUs: 1, MemoryMiB: 512, Disk: "/d.qcow2",
		SSHPort: 2223, GuestIP: "10.0.2.16", MAC: "52:54:00:6b:6e:02"}.DomainXML()
	require.NoError(t, err)
	var d libvirtxml.Domain
	require.NoError(t, d.Unmarshal(x))
	require.NotNil(t, d.QEMUCommandline)
	var args []string
	for _, a := range d.QEMUCommandline.Args {
		args = append(args, a.Value)
	}
	assert.Contains(t, args, "user,id="+userNetID+",dhcpstart=10.0.2.16,hostfwd=tcp:127.0.0.1:2223-:22")
	assert.Contains(t, args, "virtio-net-pci,netdev="+userNetID+",bus=pcie.0,addr=0x10,mac=52:54:00:6b:6e:02")
}

// More ports are forwarded beside SSH's: a control plane's API server.
func TestVMDomainXMLForwardsMorePorts(t *testing.T) {
	x, err := VM{Name: "cp", Accelerator: "tcg", CPUs: 2, MemoryMiB: 2560, Disk: "/d.qcow2",
		SSHPort: 2223, Forwards: map[int]int{41000: 6443, 40999: 10250}}.DomainXML()
	require.NoError(t, err)
	assert.Contains(t, x, "hostfwd=tcp:127.0.0.1:2223-:22,hostfwd=tcp:127.0.0.1:40999-:10250,hostfwd=tcp:127.0.0.1:41000-:6443")
	_, err = VM{Name: "cp", Accelerator: "tcg", CPUs: 2, MemoryMiB: 2560, Disk: "/d.qcow2",
		SSHPort: 2223, Forwards: map[int]int{2223: 6443}}.DomainXML()
	assert.ErrorContains(t, err, "forward 2223 → 6443")
}

func TestVMDomainXMLRejectsIncompleteVMs(t *testing.T) {
	for name, vm := range map[string]VM{
		"no disk":         {Name: "n", Accelerator: "tcg", CPUs: 1, MemoryMiB: 512},
		"no name":         {Accelerator: "tcg", CPUs: 1, MemoryMiB: 512, Disk: "/d"},
		"bad accelerator": {Name: "n", Accelerator: "hvf", CPUs: 1, MemoryMiB: 512, Disk: "/d"},
	} {
		_, err := vm.DomainXML()
		assert.Error(t, err, name)
	}
}
