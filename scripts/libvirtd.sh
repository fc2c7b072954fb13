#!/usr/bin/env bash
# Starts and stops libvirtd (and virtlogd) by hand: the machines kubenode is
# tested on have no systemd. Only daemons this script started are stopped.
#
#   scripts/libvirtd.sh start    starts them unless the socket already answers
#   scripts/libvirtd.sh stop     stops the daemons it started (by PID file)
#   scripts/libvirtd.sh status
set -euo pipefail

RUN=/run/kubenode
SOCK=/run/libvirt/libvirt-sock
log() { printf '[libvirtd] %s\n' "$*" >&2; }

answering() { [ -S "$SOCK" ] && virsh -c qemu:///system version >/dev/null 2>&1; }

start() {
  command -v libvirtd >/dev/null || { log "libvirtd missing: run scripts/setup.sh packages"; exit 1; }
  if answering; then
    log "already running (socket $SOCK answers)"
    return
  fi
  [ "$(id -u)" -eq 0 ] || { log "starting libvirtd needs root"; exit 1; }
  mkdir -p "$RUN"
  # With /dev/kvm root-only, libvirt re-probes QEMU on every call (30-57 s a define).
  if [ -e /dev/kvm ]; then
    chgrp kvm /dev/kvm 2>/dev/null && chmod 660 /dev/kvm || true
  fi
  # Never bring up the packaged "default" network: it is a bridge with dnsmasq
  # on a private range. Guests use QEMU user-mode networking instead.
  rm -f /etc/libvirt/qemu/networks/autostart/default.xml
  virtlogd --daemon --pid-file="$RUN/virtlogd.pid"
  libvirtd --daemon --pid-file="$RUN/libvirtd.pid"
  for _ in $(seq 1 100); do
    answering && { log "started (pid $(cat "$RUN/libvirtd.pid"))"; return; }
    sleep 0.1
  done
  log "libvirtd did not answer on $SOCK within 10 s"
  exit 1
}

stop_one() {
  local name=$1 pidfile=$RUN/$1.pid
  [ -f "$pidfile" ] || return 0
  local pid
  pid=$(cat "$pidfile")
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid"
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
    log "stopped $name (pid $pid)"
  fi
  rm -f "$pidfile"
}

case "${1:-}" in
  start) start ;;
  stop) stop_one libvirtd; stop_one virtlogd ;;
  status) if answering; then echo running; else echo stopped; exit 1; fi ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
