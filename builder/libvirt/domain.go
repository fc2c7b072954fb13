// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package libvirt

import (
	"fmt"
	"strings"

	"libvirt.org/go/libvirtxml"
)

// domainSpec is everything the domain XML depends on. domainXML is a pure
// function of it, so the XML is golden-tested without libvirt.
type domainSpec struct {
	Name        string
	Accelerator string // "kvm" or "tcg"
	Machine     string
	CPUs        int
	CPU         cpuSpec
	MemoryMiB   int
	Firmware    string // "bios" or "uefi"
	SecureBoot  bool
	TPM         bool
	HyperV      bool // Hyper-V enlightenments and the Hyper-V clock (Windows on KVM)
	Disk        diskSpec
	// CDROMs are attached in order; the first boots second, after the disk
	// (an empty disk is skipped, so an install ISO boots until Windows or
	// Linux is on the disk).
	CDROMs    []string
	NICModel  string
	Net       netSpec
	SerialLog string // file on the hypervisor the serial console is logged to
	// VNCListen is the address the display's VNC port listens on ("" for
	// none) and VNCPassword its password.
	VNCListen, VNCPassword string
	// QEMUArgs are qemuargs: each an option and the parts of its value,
	// appended to <qemu:commandline> after the builder's own arguments.
	QEMUArgs [][]string
}

// cpuSpec is the guest CPU: Model is "host-passthrough", "host-model",
// "maximum" or a named QEMU model ("" picks the accelerator's default);
// Features are "+name" (required) or "-name" (disabled); a zero Topology
// leaves the topology to libvirt.
type cpuSpec struct {
	Model    string
	Features []string
	Topology cpuTopology
}

type cpuTopology struct {
	Sockets, Cores, Threads int
}

// defaultTCGCPUModel is the CPU model under TCG when cpu_model is unset.
// QEMU's default model, qemu64, lacks the x86-64-v2 features (SSE4.2,
// POPCNT, CX16, LAHF/SAHF in 64-bit mode, SSSE3) that RHEL 9 and its
// rebuilds are compiled for. Nehalem is the oldest named model with all of
// them, TCG provides every one (libvirt 9.0's domcapabilities for QEMU
// 7.2 under TCG lists it usable), and unlike "maximum" its features do not
// change with the QEMU version.
const defaultTCGCPUModel = "Nehalem"

// domainCPU renders the <cpu> element, or nil for QEMU's own default.
func domainCPU(accelerator string, s cpuSpec) *libvirtxml.DomainCPU {
	model := s.Model
	if model == "" {
		model = "host-passthrough"
		if accelerator == "tcg" {
			model = defaultTCGCPUModel
		}
	}
	cpu := &libvirtxml.DomainCPU{}
	switch model {
	case "host-passthrough", "host-model", "maximum":
		cpu.Mode = model
	default:
		// fallback='forbid': a model the hypervisor cannot provide fails
		// the start instead of being swapped for another.
		cpu.Mode, cpu.Match = "custom", "exact"
		cpu.Model = &libvirtxml.DomainCPUModel{Value: model, Fallback: "forbid"}
	}
	for _, f := range s.Features {
		policy := "require"
		if strings.HasPrefix(f, "-") {
			policy = "disable"
		}
		cpu.Features = append(cpu.Features, libvirtxml.DomainCPUFeature{Policy: policy, Name: f[1:]})
	}
	if t := s.Topology; t != (cpuTopology{}) {
		cpu.Topology = &libvirtxml.DomainCPUTopology{Sockets: t.Sockets, Cores: t.Cores, Threads: t.Threads}
	}
	return cpu
}

type diskSpec struct {
	Path   string
	Format string
	Bus    string // "virtio", "scsi" or "sata"
}

// netSpec: exactly one of UserForward (QEMU user networking with one port
// forwarded from the hypervisor's 127.0.0.1), Network or Bridge.
type netSpec struct {
	UserForward *portForward
	// UserExtraForwards are more ports forwarded the same way (an API
	// server's, say).
	UserExtraForwards []portForward
	// UserGuestIP is the address user networking's DHCP hands the guest
	// (QEMU's dhcpstart; default 10.0.2.15) and UserMAC the NIC's MAC
	// (default QEMU's 52:54:00:12:34:56): machines booted side by side
	// from one image each get their own.
	UserGuestIP, UserMAC string
	Network              string
	Bridge               string
}

type portForward struct {
	HostPort  int
	GuestPort int
}

// userNetID names the QEMU netdev of user-mode networking.
const userNetID = "kubenode0"

func domainXML(s domainSpec) (string, error) {
	domType := "kvm"
	if s.Accelerator == "tcg" {
		domType = "qemu"
	}
	d := &libvirtxml.Domain{
		Type:        domType,
		Name:        s.Name,
		Description: "kubenode build VM (packer kubenode-libvirt)",
		Memory:      &libvirtxml.DomainMemory{Value: uint(s.MemoryMiB), Unit: "MiB"},
		VCPU:        &libvirtxml.DomainVCPU{Value: uint(s.CPUs)},
		OS: &libvirtxml.DomainOS{
			Type: &libvirtxml.DomainOSType{Arch: "x86_64", Machine: s.Machine, Type: "hvm"},
		},
		Features: &libvirtxml.DomainFeatureList{
			ACPI: &libvirtxml.DomainFeature{},
			APIC: &libvirtxml.DomainFeatureAPIC{},
		},
		OnPoweroff: "destroy",
		OnReboot:   "restart",
		OnCrash:    "destroy",
		Devices:    &libvirtxml.DomainDeviceList{},
	}
	d.CPU = domainCPU(s.Accelerator, s.CPU)
	if s.Firmware == "uefi" {
		d.OS.Firmware = "efi"
		d.OS.FirmwareInfo = &libvirtxml.DomainOSFirmwareInfo{Features: []libvirtxml.DomainOSFirmwareFeature{
			{Name: "secure-boot", Enabled: yesNo(s.SecureBoot)},
			{Name: "enrolled-keys", Enabled: yesNo(s.SecureBoot)},
		}}
		if s.SecureBoot {
			// Secure Boot firmware needs System Management Mode.
			d.Features.SMM = &libvirtxml.DomainFeatureSMM{State: "on"}
		}
	}
	// The RTC runs in UTC for every guest. Windows reads it as UTC because
	// the answer file sets RealTimeIsUniversal (autounattend), so the guest's
	// clock does not depend on the hypervisor's time zone: a local-time RTC on
	// a host west of UTC puts a UTC guest hours behind, and TLS bootstrap then
	// sees the cluster CA as not yet valid.
	clock := &libvirtxml.DomainClock{Offset: "utc"}
	if s.HyperV && s.Accelerator == "kvm" {
		// Windows runs much better with the Hyper-V paravirtual interfaces;
		// they exist only under KVM (QEMU refuses them with TCG).
		clock.Timer = []libvirtxml.DomainTimer{{Name: "hypervclock", Present: "yes"}}
		on := &libvirtxml.DomainFeatureState{State: "on"}
		d.Features.HyperV = &libvirtxml.DomainFeatureHyperV{
			Relaxed:   on,
			VAPIC:     on,
			Spinlocks: &libvirtxml.DomainFeatureHyperVSpinlocks{DomainFeatureState: libvirtxml.DomainFeatureState{State: "on"}, Retries: 8191},
			VPIndex:   on,
			Synic:     on,
			STimer:    &libvirtxml.DomainFeatureHyperVSTimer{DomainFeatureState: libvirtxml.DomainFeatureState{State: "on"}},
			Reset:     on,
		}
	}
	d.Clock = clock

	dev := d.Devices
	sata := 0 // SATA unit numbers are shared by the disk (bus sata) and CD-ROMs
	nextSATA := func() (string, *libvirtxml.DomainAddress) {
		unit := uint(sata)
		zero := uint(0)
		sata++
		return fmt.Sprintf("sd%c", 'a'+unit), &libvirtxml.DomainAddress{Drive: &libvirtxml.DomainAddressDrive{Controller: &zero, Bus: &zero, Unit: &unit}}
	}
	disk := libvirtxml.DomainDisk{
		Device: "disk",
		Driver: &libvirtxml.DomainDiskDriver{Name: "qemu", Type: s.Disk.Format, Discard: "unmap"},
		Source: &libvirtxml.DomainDiskSource{File: &libvirtxml.DomainDiskSourceFile{File: s.Disk.Path}},
		Boot:   &libvirtxml.DomainDeviceBoot{Order: 1},
	}
	switch s.Disk.Bus {
	case "virtio":
		disk.Target = &libvirtxml.DomainDiskTarget{Dev: "vda", Bus: "virtio"}
	case "scsi":
		disk.Target = &libvirtxml.DomainDiskTarget{Dev: "sda", Bus: "scsi"}
		dev.Controllers = append(dev.Controllers, libvirtxml.DomainController{Type: "scsi", Model: "virtio-scsi"})
	case "sata":
		name, addr := nextSATA()
		disk.Target = &libvirtxml.DomainDiskTarget{Dev: name, Bus: "sata"}
		disk.Address = addr
	}
	dev.Disks = append(dev.Disks, disk)
	for i, iso := range s.CDROMs {
		name, addr := nextSATA()
		cd := libvirtxml.DomainDisk{
			Device:   "cdrom",
			Driver:   &libvirtxml.DomainDiskDriver{Name: "qemu", Type: "raw"},
			Source:   &libvirtxml.DomainDiskSource{File: &libvirtxml.DomainDiskSourceFile{File: iso}},
			Target:   &libvirtxml.DomainDiskTarget{Dev: name, Bus: "sata"},
			ReadOnly: &libvirtxml.DomainDiskReadOnly{},
			Address:  addr,
		}
		if i == 0 {
			cd.Boot = &libvirtxml.DomainDeviceBoot{Order: 2}
		}
		dev.Disks = append(dev.Disks, cd)
	}

	nicModel := s.NICModel
	if nicModel == "virtio" {
		nicModel = "virtio-net-pci"
	}
	switch {
	case s.Net.UserForward != nil:
		// libvirt's <interface type='user'> cannot forward ports with QEMU's
		// slirp backend, so the netdev is passed to QEMU directly.
		// A zero port forwards nothing (communicator = "none"): QEMU
		// refuses a rule for port 0.
		netdev := "user,id=" + userNetID
		if s.Net.UserGuestIP != "" {
			netdev += ",dhcpstart=" + s.Net.UserGuestIP
		}
		if fwd := s.Net.UserForward; fwd.HostPort > 0 {
			netdev += fmt.Sprintf(",hostfwd=tcp:127.0.0.1:%d-:%d", fwd.HostPort, fwd.GuestPort)
		}
		for _, fwd := range s.Net.UserExtraForwards {
			netdev += fmt.Sprintf(",hostfwd=tcp:127.0.0.1:%d-:%d", fwd.HostPort, fwd.GuestPort)
		}
		device := fmt.Sprintf("%s,netdev=%s,bus=%s,addr=%#x", nicModel, userNetID, rootBus(s.Machine), userNICSlot)
		if s.Net.UserMAC != "" {
			device += ",mac=" + s.Net.UserMAC
		}
		d.QEMUCommandline = &libvirtxml.DomainQEMUCommandline{Args: []libvirtxml.DomainQEMUCommandlineArg{
			{Value: "-netdev"},
			{Value: netdev},
			{Value: "-device"},
			{Value: device},
		}}
	case s.Net.Network != "":
		dev.Interfaces = append(dev.Interfaces, libvirtxml.DomainInterface{
			Source: &libvirtxml.DomainInterfaceSource{Network: &libvirtxml.DomainInterfaceSourceNetwork{Network: s.Net.Network}},
			Model:  &libvirtxml.DomainInterfaceModel{Type: s.NICModel},
		})
	case s.Net.Bridge != "":
		dev.Interfaces = append(dev.Interfaces, libvirtxml.DomainInterface{
			Source: &libvirtxml.DomainInterfaceSource{Bridge: &libvirtxml.DomainInterfaceSourceBridge{Bridge: s.Net.Bridge}},
			Model:  &libvirtxml.DomainInterfaceModel{Type: s.NICModel},
		})
	}

	for _, a := range s.QEMUArgs {
		if d.QEMUCommandline == nil {
			d.QEMUCommandline = &libvirtxml.DomainQEMUCommandline{}
		}
		// As the qemu builder does: the option, then the rest joined
		// without a separator, if any.
		d.QEMUCommandline.Args = append(d.QEMUCommandline.Args, libvirtxml.DomainQEMUCommandlineArg{Value: a[0]})
		if v := strings.Join(a[1:], ""); v != "" {
			d.QEMUCommandline.Args = append(d.QEMUCommandline.Args, libvirtxml.DomainQEMUCommandlineArg{Value: v})
		}
	}

	// The serial port is the guest's first ISA serial port: ttyS0 on Linux,
	// COM1 on Windows, where the first-logon bootstrap writes its progress.
	// Written out rather than left to libvirt's x86 default.
	port := uint(0)
	serial := libvirtxml.DomainSerial{
		Source: &libvirtxml.DomainChardevSource{Pty: &libvirtxml.DomainChardevSourcePty{}},
		Target: &libvirtxml.DomainSerialTarget{Type: "isa-serial", Port: &port, Model: &libvirtxml.DomainSerialTargetModel{Name: "isa-serial"}},
	}
	if s.SerialLog != "" {
		serial.Log = &libvirtxml.DomainChardevLog{File: s.SerialLog, Append: "off"}
	}
	dev.Serials = append(dev.Serials, serial)
	dev.Consoles = append(dev.Consoles, libvirtxml.DomainConsole{
		Source: &libvirtxml.DomainChardevSource{Pty: &libvirtxml.DomainChardevSourcePty{}},
		Target: &libvirtxml.DomainConsoleTarget{Type: "serial", Port: &port},
	})
	// The guest agent channel lets libvirt ask a Linux or Windows guest for
	// its addresses when it is on a libvirt network.
	dev.Channels = append(dev.Channels, libvirtxml.DomainChannel{
		Source: &libvirtxml.DomainChardevSource{UNIX: &libvirtxml.DomainChardevSourceUNIX{}},
		Target: &libvirtxml.DomainChannelTarget{VirtIO: &libvirtxml.DomainChannelTargetVirtIO{Name: "org.qemu.guest_agent.0"}},
	})
	dev.RNGs = append(dev.RNGs, libvirtxml.DomainRNG{
		Model:   "virtio",
		Backend: &libvirtxml.DomainRNGBackend{Random: &libvirtxml.DomainRNGBackendRandom{Device: "/dev/urandom"}},
	})
	if s.TPM {
		dev.TPMs = append(dev.TPMs, libvirtxml.DomainTPM{
			Model:   "tpm-crb",
			Backend: &libvirtxml.DomainTPMBackend{Emulator: &libvirtxml.DomainTPMBackendEmulator{Version: "2.0"}},
		})
	}
	dev.Graphics = append(dev.Graphics, libvirtxml.DomainGraphic{VNC: domainVNC(s.VNCListen, s.VNCPassword)})
	dev.Videos = append(dev.Videos, libvirtxml.DomainVideo{Model: libvirtxml.DomainVideoModel{Type: "virtio"}})
	dev.Inputs = append(dev.Inputs, libvirtxml.DomainInput{Type: "tablet", Bus: "usb"})
	return d.Marshal()
}

// domainVNC is the display. By default it listens nowhere (<listen
// type='none'/>): a VNC port, even on the loopback, is open to every
// account on the hypervisor and to any guest on user-mode networking
// (10.0.2.2 there is the hypervisor's 127.0.0.1). virt-viewer still shows
// the screen through libvirt's authenticated connection, and boot_command
// is typed with libvirt's SendKey, not over VNC.
func domainVNC(listen, password string) *libvirtxml.DomainGraphicVNC {
	if listen == "" {
		return &libvirtxml.DomainGraphicVNC{Listeners: []libvirtxml.DomainGraphicListener{{}}}
	}
	return &libvirtxml.DomainGraphicVNC{
		AutoPort: "yes", Passwd: password,
		Listeners: []libvirtxml.DomainGraphicListener{{Address: &libvirtxml.DomainGraphicListenerAddress{Address: listen}}},
	}
}

// userNICSlot is the PCI slot of the user-networking NIC. QEMU would take
// the first free slot before libvirt's own devices are placed, and collide
// with them; libvirt fills low slots, so a high one is left to us.
const userNICSlot = 0x10

// rootBus is the root PCI bus of the machine type.
func rootBus(machine string) string {
	if strings.HasPrefix(machine, "pc-q35") || machine == "q35" {
		return "pcie.0"
	}
	return "pci.0"
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
