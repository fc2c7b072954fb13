// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package libvirt

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHTTPIPForEveryNetworkMode(t *testing.T) {
	m := NewMockDriver()
	m.Networks = map[string]string{
		"default": `<network><name>default</name><ip address='192.168.122.1' netmask='255.255.255.0'/></network>`,
		"host":    `<network><name>host</name><forward mode='bridge'/><bridge name='br0'/></network>`,
	}
	iface := func(name string) (string, error) {
		if name == "br0" {
			return "198.51.100.7", nil
		}
		return "", errors.New("no such interface")
	}
	for _, tc := range []struct {
		name, uri, network, bridge, bind string
		want, wantErr                    string
	}{
		{name: "user-mode networking: QEMU's gateway", uri: "qemu:///system", network: "user", want: "10.0.2.2"},
		{name: "a libvirt network: its own address", uri: "qemu:///system", network: "default", want: "192.168.122.1"},
		{name: "a network without an address", uri: "qemu:///system", network: "host", wantErr: "http_bind_address"},
		{name: "a bridge: this machine's address on it", uri: "qemu:///system", bridge: "br0", want: "198.51.100.7"},
		{name: "a missing bridge", uri: "qemu:///system", bridge: "br9", wantErr: "bridge: "},
		{name: "http_bind_address wins", uri: "qemu:///system", network: "user", bind: "203.0.113.5", want: "203.0.113.5"},
		{name: "remote, user-mode: 10.0.2.2 would be the hypervisor", uri: "qemu+ssh://me@hv/system", network: "user", wantErr: "http_bind_address"},
		{name: "remote with http_bind_address", uri: "qemu+ssh://me@hv/system", network: "user", bind: "203.0.113.5", want: "203.0.113.5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Config{LibvirtURI: tc.uri, Network: tc.network, Bridge: tc.bridge}
			c.HTTPAddress = tc.bind
			got, err := c.httpIP(m, iface)
			if tc.wantErr != "" {
				assert.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestPrepareRemoteHTTPServerNeedsABindAddress(t *testing.T) {
	raw := linuxRaw()
	raw["libvirt_uri"] = "qemu+ssh://me@hv/system"
	raw["http_content"] = map[string]string{"/ks.cfg": "x"}
	var c Config
	_, err := c.Prepare(raw)
	assert.ErrorContains(t, err, "http_bind_address")

	raw["http_bind_address"] = "203.0.113.5"
	c = Config{}
	_, err = c.Prepare(raw)
	assert.NoError(t, err)
}

func TestPrepareCommunicatorNone(t *testing.T) {
	raw := linuxRaw()
	raw["communicator"] = "none"
	raw["shutdown_command"] = "poweroff"
	var c Config
	_, err := c.Prepare(raw)
	assert.ErrorContains(t, err, "shutdown_command")
}
