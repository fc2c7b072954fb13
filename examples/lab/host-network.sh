#!/usr/bin/env bash
# Host routing between the kind cluster's docker network and the libvirt
# network kubenode-lab, for docs/lab-windows.md: the kind nodes and the
# Windows VM must reach each other by their own addresses (the API server
# calls the kubelet on 10250, Calico's VXLAN runs on UDP 4789 between node
# addresses), and the VM must reach the registries its images come from.
#
#   sudo examples/lab/host-network.sh up      # after kind create cluster
#   sudo examples/lab/host-network.sh down    # before deleting the networks
#
# What "up" adds (iptables; "down" removes exactly these):
#   filter DOCKER-USER  accept VM -> anywhere, kind -> VM, and replies to
#                       the VM. Docker sets the FORWARD policy to DROP and
#                       evaluates DOCKER-USER before its own rules.
#   nat POSTROUTING     no masquerading between the two networks (Docker
#                       masquerades everything its containers send outside
#                       their network), and masquerading for the VM's own
#                       traffic to the outside world (libvirt's "open"
#                       forward mode adds none).
# Docker 28 and later also drop traffic routed straight to a container's
# unpublished ports before any of this (raw PREROUTING) unless the network
# is in gateway mode nat-unprotected: the guide creates the "kind" network
# that way before kind does. Docker rebuilds its chains when it restarts:
# run "up" again then.
#
# Environment: LAB_NET (192.168.150.0/24), LAB_BRIDGE (virbr-kn),
# KIND_NETWORK (kind).
set -euo pipefail

lab_net=${LAB_NET:-192.168.150.0/24}
lab_bridge=${LAB_BRIDGE:-virbr-kn}
kind_network=${KIND_NETWORK:-kind}

usage() {
	echo "usage: $0 up|down" >&2
	exit 2
}
[ $# -eq 1 ] || usage

# Docker names a user-defined network's bridge br-<first 12 hex of its ID>.
kind_id=$(docker network inspect "$kind_network" --format '{{.Id}}') ||
	{ echo "no docker network $kind_network: create it (see docs/lab-windows.md) and the kind cluster first" >&2; exit 1; }
kind_bridge=br-${kind_id:0:12}
kind_net=$(docker network inspect "$kind_network" --format '{{range .IPAM.Config}}{{.Subnet}} {{end}}' |
	tr ' ' '\n' | grep -m1 -E '^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+/[0-9]+$') ||
	{ echo "docker network $kind_network has no IPv4 subnet" >&2; exit 1; }
ip link show "$lab_bridge" >/dev/null 2>&1 ||
	{ echo "no bridge $lab_bridge: virsh net-start kubenode-lab first" >&2; exit 1; }

# Each rule: table, chain, then the match and target. The RETURN rules go
# first in POSTROUTING, ahead of Docker's masquerading and of ours.
rules=(
	"filter DOCKER-USER -i $lab_bridge -j ACCEPT"
	"filter DOCKER-USER -i $kind_bridge -o $lab_bridge -j ACCEPT"
	"filter DOCKER-USER -o $lab_bridge -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT"
	"nat POSTROUTING -s $kind_net -d $lab_net -j RETURN"
	"nat POSTROUTING -s $lab_net -d $kind_net -j RETURN"
	"nat POSTROUTING -s $lab_net ! -d $lab_net -j MASQUERADE"
)

case $1 in
up)
	# Inserted at the top in reverse order, so they end up in the order above.
	for ((i = ${#rules[@]} - 1; i >= 0; i--)); do
		read -r -a r <<<"${rules[i]}"
		table=${r[0]} chain=${r[1]} spec=("${r[@]:2}")
		if iptables -t "$table" -C "$chain" "${spec[@]}" 2>/dev/null; then
			echo "ok: $table $chain ${spec[*]}"
		else
			iptables -t "$table" -I "$chain" 1 "${spec[@]}"
			echo "added: $table $chain ${spec[*]}"
		fi
	done
	sysctl -q -w net.ipv4.ip_forward=1
	;;
down)
	for rule in "${rules[@]}"; do
		read -r -a r <<<"$rule"
		table=${r[0]} chain=${r[1]} spec=("${r[@]:2}")
		while iptables -t "$table" -C "$chain" "${spec[@]}" 2>/dev/null; do
			iptables -t "$table" -D "$chain" "${spec[@]}"
			echo "removed: $table $chain ${spec[*]}"
		done
	done
	;;
*)
	usage
	;;
esac
