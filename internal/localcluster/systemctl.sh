#!/bin/bash
# systemctl for this host made a node (localcluster.PrepareNode), which has
# no systemd.
# kubeadm (and the joiner) run `systemctl restart kubelet` and friends when a
# systemctl is on PATH; this one runs the kubelet the way kubeadm's
# 10-kubeadm.conf drop-in would, tracked by a PID file. Other units are not
# managed here: every verb succeeds quietly for them.
#
# It lives at <node dir>/bin/systemctl; its state and logs are in <node dir>.
set -u
dir=$(cd "$(dirname "$0")/.." && pwd)
pidfile=$dir/kubelet.pid
log=$dir/kubelet.log
echo "$(date -u +%T.%3N) systemctl $*" >>"$dir/systemctl.log"

verb='' unit=''
for arg in "$@"; do
  case "$arg" in
    -q | --quiet) exec >/dev/null ;;
    -*) ;; # --no-pager, ...: nothing to change here
    *) if [ -z "$verb" ]; then verb=$arg; elif [ -z "$unit" ]; then unit=${arg%.service}; fi ;;
  esac
done

# running checks the process too: a stale PID file may name a reused PID.
running() {
  local pid
  pid=$(cat "$pidfile" 2>/dev/null) && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = kubelet ]
}

stop() {
  running || { rm -f "$pidfile"; return 0; }
  local pid
  pid=$(cat "$pidfile")
  kill "$pid"
  for _ in $(seq 100); do running || break; sleep 0.1; done
  running && kill -9 "$pid"
  while running; do sleep 0.1; done
  rm -f "$pidfile"
}

start() {
  running && return 0
  # The drop-in's EnvironmentFile=-/var/lib/kubelet/kubeadm-flags.env and
  # EnvironmentFile=-/etc/default/kubelet (Debian's place for KUBELET_EXTRA_ARGS).
  KUBELET_KUBEADM_ARGS='' KUBELET_EXTRA_ARGS=''
  [ -f /var/lib/kubelet/kubeadm-flags.env ] && . /var/lib/kubelet/kubeadm-flags.env
  [ -f /etc/default/kubelet ] && . /etc/default/kubelet
  # setsid: the kubelet outlives this script and its caller, as a unit would.
  # (A background job of a script is no group leader, so setsid does not fork
  # and $! is the kubelet.)
  # shellcheck disable=SC2086 # the *_ARGS are lists of flags
  setsid kubelet --bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf \
    --kubeconfig=/etc/kubernetes/kubelet.conf --config=/var/lib/kubelet/config.yaml \
    $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS >>"$log" 2>&1 </dev/null &
  echo $! >"$pidfile"
}

[ "$unit" = kubelet ] || exit 0
case "$verb" in
  start) start ;;
  restart) stop; start ;;
  stop) stop ;;
  is-active) if running; then echo active; else echo inactive; exit 3; fi ;;
  is-enabled) echo enabled ;;
  status)
    echo "* kubelet.service - kubelet (kubenode localcluster)"
    echo "     Loaded: loaded ($0)"
    if running; then echo "     Active: active (running), PID $(cat "$pidfile")"; else echo "     Active: inactive (dead)"; exit 3; fi ;;
  enable | disable | daemon-reload | reset-failed) ;;
  *) echo "systemctl (kubenode localcluster): $verb is not supported for kubelet" >&2; exit 1 ;;
esac
