#!/bin/sh
# kubenode-bake: cloud-init for Cluster API's bootstrap data (bootstrap = "cluster-api"). Generated from typed configuration; do not edit.
set -eu
export DEBIAN_FRONTEND=noninteractive LC_ALL=C
put() { # put PATH MODE: stdin -> PATH when it or its mode differs
  tmp=$(mktemp); cat > "$tmp"
  if [ -f "$1" ] && cmp -s "$tmp" "$1" && [ "$(stat -c %a "$1")" = "${2#0}" ]; then rm -f "$tmp"; echo "ok: $1"; return 1; fi
  mkdir -p "$(dirname "$1")"; install -m "$2" "$tmp" "$1"; rm -f "$tmp"; echo "changed: $1"
}
export 'HTTP_PROXY=http://proxy:3128'
export 'http_proxy=http://proxy:3128'
export 'NO_PROXY=10.0.0.0/8,'\''quoted'\'''
export 'no_proxy=10.0.0.0/8,'\''quoted'\'''
# cloud-init, and Jinja for the '## template: jinja' user data of Cluster API's kubeadm bootstrap.
need=''
if command -v apt-get >/dev/null; then
  for p in cloud-init python3-jinja2; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || need="$need $p"; done
  if [ -n "$need" ]; then echo "changed: installing$need"; apt-get -o DPkg::Lock::Timeout=0 update -qq; apt-get -o DPkg::Lock::Timeout=0 install -y -qq --no-install-recommends $need >/dev/null; else echo 'ok: cloud-init and python3-jinja2 installed'; fi
elif command -v dnf >/dev/null; then
  for p in cloud-init python3-jinja2; do rpm -q "$p" >/dev/null 2>&1 || need="$need $p"; done
  if [ -n "$need" ]; then echo "changed: installing$need"; dnf install -y -q $need; else echo 'ok: cloud-init and python3-jinja2 installed'; fi
else
  echo 'no apt-get or dnf on this guest: install cloud-init and Jinja (python3-jinja2) yourself' >&2; exit 1
fi
# No joiner: cloud-init's runcmd joins the node (an earlier bake's joiner would join it twice).
if [ -e /etc/systemd/system/kubenode-joiner.service ] || [ -e /usr/local/bin/kubenode-joiner ] || [ -e /etc/kubenode/joiner.yaml ]; then
  systemctl disable -q kubenode-joiner 2>/dev/null || true; rm -f /etc/systemd/system/kubenode-joiner.service /usr/local/bin/kubenode-joiner /etc/kubenode/joiner.yaml; systemctl daemon-reload
  echo 'changed: the joiner, its config and unit removed (bootstrap = "cluster-api")'
else
  echo 'ok: no joiner'
fi
# cloud-init's growpart and resizefs grow the root: node-basics' unit (installed while cloud-init was absent) goes.
if [ -e /etc/systemd/system/kubenode-growroot.service ] || [ -e /usr/local/sbin/kubenode-growroot ]; then
  systemctl disable -q kubenode-growroot.service 2>/dev/null || true; rm -f /etc/systemd/system/kubenode-growroot.service /usr/local/sbin/kubenode-growroot; systemctl daemon-reload
  echo 'changed: kubenode-growroot.service removed (cloud-init grows the root)'
else
  echo 'ok: no kubenode-growroot.service'
fi
# What the OS installer left that pins or disables cloud-init's datasources or networking.
if [ -e /etc/cloud/cloud.cfg.d/99-installer.cfg ]; then rm -f /etc/cloud/cloud.cfg.d/99-installer.cfg; echo 'changed: /etc/cloud/cloud.cfg.d/99-installer.cfg removed'; fi
if [ -e /etc/cloud/cloud.cfg.d/90-installer-network.cfg ]; then rm -f /etc/cloud/cloud.cfg.d/90-installer-network.cfg; echo 'changed: /etc/cloud/cloud.cfg.d/90-installer-network.cfg removed'; fi
if [ -e /etc/cloud/cloud.cfg.d/subiquity-disable-cloudinit-networking.cfg ]; then rm -f /etc/cloud/cloud.cfg.d/subiquity-disable-cloudinit-networking.cfg; echo 'changed: /etc/cloud/cloud.cfg.d/subiquity-disable-cloudinit-networking.cfg removed'; fi
if [ -e /etc/cloud/cloud.cfg.d/00-subiquity-disable-cloudinit-networking.cfg ]; then rm -f /etc/cloud/cloud.cfg.d/00-subiquity-disable-cloudinit-networking.cfg; echo 'changed: /etc/cloud/cloud.cfg.d/00-subiquity-disable-cloudinit-networking.cfg removed'; fi
if [ -e /etc/cloud/ds-identify.cfg ]; then rm -f /etc/cloud/ds-identify.cfg; echo 'changed: /etc/cloud/ds-identify.cfg removed'; fi
if [ -e /etc/cloud/cloud-init.disabled ]; then rm -f /etc/cloud/cloud-init.disabled; echo 'changed: /etc/cloud/cloud-init.disabled removed'; fi
put '/etc/cloud/cloud.cfg.d/99-kubenode-datasources.cfg' 0644 <<'KUBENODE_EOF' || true
# Written by kubenode-bake (bootstrap = "cluster-api"): the datasources cloud-init
# looks for Cluster API's bootstrap data in. It sorts last in cloud.cfg.d, so its
# datasource_list replaces those of cloud.cfg and of the other files here.
datasource_list: [ NoCloud, ConfigDrive, OpenStack, None ]
# The VM's name (its datasource's local-hostname) resolves: kubeadm join and sudo
# look it up, and the image's hosts file holds localhost only.
manage_etc_hosts: localhost
KUBENODE_EOF
later_pins() { # the cloud.cfg.d files read after /etc/cloud/cloud.cfg.d/99-kubenode-datasources.cfg that set datasource_list
  after=''
  for f in /etc/cloud/cloud.cfg.d/*.cfg; do
    if [ -n "$after" ] && [ -f "$f" ] && grep -Eq '^[[:space:]]*datasource_list[[:space:]]*:' "$f"; then printf '%s\n' "$f"; fi
    if [ "$f" = '/etc/cloud/cloud.cfg.d/99-kubenode-datasources.cfg' ]; then after=1; fi
  done
}
pins=$(later_pins)
if [ -n "$pins" ]; then
  echo "$(echo $pins) set datasource_list and cloud-init reads them after /etc/cloud/cloud.cfg.d/99-kubenode-datasources.cfg, so theirs wins: remove them (or their datasource_list) in an earlier provisioner, or list the datasources you need in cloud_init_datasources" >&2
  exit 1
fi
echo 'ok: cloud-init'\''s datasource_list is NoCloud, ConfigDrive, OpenStack, None'
# cloud-init's stages start at boot.
found=''
for u in cloud-init-local.service cloud-init-main.service cloud-init-network.service cloud-init.service cloud-config.service cloud-final.service; do
  # A masked unit cannot be enabled.
  case "$(systemctl is-enabled "$u" 2>/dev/null)" in
    masked) systemctl unmask -q "$u"; echo "changed: $u unmasked" ;;
    masked-runtime) systemctl unmask -q --runtime "$u"; echo "changed: $u unmasked" ;;
  esac
  systemctl cat "$u" >/dev/null 2>&1 || continue
  found="$found $u"
  if systemctl is-enabled -q "$u"; then echo "ok: $u enabled"; else systemctl enable -q "$u"; echo "changed: $u enabled"; fi
done
if [ -z "$found" ]; then echo 'cloud-init is installed but systemd knows none of its units (cloud-init-local.service cloud-init-main.service cloud-init-network.service cloud-init.service cloud-config.service cloud-final.service): reinstall cloud-init' >&2; exit 1; fi
