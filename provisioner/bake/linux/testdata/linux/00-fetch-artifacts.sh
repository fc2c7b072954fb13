#!/bin/sh
# kubenode-bake: the artifacts are what was checked on the build machine (sha256)
set -u
# One stream, in order: a tool's error and the line naming its artifact
# are read together.
exec 2>&1
fail=0
unreachable=0
fetch() { # name file url shown
  if [ "$unreachable" = 1 ]; then
    echo "download failed: artifact $1 from $4: not tried, the server could not be reached"
    fail=1
    return 1
  fi
  rm -f "$2"
  if command -v curl >/dev/null 2>&1; then
    curl -fsS --noproxy '*' --retry 3 --retry-delay 1 --retry-connrefused --connect-timeout 10 -o "$2" "$3" && return 0
    case $? in 7|28) unreachable=1 ;; esac
  elif command -v wget >/dev/null 2>&1; then
    wget -q --no-proxy -t 3 -T 60 -O "$2" "$3" && return 0
  else
    python3 -c 'import shutil, sys, urllib.request as u; shutil.copyfileobj(u.build_opener(u.ProxyHandler({})).open(sys.argv[1], timeout=60), open(sys.argv[2], "wb"))' "$3" "$2" && return 0
  fi
  echo "download failed: artifact $1 from $4"
  fail=1
  return 1
}
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
fetch 'kubelet' 'kubelet' 'http://10.0.2.2:41234/00112233445566778899aabbccddeeff/kubelet' 'http://10.0.2.2:41234/.../kubelet' && verify 'kubelet' 'kubelet' 'abababababababababababababababababababababababababababababababab'
fetch 'containerd' 'containerd-2.1.4-linux-amd64.tar.gz' 'http://10.0.2.2:41234/00112233445566778899aabbccddeeff/containerd-2.1.4-linux-amd64.tar.gz' 'http://10.0.2.2:41234/.../containerd-2.1.4-linux-amd64.tar.gz' && verify 'containerd' 'containerd-2.1.4-linux-amd64.tar.gz' 'cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd'
exit $fail
