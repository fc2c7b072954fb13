#!/bin/sh
# kubenode-bake: container images preloaded into containerd's k8s.io namespace. Generated from typed configuration; do not edit.
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
has() {
  line=$(ctr -n k8s.io images ls | awk -v r="$1" '$1 == r')
  [ -n "$line" ] || return 1
  shift
  for l in "$@"; do case "$line" in *"$l"*) ;; *) return 1 ;; esac; done
}
pin() { ctr -n k8s.io images label "$1" 'io.cri-containerd.pinned=pinned' >/dev/null; }
if has 'registry.k8s.io/pause:3.10' 'kubenode.io/archive-sha256=1111111111111111111111111111111111111111111111111111111111111111' 'io.cri-containerd.pinned=pinned'; then
  echo 'ok: image-1-pause.tar imported (registry.k8s.io/pause:3.10)'
else
  ctr -n k8s.io images import '/var/tmp/kubenode-bake/image-1-pause.tar'
  ctr -n k8s.io images label 'registry.k8s.io/pause:3.10' 'kubenode.io/archive-sha256=1111111111111111111111111111111111111111111111111111111111111111' 'io.cri-containerd.pinned=pinned' >/dev/null || { echo 'image registry.k8s.io/pause:3.10 is not in containerd'\''s k8s.io namespace after importing image-1-pause.tar: the archive does not hold the image it names' >&2; exit 1; }
  echo 'changed: image-1-pause.tar imported (registry.k8s.io/pause:3.10)'
fi
if has 'docker.io/library/busybox:1.36' 'kubenode.io/archive-sha256=2222222222222222222222222222222222222222222222222222222222222222' 'io.cri-containerd.pinned=pinned' && has 'example.com/it'\''s:v1' 'kubenode.io/archive-sha256=2222222222222222222222222222222222222222222222222222222222222222' 'io.cri-containerd.pinned=pinned'; then
  echo 'ok: image-2-tools.tar imported (docker.io/library/busybox:1.36, example.com/it'\''s:v1)'
else
  ctr -n k8s.io images import '/var/tmp/kubenode-bake/image-2-tools.tar'
  ctr -n k8s.io images label 'docker.io/library/busybox:1.36' 'kubenode.io/archive-sha256=2222222222222222222222222222222222222222222222222222222222222222' 'io.cri-containerd.pinned=pinned' >/dev/null || { echo 'image docker.io/library/busybox:1.36 is not in containerd'\''s k8s.io namespace after importing image-2-tools.tar: the archive does not hold the image it names' >&2; exit 1; }
  ctr -n k8s.io images label 'example.com/it'\''s:v1' 'kubenode.io/archive-sha256=2222222222222222222222222222222222222222222222222222222222222222' 'io.cri-containerd.pinned=pinned' >/dev/null || { echo 'image example.com/it'\''s:v1 is not in containerd'\''s k8s.io namespace after importing image-2-tools.tar: the archive does not hold the image it names' >&2; exit 1; }
  echo 'changed: image-2-tools.tar imported (docker.io/library/busybox:1.36, example.com/it'\''s:v1)'
fi
if has 'registry.k8s.io/kube-proxy:v1.33.13' 'io.cri-containerd.pinned=pinned'; then echo 'ok: registry.k8s.io/kube-proxy:v1.33.13 pulled'; else ctr -n k8s.io images pull --hosts-dir '/etc/containerd/certs.d' 'registry.k8s.io/kube-proxy:v1.33.13' >/dev/null; pin 'registry.k8s.io/kube-proxy:v1.33.13'; echo 'changed: registry.k8s.io/kube-proxy:v1.33.13 pulled'; fi
expected='registry.k8s.io/pause:3.10 docker.io/library/busybox:1.36 example.com/it'\''s:v1 registry.k8s.io/kube-proxy:v1.33.13'
kubeadm_images=$(kubeadm config images list --kubernetes-version 'v1.33.13')
missing=''; for r in $kubeadm_images; do has "$r" || missing="$missing $r"; done
if [ -n "$missing" ]; then
  kubeadm config images pull --kubernetes-version 'v1.33.13' --cri-socket unix:///run/containerd/containerd.sock
  echo "changed: kubeadm's images pulled:$missing"
else echo "ok: kubeadm's images pulled"; fi
for r in $kubeadm_images; do has "$r" 'io.cri-containerd.pinned=pinned' || { pin "$r"; echo "changed: $r pinned"; }; done
for r in $kubeadm_images; do echo "kubeadm image: $r"; done
expected="$expected $kubeadm_images"
failed=''
for r in $expected; do
  d=$(ctr -n k8s.io images ls | awk -v r="$r" '$1 == r { print $3 }')
  if [ -n "$d" ]; then echo "image: $r $d"; else echo "image $r is not in containerd's k8s.io namespace after the import and pulls" >&2; failed=1; fi
done
[ -z "$failed" ] || { echo 'an archive must hold the references it names; see: ctr -n k8s.io images ls' >&2; exit 1; }
