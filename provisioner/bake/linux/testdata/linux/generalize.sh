#!/bin/sh
# kubenode-bake: generalize: every VM from this image is a new machine. Generated from typed configuration; do not edit.
set -eu
export DEBIAN_FRONTEND=noninteractive LC_ALL=C
put() { # put PATH MODE: stdin -> PATH when it or its mode differs
  tmp=$(mktemp); cat > "$tmp"
  if [ -f "$1" ] && cmp -s "$tmp" "$1" && [ "$(stat -c %a "$1")" = "${2#0}" ]; then rm -f "$tmp"; echo "ok: $1"; return 1; fi
  mkdir -p "$(dirname "$1")"; install -m "$2" "$tmp" "$1"; rm -f "$tmp"; echo "changed: $1"
}
if [ -s /etc/machine-id ]; then truncate -s 0 /etc/machine-id; echo 'changed: machine-id emptied (systemd makes a new one at boot)'; else echo 'ok: machine-id empty'; fi
rm -f /var/lib/dbus/machine-id
if ls /etc/ssh/ssh_host_*key* >/dev/null 2>&1; then rm -f /etc/ssh/ssh_host_*key*; echo 'changed: SSH host keys removed'; else echo 'ok: no SSH host keys'; fi
if put '/etc/systemd/system/kubenode-ssh-hostkeys.service' 0644 <<'KUBENODE_EOF'
[Unit]
Description=Generate SSH host keys missing from a generalized image
Before=ssh.service sshd.service
ConditionPathExistsGlob=!/etc/ssh/ssh_host_*_key

[Service]
Type=oneshot
ExecStart=/usr/bin/ssh-keygen -A

[Install]
WantedBy=multi-user.target
KUBENODE_EOF
then systemctl daemon-reload; systemctl enable -q kubenode-ssh-hostkeys.service; fi
if [ -e /etc/systemd/system/kubenode-lock-build-account.service ] || [ -e /usr/local/sbin/kubenode-lock-build-account ]; then systemctl disable -q kubenode-lock-build-account.service 2>/dev/null || true; rm -f /etc/systemd/system/kubenode-lock-build-account.service /usr/local/sbin/kubenode-lock-build-account; systemctl daemon-reload; echo 'changed: the build account is kept (keep_build_account)'; else echo 'ok: the build account is kept (keep_build_account)'; fi
if [ -e /etc/apt/apt.conf.d/90curtin-aptproxy ]; then rm -f /etc/apt/apt.conf.d/90curtin-aptproxy; echo 'changed: /etc/apt/apt.conf.d/90curtin-aptproxy removed (the installer'\''s proxy)'; fi
if [ -e /etc/apt/apt.conf.d/90cloud-init-aptproxy ]; then rm -f /etc/apt/apt.conf.d/90cloud-init-aptproxy; echo 'changed: /etc/apt/apt.conf.d/90cloud-init-aptproxy removed (the installer'\''s proxy)'; fi
if [ -f /etc/apt/apt.conf ] && grep -Eqi '^[[:space:]]*Acquire::https?::Proxy([[:space:]"]|::)' /etc/apt/apt.conf; then
  sed -E -i '/^[[:space:]]*Acquire::https?::Proxy([[:space:]"]|::)/Id' /etc/apt/apt.conf
  echo 'changed: Acquire::http(s)::Proxy removed from /etc/apt/apt.conf (the installer'\''s proxy)'
  if ! grep -q '[^[:space:]]' /etc/apt/apt.conf; then rm -f /etc/apt/apt.conf; echo 'changed: /etc/apt/apt.conf removed (empty)'; fi
fi
names=$(cat /proc/sys/kernel/hostname /etc/hostname 2>/dev/null | tr -d ' \t' | grep -v '^$' | sort -u)
if [ -f /etc/kubenode/build-hostname ] && [ "$(cat /etc/kubenode/build-hostname)" = "$names" ]; then echo 'ok: /etc/kubenode/build-hostname'; else mkdir -p "$(dirname /etc/kubenode/build-hostname)"; printf '%s\n' "$names" > /etc/kubenode/build-hostname; chmod 0644 /etc/kubenode/build-hostname; echo "changed: /etc/kubenode/build-hostname: $(echo $names) (a VM still called so is renamed at boot)"; fi
put '/usr/local/sbin/kubenode-hostname' 0755 <<'KUBENODE_EOF' || true
#!/bin/sh
# kubenode: give this VM a host name of its own at boot, unless something else named it. Generated; do not edit.
set -u
prefix='kubenode-'
current=$(cat /proc/sys/kernel/hostname 2>/dev/null) || current=
mid=$(head -c 12 /etc/machine-id 2>/dev/null) || mid=
case $mid in
  *[!0-9a-f]*|'') mid= ;;
esac
if [ ${#mid} -ne 12 ]; then echo "kubenode-hostname: /etc/machine-id holds no machine ID yet: the host name ${current:-(none)} is left as it is" >&2; exit 0; fi
name=$prefix$mid
unnamed() { # the VM still has a build's name, localhost or none
  case $current in
    ''|'(none)'|localhost|localhost.localdomain) return 0 ;;
  esac
  [ -f /etc/kubenode/build-hostname ] && grep -qxF -- "$current" /etc/kubenode/build-hostname
}
if [ "$current" = "$name" ]; then
  echo "kubenode-hostname: $name: this VM's name already"
elif unnamed; then
  if hostnamectl set-hostname "$name" 2>/dev/null; then :; else printf '%s\n' "$name" > /etc/hostname; hostname "$name" 2>/dev/null || printf '%s' "$name" > /proc/sys/kernel/hostname; fi
  echo "kubenode-hostname: ${current:-(none)} -> $name (no cloud-init seed or user named this VM; hostname_prefix $prefix + machine ID)"
else
  echo "kubenode-hostname: $current: named by cloud-init or the user; left as it is"
  exit 0
fi
# The name resolves (sudo, kubeadm): 127.0.1.1, as Debian's installer has it.
if grep -Eq "^[^#]*[[:space:]]$name([[:space:]]|\$)" /etc/hosts 2>/dev/null; then exit 0; fi
if grep -q '^127\.0\.1\.1[[:space:]]' /etc/hosts 2>/dev/null; then
  sed -i "s/^127\.0\.1\.1[[:space:]].*/127.0.1.1 $name/" /etc/hosts
else
  printf '127.0.1.1 %s\n' "$name" >> /etc/hosts
fi
echo "kubenode-hostname: /etc/hosts: 127.0.1.1 $name"
KUBENODE_EOF
if put '/etc/systemd/system/kubenode-hostname.service' 0644 <<'KUBENODE_EOF'
[Unit]
Description=Give this VM a host name of its own when nothing else named it (kubenode)
Documentation=https://github.com/kubenode/packer-plugin-kubenode/blob/main/docs/bake.md
After=local-fs.target systemd-machine-id-commit.service cloud-init-local.service cloud-init-network.service cloud-init.service
Before=kubenode-joiner.service kubelet.service
ConditionPathExists=/usr/local/sbin/kubenode-hostname

[Service]
Type=oneshot
ExecStart=/usr/local/sbin/kubenode-hostname
RemainAfterExit=yes

[Install]
WantedBy=multi-user.target
KUBENODE_EOF
then systemctl daemon-reload; fi
if systemctl is-enabled -q kubenode-hostname.service; then echo 'ok: kubenode-hostname.service enabled'; else systemctl enable -q kubenode-hostname.service; echo 'changed: kubenode-hostname.service enabled: a VM from this image that nothing names is called kubenode-<machine ID>'; fi
if [ -d /etc/netplan ]; then
  removed=
  for f in /etc/netplan/*.yaml /etc/netplan/*.yml; do
    [ -f "$f" ] && [ "$f" != '/etc/netplan/60-kubenode-clone.yaml' ] || continue
    if grep -Eq '^[[:space:]]*macaddress:' "$f"; then rm -f "$f"; removed=1; echo "changed: $f removed (it matched the build VM's NIC by MAC address)"; fi
  done
  if [ -n "$removed" ] || [ -e '/etc/netplan/60-kubenode-clone.yaml' ]; then
    put '/etc/netplan/60-kubenode-clone.yaml' 0600 <<'KUBENODE_EOF' || true
# Written by kubenode-bake's generalize: the build VM's network config matched
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
KUBENODE_EOF
  else
    echo 'ok: no netplan file matches a NIC by MAC address'
  fi
fi
if command -v cloud-init >/dev/null && [ -e /var/lib/cloud/instance ]; then cloud-init clean --logs >/dev/null; echo 'changed: cloud-init state cleaned'; fi
if command -v apt-get >/dev/null; then apt-get clean; fi
find /var/log -type f \( -name '*.gz' -o -name '*.[0-9]' \) -delete
find /var/log -type f -exec truncate -s 0 {} +
echo 'ok: logs truncated'
