// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package libvirt

import (
	"context"
	"fmt"
	"net"

	"github.com/hashicorp/packer-plugin-sdk/multistep"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
	"libvirt.org/go/libvirtxml"
)

// userNetGateway is the host as seen from a guest on QEMU user networking.
const userNetGateway = "10.0.2.2"

// stepHTTPIPDiscover works out {{ .HTTPIP }}, the address at which the guest
// reaches the HTTP server packer runs on this machine: QEMU's user-network
// gateway, the libvirt network's own address, the bridge's address here, or
// http_bind_address when that names one address (the only way for a remote
// hypervisor, whose guest reaches this machine through the hypervisor).
//
// Uses: config, driver, ui. Produces: http_ip.
type stepHTTPIPDiscover struct{}

func (s *stepHTTPIPDiscover) Run(ctx context.Context, state multistep.StateBag) multistep.StepAction {
	c := state.Get(stateConfig).(*Config)
	d := state.Get(stateDriver).(Driver)
	ui := state.Get(stateUI).(packersdk.Ui)
	ip, err := c.httpIP(d, interfaceIPv4)
	if err != nil {
		if !c.servesHTTP() {
			return multistep.ActionContinue // nobody asks for {{ .HTTPIP }}
		}
		return halt(state, ui, err)
	}
	if c.servesHTTP() {
		ui.Say(fmt.Sprintf("The guest reaches the HTTP server at %s ({{ .HTTPIP }})", ip))
	}
	state.Put(stateHTTPIP, ip)
	return multistep.ActionContinue
}

func (s *stepHTTPIPDiscover) Cleanup(multistep.StateBag) {}

// servesHTTP reports whether the build runs Packer's HTTP server.
func (c *Config) servesHTTP() bool {
	return c.HTTPDir != "" || len(c.HTTPContent) > 0
}

// httpBindsOne reports whether http_bind_address names one address.
func (c *Config) httpBindsOne() bool {
	return c.HTTPAddress != "" && c.HTTPAddress != "0.0.0.0" && c.HTTPAddress != "::"
}

func (c *Config) httpIP(d Driver, ifaceIPv4 func(string) (string, error)) (string, error) {
	if c.httpBindsOne() {
		return c.HTTPAddress, nil
	}
	if !isLocalURI(c.LibvirtURI) {
		return "", fmt.Errorf("http_bind_address: the HTTP server runs on this machine, not on the hypervisor of %s: "+
			"set http_bind_address to an address of this machine that the guest can reach through the hypervisor", c.LibvirtURI)
	}
	switch {
	case c.Network == "user":
		return userNetGateway, nil
	case c.Bridge != "":
		ip, err := ifaceIPv4(c.Bridge)
		if err != nil {
			return "", fmt.Errorf("bridge: {{ .HTTPIP }} is this machine's address on %s: %w; or set http_bind_address", c.Bridge, err)
		}
		return ip, nil
	default:
		x, err := d.NetworkXML(c.Network)
		if err != nil {
			return "", fmt.Errorf("network: reading libvirt network %q for {{ .HTTPIP }}: %w", c.Network, err)
		}
		ip := networkIPv4(x)
		if ip == "" {
			return "", fmt.Errorf("network: libvirt network %q has no IPv4 address of its own (a bridged or macvtap network?): "+
				"set http_bind_address to this machine's address the guest can reach", c.Network)
		}
		return ip, nil
	}
}

// networkIPv4 is a libvirt network's first IPv4 address, e.g. 192.168.122.1
// for the usual `default` network; "" if it has none.
func networkIPv4(networkXML string) string {
	var n libvirtxml.Network
	if err := n.Unmarshal(networkXML); err != nil {
		return ""
	}
	for _, ip := range n.IPs {
		if ip.Family == "" || ip.Family == "ipv4" {
			if a := net.ParseIP(ip.Address); a != nil && a.To4() != nil {
				return ip.Address
			}
		}
	}
	return ""
}

// interfaceIPv4 is the first IPv4 address of a network interface here.
func interfaceIPv4(name string) (string, error) {
	iface, err := net.InterfaceByName(name)
	if err != nil {
		return "", err
	}
	addrs, err := iface.Addrs()
	if err != nil {
		return "", err
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil {
			return n.IP.String(), nil
		}
	}
	return "", fmt.Errorf("interface %s has no IPv4 address", name)
}
