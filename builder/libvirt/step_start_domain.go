// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package libvirt

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/packer-plugin-sdk/bootcommand"
	"github.com/hashicorp/packer-plugin-sdk/multistep"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
	"github.com/hashicorp/packer-plugin-sdk/template/interpolate"
	"libvirt.org/go/libvirtxml"
)

// hypervRefusedRE matches QEMU's words when KVM will not give the guest
// the Hyper-V enlightenments asked for (seen under nested virtualization):
// "kernel doesn't allow setting HyperV VP_INDEX", "Hyper-V synic is not
// supported by kernel".
var hypervRefusedRE = regexp.MustCompile(`(?i)kernel doesn't allow setting hyper-?v|hyper-?v .*not supported by kernel`)

// bootCommandData is what boot_command templates can use:
// {{ .HTTPIP }}, {{ .HTTPPort }}, {{ .Name }}.
type bootCommandData struct {
	HTTPIP   string
	HTTPPort int
	Name     string
}

// stepStartDomain boots the VM and waits until libvirt reports it running,
// then says where its display can be watched. On user-mode networking a
// forwarded port that something else bound since it was reserved makes
// QEMU refuse to start: the domain is then redefined with another port and
// started again.
//
// Uses: config, driver, ui, port_reservation. Produces: started_at, host_port.
type stepStartDomain struct{}

// portRetries bounds the restarts after a forwarded-port collision.
const portRetries = 5

func (s *stepStartDomain) Run(ctx context.Context, state multistep.StateBag) multistep.StepAction {
	c := state.Get(stateConfig).(*Config)
	d := state.Get(stateDriver).(Driver)
	ui := state.Get(stateUI).(packersdk.Ui)
	ui.Say(fmt.Sprintf("Starting domain %s", c.VMName))
	err := d.StartDomain(c.VMName)
	for try := 0; err != nil && try < portRetries && portTakenRE.MatchString(err.Error()); try++ {
		res, ok := state.Get(statePortReservation).(*portReservation)
		if !ok {
			break
		}
		port, perr := res.next(ctx)
		if perr != nil {
			return halt(state, ui, fmt.Errorf("%w; and no other port: host_port_min/host_port_max: %v", err, perr))
		}
		ui.Message(fmt.Sprintf("The forwarded port was taken meanwhile; retrying with 127.0.0.1:%d", port))
		// Rendered again, so that qemuargs using {{ .SSHHostPort }} follow.
		state.Put(stateHostPort, port)
		_, x, xerr := c.renderDomain(state)
		if xerr != nil {
			return halt(state, ui, xerr)
		}
		defined, xerr := d.DomainXML(c.VMName)
		if xerr != nil {
			return halt(state, ui, xerr)
		}
		if derr := d.DefineDomain(withUUIDOf(x, defined)); derr != nil {
			return halt(state, ui, derr)
		}
		err = d.StartDomain(c.VMName)
	}
	if err != nil {
		if hypervRefusedRE.MatchString(err.Error()) {
			err = fmt.Errorf("%w: this host's KVM refuses Hyper-V enlightenments (usual under nested virtualization); "+
				"set hyperv_enlightenments = false to build without them, or accelerator = \"tcg\" "+
				"(software emulation, much slower; leave hyperv_enlightenments unset)", err)
		}
		return halt(state, ui, err)
	}
	state.Put(stateStartedAt, time.Now())
	deadline := time.Now().Add(c.BootTimeout)
	for {
		st, err := d.DomainState(c.VMName)
		if err != nil {
			return halt(state, ui, err)
		}
		if st == StateRunning {
			break
		}
		if time.Now().After(deadline) {
			return halt(state, ui, fmt.Errorf("domain %s is %s, not running, %s after start (boot_timeout)", c.VMName, st, c.BootTimeout))
		}
		select {
		case <-ctx.Done():
			return multistep.ActionHalt
		case <-time.After(500 * time.Millisecond):
		}
	}
	if x, err := d.DomainXML(c.VMName); err == nil {
		if addr := vncAddress(x); addr != "" {
			ui.Message(vncHint(addr, c.LibvirtURI, c.VMName))
		} else {
			ui.Message(fmt.Sprintf("Watch the VM's screen with `virt-viewer -c %s %s` (through libvirt: the VM has no VNC port unless vnc_bind_address is set)", c.LibvirtURI, c.VMName))
		}
	}
	return multistep.ActionContinue
}

func (s *stepStartDomain) Cleanup(multistep.StateBag) {}

// vncAddress reads the VNC listen address and port libvirt gave a running
// domain (autoport), e.g. "127.0.0.1:5900"; "" if it has none.
func vncAddress(domainXML string) string {
	var dom libvirtxml.Domain
	if err := dom.Unmarshal(domainXML); err != nil || dom.Devices == nil {
		return ""
	}
	for _, g := range dom.Devices.Graphics {
		if g.VNC == nil || g.VNC.Port <= 0 {
			continue
		}
		host := g.VNC.Listen
		if host == "" {
			host = "127.0.0.1"
		}
		return net.JoinHostPort(host, strconv.Itoa(g.VNC.Port))
	}
	return ""
}

// vncHint says how to watch the VM's screen.
func vncHint(addr, uri, name string) string {
	if isLocalURI(uri) {
		return fmt.Sprintf("Watch the VM's screen with a VNC viewer at %s (e.g. `vncviewer %s`, or `virt-viewer -c %s %s`)", addr, addr, uri, name)
	}
	host, port, _ := net.SplitHostPort(addr)
	server := "the hypervisor"
	if u, err := url.Parse(uri); err == nil && u.Host != "" {
		server = u.Hostname()
		if u.User != nil {
			server = u.User.Username() + "@" + server
		}
	}
	return fmt.Sprintf("The VM's screen is VNC on %s's %s: tunnel it with `ssh -L %s:%s:%s %s`, then open 127.0.0.1:%s in a VNC viewer",
		server, addr, port, host, port, server, port)
}

// stepTypeBootCommand presses the space bar from power-on for
// boot_press_any_key, waits until boot_wait after power-on, then types
// boot_command with libvirt's SendKey (no VNC client needed).
//
// Uses: config, driver, ui, started_at, http_ip, http_port.
type stepTypeBootCommand struct{}

// pressAnyKeyEvery is how often the space bar is pressed for
// boot_press_any_key: Windows' prompt waits about five seconds.
var pressAnyKeyEvery = 500 * time.Millisecond

func (s *stepTypeBootCommand) Run(ctx context.Context, state multistep.StateBag) multistep.StepAction {
	c := state.Get(stateConfig).(*Config)
	d := state.Get(stateDriver).(Driver)
	ui := state.Get(stateUI).(packersdk.Ui)
	if len(c.BootCommand) == 0 && c.BootPressAnyKey <= 0 {
		return multistep.ActionContinue
	}
	started, ok := state.Get(stateStartedAt).(time.Time)
	if !ok {
		started = time.Now()
	}
	sleep := func(until time.Time) bool {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(time.Until(until)):
			return true
		}
	}
	if c.BootPressAnyKey > 0 {
		end := started.Add(c.BootPressAnyKey)
		ui.Say(fmt.Sprintf("Pressing the space bar every %s until %s after power-on (boot_press_any_key)", pressAnyKeyEvery, c.BootPressAnyKey))
		presses := 0
		for time.Now().Before(end) {
			if err := d.SendKeys(c.VMName, []uint32{keySpace}, keyHold); err != nil {
				return halt(state, ui, fmt.Errorf("boot_press_any_key: %w", err))
			}
			presses++
			if !sleep(time.Now().Add(pressAnyKeyEvery)) {
				return multistep.ActionHalt
			}
		}
		ui.Message(fmt.Sprintf("Pressed the space bar %d times", presses))
	}
	if len(c.BootCommand) == 0 {
		return multistep.ActionContinue
	}
	if wait := time.Until(started.Add(c.BootWait)); wait > 0 {
		ui.Say(fmt.Sprintf("Waiting %s before typing the boot command (boot_wait %s after power-on)", wait.Round(time.Second), c.BootWait))
		if !sleep(started.Add(c.BootWait)) {
			return multistep.ActionHalt
		}
	}
	httpIP, _ := state.Get(stateHTTPIP).(string)
	httpPort, _ := state.Get("http_port").(int)
	c.ctx.Data = &bootCommandData{HTTPIP: httpIP, HTTPPort: httpPort, Name: c.VMName}
	command, err := interpolate.Render(c.FlatBootCommand(), &c.ctx)
	if err != nil {
		return halt(state, ui, fmt.Errorf("boot_command: %w", err))
	}
	seq, err := bootcommand.GenerateExpressionSequence(command)
	if err != nil {
		return halt(state, ui, fmt.Errorf("boot_command: %w", err))
	}
	ui.Say("Typing the boot command")
	drv := &sendKeyDriver{domain: c.VMName, keys: d, interval: c.BootGroupInterval}
	if err := seq.Do(ctx, drv); err != nil {
		return halt(state, ui, fmt.Errorf("boot_command: %w", err))
	}
	return multistep.ActionContinue
}

func (s *stepTypeBootCommand) Cleanup(multistep.StateBag) {}

var uuidRE = regexp.MustCompile(`<uuid>[^<]*</uuid>`)

// withUUIDOf gives a domain XML rendered again the UUID libvirt gave the
// defined domain: libvirt refuses to redefine a domain by name with another
// UUID, and one left out is generated anew ("domain ... already exists with
// uuid ...", seen with libvirt 9.0).
func withUUIDOf(rendered, defined string) string {
	uuid := uuidRE.FindString(defined)
	if uuid == "" || uuidRE.MatchString(rendered) {
		return rendered
	}
	return strings.Replace(rendered, "</name>", "</name>"+uuid, 1)
}
