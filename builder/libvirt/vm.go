// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package libvirt

import (
	"fmt"
	"sort"
)

// VM is a machine booted from an existing disk outside a Packer build: the
// lab and its end-to-end test boot an exported node image with it. Its XML
// comes from the same domainXML a build uses, with the builder's defaults
// (q35, virtio disk and NIC, BIOS, QEMU user networking).
type VM struct {
	Name        string
	Accelerator string // "kvm" or "tcg"
	CPUs        int
	MemoryMiB   int
	Disk        string   // qcow2 on the hypervisor
	CDROMs      []string // ISO files on the hypervisor, attached in order
	// SSHPort on the hypervisor's 127.0.0.1 is forwarded to the guest's
	// port 22; 0 forwards nothing.
	SSHPort int
	// Forwards are more ports of the hypervisor's 127.0.0.1 forwarded to
	// the guest: host port → guest port.
	Forwards map[int]int
	// GuestIP is the address QEMU user networking's DHCP gives the guest
	// (in 10.0.2.0/24, from .15 up; default 10.0.2.15), and MAC its NIC's
	// address (default QEMU's 52:54:00:12:34:56). Clones of one image
	// booted side by side get their own of both.
	GuestIP, MAC string
	SerialLog    string // file the serial console is logged to, if any
}

// DomainXML is the libvirt domain for v.
func (v VM) DomainXML() (string, error) {
	if v.Name == "" || v.Disk == "" || v.CPUs < 1 || v.MemoryMiB < 1 {
		return "", fmt.Errorf("vm: name, disk, cpus and memory are required (got %+v)", v)
	}
	if v.Accelerator != "kvm" && v.Accelerator != "tcg" {
		return "", fmt.Errorf("vm %s: accelerator %q: want kvm or tcg", v.Name, v.Accelerator)
	}
	fwd := &portForward{}
	if v.SSHPort != 0 {
		fwd = &portForward{HostPort: v.SSHPort, GuestPort: 22}
	}
	var extra []portForward
	for host, guest := range v.Forwards {
		if host < 1 || host > 65535 || guest < 1 || guest > 65535 || host == v.SSHPort {
			return "", fmt.Errorf("vm %s: forward %d → %d: want ports from 1 to 65535, the host's not the SSH port's", v.Name, host, guest)
		}
		extra = append(extra, portForward{HostPort: host, GuestPort: guest})
	}
	sort.Slice(extra, func(i, j int) bool { return extra[i].HostPort < extra[j].HostPort })
	return domainXML(domainSpec{
		Name: v.Name, Accelerator: v.Accelerator, Machine: "q35",
		CPUs: v.CPUs, MemoryMiB: v.MemoryMiB, Firmware: "bios",
		Disk:      diskSpec{Path: v.Disk, Format: "qcow2", Bus: "virtio"},
		CDROMs:    v.CDROMs,
		NICModel:  "virtio",
		Net:       netSpec{UserForward: fwd, UserExtraForwards: extra, UserGuestIP: v.GuestIP, UserMAC: v.MAC},
		SerialLog: v.SerialLog,
	})
}
