#!/bin/sh
# kubenode-bake: the artifacts are what was checked on the build machine (sha256)
set -u
# One stream, in order: a tool's error and the line naming its artifact
# are read together.
exec 2>&1
fail=0
verify() { # name file sha256
  if [ ! -f "$2" ]; then
    echo "missing: artifact $1: $2 is not on the guest"
    fail=1
    return 1
  fi
  got=$(sha256sum "$2" | cut -d' ' -f1)
  if [ "$got" != "$3" ]; then
    echo "mismatch: artifact $1: $2 has sha256 $got, want $3"
    fail=1
    return 1
  fi
  echo "ok: artifact $1 sha256 $got"
}
cd '/var/tmp/kubenode-bake' || exit 1
verify 'kubelet' 'kubelet' 'abababababababababababababababababababababababababababababababab'
verify 'containerd' 'containerd-2.1.4-linux-amd64.tar.gz' 'cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd'
exit $fail
