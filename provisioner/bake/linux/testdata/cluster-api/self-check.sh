#!/bin/sh
# kubenode-bake: self-check of the baked guest. Generated from typed configuration; do not edit.
# Every check runs; each problem is printed as "problem: ..."; the script fails when there is one.
set -u
export LC_ALL=C PATH="${PATH:+$PATH:}/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
problems=0
problem() { echo "problem: $*"; problems=$((problems + 1)); }
enabled() { # enabled UNIT: starts at boot
  st=$(systemctl is-enabled "$1" 2>/dev/null) || true
  if [ "$st" = enabled ]; then echo "ok: $1 enabled"; else problem "$1 is not enabled to start at boot (systemctl is-enabled: ${st:-no such unit})"; fi
}
active() { # active UNIT: running now
  st=$(systemctl is-active "$1" 2>/dev/null) || true
  if [ "$st" = active ]; then echo "ok: $1 active"; else problem "$1 is not running (systemctl is-active: ${st:-unknown}; see journalctl -u $1)"; fi
}
module() { # module NAME: loaded now and listed for boot
  if [ -d "/sys/module/$1" ]; then echo "ok: module $1 loaded"; else problem "kernel module $1 is not loaded"; fi
  if cat /etc/modules-load.d/*.conf /run/modules-load.d/*.conf /usr/lib/modules-load.d/*.conf /etc/modules 2>/dev/null | grep -qx "[[:space:]]*$1[[:space:]]*"; then echo "ok: module $1 loaded at boot"; else problem "kernel module $1 is not loaded at boot (no modules-load.d file lists it)"; fi
}
sysctl_is() { # sysctl_is KEY VALUE: now and at boot
  v=$(sysctl -n "$1" 2>/dev/null) || v=
  if [ "$v" = "$2" ]; then echo "ok: $1 = $2"; else problem "sysctl $1 is ${v:-unset}, want $2"; fi
  if cat /usr/lib/sysctl.d/*.conf /run/sysctl.d/*.conf /etc/sysctl.d/*.conf /etc/sysctl.conf 2>/dev/null | awk -F= -v k="$1" -v w="$2" '{ gsub(/[[:space:]]/, "") } $1 == k { v = $2 } END { exit v != w }'; then echo "ok: $1 = $2 at boot"; else problem "sysctl $1 = $2 is not set for boot (in /etc/sysctl.d)"; fi
}
version_is() { # version_is NAME WANT COMMAND...: the last word of the command's first line
  what=$1; want=$2; shift 2
  v=$("$@" 2>/dev/null | awk 'NR == 1 { print $NF }') || v=
  if [ "$v" = "$want" ]; then echo "ok: $what $want"; else problem "$what reports ${v:-no version} ($*), want $want"; fi
}
cloudinit_grows_root() { # prints why cloud-init would not grow the root, and fails
  cfg=$(cat /etc/cloud/cloud.cfg /etc/cloud/cloud.cfg.d/*.cfg 2>/dev/null)
  if ! printf '%s\n' "$cfg" | grep -Eq '^[[:space:]]*-[[:space:]]*\[?[[:space:]]*(cc_)?growpart([[:space:],]|\]|$)'; then
    echo "cloud-init's cloud.cfg lists no growpart module"; return 1
  fi
  if printf '%s\n' "$cfg" | awk '/^growpart:/ { g = 1; if ($0 ~ /mode:[[:space:]]*["'"'"']?(off|false)/) f = 1; next } /^[^[:space:]#]/ { g = 0 } g && /^[[:space:]]+mode:[[:space:]]*["'"'"']?(off|false)/ { f = 1 } END { exit !f }'; then
    echo "cloud-init's growpart is turned off (growpart: mode: off in /etc/cloud)"; return 1
  fi
  if printf '%s\n' "$cfg" | grep -Eq '^resize_rootfs:[[:space:]]*["'"'"']?(false|False|no|off)'; then
    echo "cloud-init's resize_rootfs is false in /etc/cloud"; return 1
  fi
  return 0
}

# Services
enabled 'containerd'
enabled 'kubelet'
active containerd
# Kernel and swap (the kubelet's and kube-proxy's needs)
module overlay
module br_netfilter
sysctl_is net.ipv4.ip_forward 1
sysctl_is net.bridge.bridge-nf-call-iptables 1
if [ "$(wc -l < /proc/swaps)" -le 1 ]; then echo 'ok: swap off'; else problem "swap is on ($(tail -n +2 /proc/swaps | awk '{ print $1 }' | tr '\n' ' ')): the kubelet does not start with swap"; fi
if grep -Eq '^[^#].*[[:space:]]swap[[:space:]]' /etc/fstab; then problem 'swap is in /etc/fstab: it comes back at boot'; fi
# Versions
version_is kubelet 'v1.33.13' kubelet --version
version_is kubeadm 'v1.33.13' kubeadm version -o short
version_is kubectl 'v1.33.13' kubectl version --client
v=$(containerd --version 2>/dev/null | awk 'NR == 1 { print $3 }') || v=
if [ "$v" = 'v2.1.4' ]; then echo 'ok: containerd v2.1.4'; else problem "containerd reports ${v:-no version}, want 2.1.4"; fi
# containerd answers
version_is crictl 'v1.33.0' crictl --version
if out=$(crictl info 2>&1); then echo 'ok: containerd answers crictl info (/etc/crictl.yaml: unix:///run/containerd/containerd.sock)'; else problem "containerd does not answer crictl info: $(printf '%s' "$out" | tail -n 1)"; fi
# CNI plugins of the bridge config
for p in bridge host-local loopback; do
  if [ -x /opt/cni/bin/"$p" ]; then echo "ok: CNI plugin $p"; else problem "CNI plugin $p is not in /opt/cni/bin (cni = bridge needs it)"; fi
done
# Time sync
sync=''
for u in chrony.service chronyd.service ntpsec.service ntp.service ntpd.service systemd-timesyncd.service; do
  if [ -z "$sync" ] && [ "$(systemctl is-enabled "$u" 2>/dev/null)" = enabled ]; then sync=$u; fi
done
if [ -n "$sync" ]; then echo "ok: time sync: $sync enabled"; else problem "no time sync service is enabled (chrony, ntp or systemd-timesyncd)"; fi
# The root grows to each new VM's disk
if ! command -v growpart >/dev/null; then
  problem "growpart is not installed: the root does not grow to a new VM's disk (Debian: cloud-guest-utils, Fedora: cloud-utils-growpart)"
elif command -v cloud-init >/dev/null; then
  if why=$(cloudinit_grows_root); then echo "ok: cloud-init grows the root (growpart, resizefs)"; else problem "the root does not grow to a new VM's disk: $why"; fi
else
  enabled kubenode-growroot.service
fi
# Cluster API's kubeadm bootstrap (bootstrap = "cluster-api")
if command -v cloud-init >/dev/null; then echo 'ok: cloud-init installed'; else problem 'cloud-init is not installed: nothing runs the bootstrap data of Cluster API (Debian: apt-get install cloud-init)'; fi
if python3 -c 'import jinja2' 2>/dev/null; then echo 'ok: python3 imports jinja2'; else problem "python3 cannot import jinja2: cloud-init cannot render Cluster API's '## template: jinja' user data (Debian/Ubuntu and Fedora/RHEL: python3-jinja2)"; fi
for u in cloud-init-local.service cloud-init-main.service cloud-init-network.service cloud-init.service cloud-config.service cloud-final.service; do
  systemctl cat "$u" >/dev/null 2>&1 || continue
  if systemctl is-enabled -q "$u" 2>/dev/null; then echo "ok: $u enabled"; else problem "$u is not enabled: cloud-init does not run that stage at boot (systemctl enable $u)"; fi
done
if ! systemctl cat cloud-final.service >/dev/null 2>&1; then problem 'cloud-init'\''s cloud-final.service is missing: nothing runs the runcmd that holds Cluster API'\''s kubeadm join'; fi
if [ -f /etc/cloud/cloud.cfg.d/99-kubenode-datasources.cfg ] && printf '%s' '# Written by kubenode-bake (bootstrap = "cluster-api"): the datasources cloud-init
# looks for Cluster API'\''s bootstrap data in. It sorts last in cloud.cfg.d, so its
# datasource_list replaces those of cloud.cfg and of the other files here.
datasource_list: [ NoCloud, ConfigDrive, OpenStack, None ]
# The VM'\''s name (its datasource'\''s local-hostname) resolves: kubeadm join and sudo
# look it up, and the image'\''s hosts file holds localhost only.
manage_etc_hosts: localhost
' | cmp -s - /etc/cloud/cloud.cfg.d/99-kubenode-datasources.cfg; then echo 'ok: /etc/cloud/cloud.cfg.d/99-kubenode-datasources.cfg: datasource_list: [ NoCloud, ConfigDrive, OpenStack, None ]'; else problem '/etc/cloud/cloud.cfg.d/99-kubenode-datasources.cfg does not hold the bake'\''s datasource_list: [ NoCloud, ConfigDrive, OpenStack, None ]'; fi
later_pins() { # the cloud.cfg.d files read after /etc/cloud/cloud.cfg.d/99-kubenode-datasources.cfg that set datasource_list
  after=''
  for f in /etc/cloud/cloud.cfg.d/*.cfg; do
    if [ -n "$after" ] && [ -f "$f" ] && grep -Eq '^[[:space:]]*datasource_list[[:space:]]*:' "$f"; then printf '%s\n' "$f"; fi
    if [ "$f" = '/etc/cloud/cloud.cfg.d/99-kubenode-datasources.cfg' ]; then after=1; fi
  done
}
for f in $(later_pins); do problem "$f sets datasource_list and is read after /etc/cloud/cloud.cfg.d/99-kubenode-datasources.cfg: its list wins"; done
if [ -e /etc/cloud/cloud.cfg.d/99-installer.cfg ]; then problem '/etc/cloud/cloud.cfg.d/99-installer.cfg is there: it pins or disables cloud-init'\''s datasources or networking'; else echo 'ok: no /etc/cloud/cloud.cfg.d/99-installer.cfg'; fi
if [ -e /etc/cloud/cloud.cfg.d/90-installer-network.cfg ]; then problem '/etc/cloud/cloud.cfg.d/90-installer-network.cfg is there: it pins or disables cloud-init'\''s datasources or networking'; else echo 'ok: no /etc/cloud/cloud.cfg.d/90-installer-network.cfg'; fi
if [ -e /etc/cloud/cloud.cfg.d/subiquity-disable-cloudinit-networking.cfg ]; then problem '/etc/cloud/cloud.cfg.d/subiquity-disable-cloudinit-networking.cfg is there: it pins or disables cloud-init'\''s datasources or networking'; else echo 'ok: no /etc/cloud/cloud.cfg.d/subiquity-disable-cloudinit-networking.cfg'; fi
if [ -e /etc/cloud/cloud.cfg.d/00-subiquity-disable-cloudinit-networking.cfg ]; then problem '/etc/cloud/cloud.cfg.d/00-subiquity-disable-cloudinit-networking.cfg is there: it pins or disables cloud-init'\''s datasources or networking'; else echo 'ok: no /etc/cloud/cloud.cfg.d/00-subiquity-disable-cloudinit-networking.cfg'; fi
if [ -e /etc/cloud/ds-identify.cfg ]; then problem '/etc/cloud/ds-identify.cfg is there: it pins or disables cloud-init'\''s datasources or networking'; else echo 'ok: no /etc/cloud/ds-identify.cfg'; fi
if [ -e /etc/cloud/cloud-init.disabled ]; then problem '/etc/cloud/cloud-init.disabled is there: it pins or disables cloud-init'\''s datasources or networking'; else echo 'ok: no /etc/cloud/cloud-init.disabled'; fi
if [ -e /etc/systemd/system/kubenode-joiner.service ] || systemctl cat kubenode-joiner.service >/dev/null 2>&1; then problem 'the joiner'\''s unit kubenode-joiner.service is installed: it would join the node beside Cluster API'\''s kubeadm join'; else echo 'ok: no joiner unit'; fi
if [ -e /usr/local/bin/kubenode-joiner ]; then problem 'the joiner /usr/local/bin/kubenode-joiner is installed (bootstrap = "cluster-api" has none)'; fi
for b in kubeadm kubelet kubectl; do
  if [ -x /usr/bin/"$b" ]; then echo "ok: /usr/bin/$b"; else problem "/usr/bin/$b is missing: Cluster API's bootstrap runs kubeadm from /usr/bin, and the kubelet's unit /usr/bin/kubelet"; fi
done
if [ -S /run/containerd/containerd.sock ]; then echo 'ok: containerd'\''s CRI socket /run/containerd/containerd.sock'; else problem 'containerd'\''s socket /run/containerd/containerd.sock is missing: kubeadm'\''s default CRI socket, unix:///var/run/containerd/containerd.sock, finds no runtime'; fi
ssh=''
for u in ssh.service sshd.service ssh.socket sshd.socket; do
  if [ -z "$ssh" ] && [ "$(systemctl is-enabled "$u" 2>/dev/null)" = enabled ]; then ssh=$u; fi
done
if [ -n "$ssh" ]; then echo "ok: SSH server: $ssh enabled"; else problem "no SSH server is enabled (ssh.service sshd.service ssh.socket sshd.socket): Cluster API's machines are reached by SSH; install openssh-server and enable it"; fi
# Preloaded images
if images=$(ctr -n k8s.io images ls -q 2>&1); then
  for i in 'registry.k8s.io/pause:3.10' 'docker.io/library/busybox:latest'; do
    if printf '%s\n' "$images" | grep -qxF "$i"; then echo "ok: image $i"; else problem "image $i is not in containerd (ctr -n k8s.io images ls)"; fi
  done
else
  problem "ctr -n k8s.io images ls failed: $images"
fi
if [ "$problems" -gt 0 ]; then echo "self-check: $problems problems" >&2; exit 1; fi
echo 'ok: self-check passed'
