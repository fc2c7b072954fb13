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

func windowsSpec() domainSpec {
	return domainSpec{
		Name: "win2022", Accelerator: "kvm", Machine: "q35", CPUs: 4, MemoryMiB: 4096,
		Firmware: "uefi", SecureBoot: true, TPM: true, HyperV: true, NICModel: "virtio",
		Disk:      diskSpec{Path: "/pool/win2022.qcow2", Format: "qcow2", Bus: "virtio"},
		CDROMs:    []string{"/pool/win2022-cd0.iso", "/pool/win2022-cd1.iso", "/pool/win2022-cd2.iso"},
		Net:       netSpec{UserForward: &portForward{HostPort: 2345, GuestPort: 5985}},
		SerialLog: "/out/serial.log",
	}
}

func linuxSpec() domainSpec {
	return domainSpec{
		Name: "debian", Accelerator: "tcg", Machine: "q35", CPUs: 2, MemoryMiB: 1024,
		Firmware: "bios", NICModel: "virtio",
		Disk:      diskSpec{Path: "/pool/debian.qcow2", Format: "qcow2", Bus: "virtio"},
		CDROMs:    []string{"/pool/debian-cd0.iso"},
		Net:       netSpec{UserForward: &portForward{HostPort: 2222, GuestPort: 22}},
		SerialLog: "/out/serial.log",
	}
}

func TestDomainXMLGolden(t *testing.T) {
	x, err := domainXML(windowsSpec())
	require.NoError(t, err)
	golden.Assert(t, "domain-windows-2022-uefi.xml", []byte(x))
	x, err = domainXML(linuxSpec())
	require.NoError(t, err)
	golden.Assert(t, "domain-linux-base-disk.xml", []byte(x))
}

func TestDomainXMLWindows(t *testing.T) {
	x, err := domainXML(windowsSpec())
	require.NoError(t, err)
	var d libvirtxml.Domain
	require.NoError(t, xml.Unmarshal([]byte(x), &d))
	assert.Equal(t, "kvm", d.Type)
	assert.Equal(t, "efi", d.OS.Firmware)
	require.NotNil(t, d.Features.SMM, "Secure Boot needs SMM")
	require.NotNil(t, d.Features.HyperV)
	require.Len(t, d.Devices.TPMs, 1)
	assert.Equal(t, "2.0", d.Devices.TPMs[0].Backend.Emulator.Version)
	var cds []string
	for _, disk := range d.Devices.Disks {
		if disk.Device == "cdrom" {
			cds = append(cds, disk.Target.Dev)
			assert.Equal(t, "sata", disk.Target.Bus)
		} else {
			assert.Equal(t, uint(1), disk.Boot.Order, "the disk boots first: an empty disk falls through to the CD")
		}
	}
	assert.Equal(t, []string{"sda", "sdb", "sdc"}, cds)
	args := []string{}
	for _, a := range d.QEMUCommandline.Args {
		args = append(args, a.Value)
	}
	assert.Contains(t, strings.Join(args, " "), "hostfwd=tcp:127.0.0.1:2345-:5985")
	assert.Contains(t, strings.Join(args, " "), "virtio-net-pci,netdev=kubenode0,bus=pcie.0,addr=0x10")
}

func TestDomainXMLNoHyperVUnderTCG(t *testing.T) {
	s := windowsSpec()
	s.Accelerator = "tcg"
	x, err := domainXML(s)
	require.NoError(t, err)
	var d libvirtxml.Domain
	require.NoError(t, xml.Unmarshal([]byte(x), &d))
	assert.Nil(t, d.Features.HyperV, "QEMU refuses Hyper-V enlightenments under TCG")
	assert.Empty(t, d.Clock.Timer)
	assert.Equal(t, "utc", d.Clock.Offset)
	assert.Equal(t, "qemu", d.Type)
}

// The answer file tells Windows its RTC is UTC (RealTimeIsUniversal), so
// the domain's RTC must be UTC whatever the hypervisor's time zone: with
// offset "localtime" a host west of UTC starts the guest hours behind.
func TestDomainXMLWindowsClockIsUTC(t *testing.T) {
	x, err := domainXML(windowsSpec())
	require.NoError(t, err)
	var d libvirtxml.Domain
	require.NoError(t, xml.Unmarshal([]byte(x), &d))
	require.NotNil(t, d.Clock)
	assert.Equal(t, "utc", d.Clock.Offset)
	assert.Equal(t, []libvirtxml.DomainTimer{{Name: "hypervclock", Present: "yes"}}, d.Clock.Timer,
		"the Hyper-V clock stays under KVM")
}

func TestDomainXMLSATADiskSharesUnits(t *testing.T) {
	s := linuxSpec()
	s.Disk.Bus = "sata"
	s.Accelerator = "kvm"
	s.Machine = "pc"
	s.NICModel = "e1000"
	x, err := domainXML(s)
	require.NoError(t, err)
	var d libvirtxml.Domain
	require.NoError(t, xml.Unmarshal([]byte(x), &d))
	assert.Equal(t, "sda", d.Devices.Disks[0].Target.Dev)
	assert.Equal(t, "sdb", d.Devices.Disks[1].Target.Dev)
	assert.Contains(t, x, "e1000,netdev=kubenode0,bus=pci.0")
}

// With nothing to forward (communicator = "none"), user networking has no
// forwarding rule: QEMU refuses one for port 0 ("Bad guest port").
func TestDomainXMLUserNetworkingWithoutForward(t *testing.T) {
	spec := linuxSpec()
	spec.Net.UserForward = &portForward{}
	x, err := domainXML(spec)
	require.NoError(t, err)
	assert.Contains(t, x, `<arg value="user,id=kubenode0"></arg>`)
	assert.NotContains(t, x, "hostfwd")
}

// The display listens nowhere unless vnc_bind_address asks for a port: a
// VNC port on the loopback is open to every local account and to guests on
// user-mode networking (10.0.2.2 is the hypervisor's 127.0.0.1).
func TestDomainXMLVNC(t *testing.T) {
	for _, tc := range []struct {
		name           string
		spec           func() domainSpec
		listen, passwd string
		want           string
	}{
		{name: "windows default", spec: windowsSpec, want: `<graphics type="vnc"><listen type="none"></listen></graphics>`},
		{name: "linux default", spec: linuxSpec, want: `<graphics type="vnc"><listen type="none"></listen></graphics>`},
		{name: "asked for", spec: linuxSpec, listen: "127.0.0.1", passwd: "s3cr&t",
			want: `<graphics type="vnc" autoport="yes" passwd="s3cr&amp;t"><listen type="address" address="127.0.0.1"></listen></graphics>`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.spec()
			s.VNCListen, s.VNCPassword = tc.listen, tc.passwd
			x, err := domainXML(s)
			require.NoError(t, err)
			var d libvirtxml.Domain
			require.NoError(t, d.Unmarshal(x))
			require.Len(t, d.Devices.Graphics, 1, "one display")
			gx, err := xml.Marshal(&d.Devices.Graphics[0])
			require.NoError(t, err)
			assert.Equal(t, tc.want, string(gx))
			g := d.Devices.Graphics[0].VNC
			require.NotNil(t, g)
			if tc.listen == "" {
				assert.Empty(t, g.Listen, "no listen address")
				assert.Empty(t, g.AutoPort, "no port")
				assert.Zero(t, g.Port, "no port")
			}
		})
	}
}

// The serial console is COM1 in a Windows guest (ttyS0 in Linux): the
// first ISA serial port, logged to serial.log; the Windows bootstrap writes
// its progress there.
func TestDomainSerialIsCOM1(t *testing.T) {
	x, err := domainXML(windowsSpec())
	require.NoError(t, err)
	var d libvirtxml.Domain
	require.NoError(t, xml.Unmarshal([]byte(x), &d))
	require.Len(t, d.Devices.Serials, 1)
	s := d.Devices.Serials[0]
	assert.Equal(t, "isa-serial", s.Target.Type)
	require.NotNil(t, s.Target.Port)
	assert.Equal(t, uint(0), *s.Target.Port, "port 0 of isa-serial is COM1 (I/O 0x3f8)")
	require.NotNil(t, s.Log)
	assert.Equal(t, "/out/serial.log", s.Log.File)
}
