// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package linux

// cloneNetplan is the netplan file generalize (bootstrap = "joiner")
// writes when it removed one that matched the build VM's NIC by MAC
// address: a clone's NIC has a new MAC and, without a datasource, nothing
// writes it another config.
const cloneNetplan = "/etc/netplan/60-kubenode-clone.yaml"

// cloneNetplanFile takes DHCP (IPv4, and IPv6 where the network offers
// it) on every Ethernet NIC by its predictable name, whatever its MAC.
// netplan wants its files readable by root only.
const cloneNetplanFile = `# Written by kubenode-bake's generalize: the build VM's network config matched
# its NIC by MAC address, which no clone has. Every Ethernet NIC takes DHCP.
network:
  version: 2
  ethernets:
    kubenode-any:
      match:
        name: "e*"
      dhcp4: true
      dhcp6: true
      optional: true
`
