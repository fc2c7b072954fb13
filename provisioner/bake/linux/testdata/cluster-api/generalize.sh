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
if [ -e /etc/systemd/system/kubenode-hostname.service ] || [ -e /usr/local/sbin/kubenode-hostname ] || [ -e /etc/kubenode/build-hostname ]; then systemctl disable -q kubenode-hostname.service 2>/dev/null || true; rm -f /etc/systemd/system/kubenode-hostname.service /usr/local/sbin/kubenode-hostname /etc/kubenode/build-hostname; systemctl daemon-reload; echo 'changed: kubenode-hostname.service removed (cloud-init names each VM from its datasource)'; else echo 'ok: no kubenode-hostname.service'; fi
if [ -e /etc/netplan/00-installer-config.yaml ]; then rm -f /etc/netplan/00-installer-config.yaml; echo 'changed: /etc/netplan/00-installer-config.yaml removed (the installer'\''s: cloud-init configures each VM from its datasource)'; fi
if [ -e /etc/netplan/50-cloud-init.yaml ]; then rm -f /etc/netplan/50-cloud-init.yaml; echo 'changed: /etc/netplan/50-cloud-init.yaml removed (the installer'\''s: cloud-init configures each VM from its datasource)'; fi
if [ -e /etc/cloud/cloud.cfg.d/curtin-preserve-sources.cfg ]; then rm -f /etc/cloud/cloud.cfg.d/curtin-preserve-sources.cfg; echo 'changed: /etc/cloud/cloud.cfg.d/curtin-preserve-sources.cfg removed (the installer'\''s: cloud-init configures each VM from its datasource)'; fi
if [ -s /etc/hostname ]; then : > /etc/hostname; echo 'changed: /etc/hostname emptied (cloud-init sets each VM'\''s name)'; else echo 'ok: /etc/hostname empty'; fi
put '/etc/hosts' 0644 <<'KUBENODE_EOF' || true
127.0.0.1 localhost
::1 localhost ip6-localhost ip6-loopback
KUBENODE_EOF
if [ -n "$(ls -A /var/lib/cloud 2>/dev/null)" ] || [ -e /var/log/cloud-init.log ] || [ -e /var/log/cloud-init-output.log ]; then
  if cloud-init clean --help 2>&1 | grep -q -- '--seed'; then cloud-init clean --logs --seed >/dev/null; else cloud-init clean --logs >/dev/null; rm -rf /var/lib/cloud/seed; fi
  echo 'changed: cloud-init state, logs and seed cleaned: it runs again on every VM from this image'
else
  echo 'ok: cloud-init state, logs and seed clean: it runs again on every VM from this image'
fi
if command -v apt-get >/dev/null; then apt-get clean; fi
find /var/log -type f \( -name '*.gz' -o -name '*.[0-9]' \) -delete
find /var/log -type f -exec truncate -s 0 {} +
echo 'ok: logs truncated'
