#!/bin/sh
# In-guest checks after kubenode-bake (bootstrap = "cluster-api") and a
# reboot. Each failing check prints CHECK FAILED and the script exits
# non-zero, failing the build.
# KUBERNETES_VERSION (vX.Y.Z) and PAUSE_IMAGE are the bake's.
set -u
: "${KUBERNETES_VERSION:?}" "${PAUSE_IMAGE:?}"
failed=0
check() { # check DESCRIPTION COMMAND...
  what=$1; shift
  if "$@" >/dev/null 2>&1; then echo "CHECK ok: $what"; else echo "CHECK FAILED: $what"; failed=1; fi
}
equals() { [ "$1" = "$2" ] || { echo "  got '$1', want '$2'" >&2; return 1; }; }

for u in containerd kubelet; do
  check "$u enabled" systemctl is-enabled -q "$u"
done
check "containerd active" systemctl is-active -q containerd
check "overlay loaded after reboot" grep -q '^overlay ' /proc/modules
check "br_netfilter loaded after reboot" grep -q '^br_netfilter ' /proc/modules
check "bridge-nf-call-iptables = 1" equals "$(sysctl -n net.bridge.bridge-nf-call-iptables)" 1
check "ip_forward = 1" equals "$(sysctl -n net.ipv4.ip_forward)" 1
check "swap off" equals "$(wc -l < /proc/swaps)" 1
dump=$(mktemp)
check "containerd config dump succeeds" containerd config dump
containerd config dump > "$dump" 2>/dev/null
# containerd 1.x dumps config version 2 with double quotes; 2.x dumps
# version 3 (sandbox under pinned_images, bin_dirs a list), single-quoted.
check "containerd: registry config_path" grep -Eq "config_path = [\"']/etc/containerd/certs.d[\"']" "$dump"
check "containerd: imports conf.d" test -d /etc/containerd/conf.d
check "hosts.toml: registry.k8s.io upstream" grep -qF 'server = "https://registry.k8s.io"' /etc/containerd/certs.d/registry.k8s.io/hosts.toml
check "hosts.toml: the mirror" grep -qF '[host."http://10.0.2.2:5000"]' /etc/containerd/certs.d/registry.k8s.io/hosts.toml
for ref in ${EXPECT_IMAGES:-}; do
  check "image $ref in containerd's k8s.io namespace after the reboot" sh -c "ctr -n k8s.io images ls -q | grep -qxF '$ref'"
done
check "containerd: SystemdCgroup = true" grep -q 'SystemdCgroup = true' "$dump"
check "containerd: pause image $PAUSE_IMAGE" grep -Eq "(sandbox_image|sandbox) = [\"']$PAUSE_IMAGE[\"']" "$dump"
check "containerd: CNI bin dir" grep -Eq "bin_dirs? = \[?[\"']/opt/cni/bin[\"']" "$dump"
rm -f "$dump"
check "kubelet $KUBERNETES_VERSION" equals "$(kubelet --version)" "Kubernetes $KUBERNETES_VERSION"
check "kubeadm $KUBERNETES_VERSION" equals "$(kubeadm version -o short)" "$KUBERNETES_VERSION"
check "kubectl $KUBERNETES_VERSION" sh -c "kubectl version --client | grep -q 'Client Version: $KUBERNETES_VERSION\$'"
check "kubeadm drop-in reads kubeadm-flags.env" grep -q 'EnvironmentFile=-/var/lib/kubelet/kubeadm-flags.env' /etc/systemd/system/kubelet.service.d/10-kubeadm.conf
check "CNI bridge plugin" test -x /opt/cni/bin/bridge
check "no CNI config (the cluster's CNI brings it)" test ! -e /etc/cni/net.d/10-kubenode-bridge.conflist
check "crictl config" grep -q 'containerd.sock' /etc/crictl.yaml
check "time sync enabled" systemctl is-enabled -q systemd-timesyncd
check "growpart installed" command -v growpart
# disk_size is 6G, the base disk 3G: cloud-init's growpart grew the root at the reboot.
check "root grew to the disk" test "$(df -B1G --output=size / | tail -n 1 | tr -d ' ')" -ge 5
check "no joiner" test ! -e /usr/local/bin/kubenode-joiner -a ! -e /etc/kubenode/joiner.yaml
check "no joiner unit" sh -c "! systemctl cat kubenode-joiner >/dev/null 2>&1"
check "cloud-init's datasources for Cluster API" grep -qx 'datasource_list: \[ NoCloud, ConfigDrive, OpenStack, None \]' /etc/cloud/cloud.cfg.d/99-kubenode-datasources.cfg
check "cloud-init runs at boot" systemctl is-enabled -q cloud-final
check "python3 imports jinja2 (Cluster API's jinja user data)" python3 -c 'import jinja2'
check "machine-id regenerated" test -s /etc/machine-id
check "no kubenode-hostname (the datasource names each VM)" sh -c "! systemctl is-enabled -q kubenode-hostname 2>/dev/null"
check "staging removed" test ! -e /var/tmp/kubenode-bake
exit $failed
