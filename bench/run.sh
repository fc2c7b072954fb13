#!/usr/bin/env bash
# Runs kubenode's benchmarks and prints each figure next to what it is
# compared with.
set -euo pipefail
cd "$(dirname "$0")/.."

out=$(go test -run '^$' -bench 'SeedDisc' -benchtime "${BENCHTIME:-2s}" -count 1 ./bench)
echo "$out"
echo "$out" | awk '
  /^BenchmarkSeedDiscInProcess/ { inproc = $3 }
  /^BenchmarkSeedDiscXorriso/   { xorr = $3 }
  END {
    if (inproc == "" || xorr == "") { print "seed disc: missing figures"; exit 1 }
    printf "seed disc (Windows 2022, 2 files): in-process %.3f ms, xorriso -as mkisofs -J -R %.3f ms: in-process is %.1fx faster (goal >= 10x)\n", inproc/1e6, xorr/1e6, xorr/inproc
  }'

# One conversion each of the same node image: seconds per run, so 1x.
out=$(go test -run '^$' -bench 'Export' -benchtime 1x -count 1 -timeout 30m ./bench)
echo "$out"
echo "$out" | awk '
  /^BenchmarkExportKubenode/   { for (i = 1; i <= NF; i++) { if ($i == "ns/op") kt = $(i-1); if ($i == "bytes") ks = $(i-1) } }
  /^BenchmarkExportQemuPlugin/ { for (i = 1; i <= NF; i++) { if ($i == "ns/op") qt = $(i-1); if ($i == "bytes") qs = $(i-1) } }
  END {
    if (kt == "" || qt == "") { print "export: missing figures"; exit 1 }
    printf "export (Debian node image): kubenode-export %.1f s, %.1f MiB; qemu-img convert -c -O qcow2 %.1f s, %.1f MiB: %.1fx faster at %.3fx the size (goal >= 3x at <= 1.05x)\n", kt/1e9, ks/1048576, qt/1e9, qs/1048576, qt/kt, ks/qs
  }'

# join -> Node Ready on the harness's real control plane, this host as the
# node: plain kubeadm join vs the joiner (seconds each, so 3x).
out=$(go test -tags integration -run '^$' -bench 'Join' -benchtime 3x -count 1 -timeout 20m ./bench)
echo "$out"
echo "$out" | awk '
  /^BenchmarkJoin\/kubeadm/ { for (i = 1; i <= NF; i++) { if ($i == "ns/op") kt = $(i-1); if ($i == "peak-RSS-MB") kr = $(i-1) } }
  /^BenchmarkJoin\/joiner/  { for (i = 1; i <= NF; i++) { if ($i == "ns/op") jt = $(i-1); if ($i == "peak-RSS-MB") jr = $(i-1); if ($i == "binary-MB") jb = $(i-1) } }
  END {
    if (kt == "" || jt == "") { print "join: missing figures"; exit 1 }
    printf "join -> Ready: joiner %.2f s, kubeadm join %.2f s: overhead %.2f s (goal <= 1 s); joiner peak RSS %.1f MB (goal <= 50 MB, kubeadm itself %.1f MB); joiner binary %.1f MB\n", jt/1e9, kt/1e9, (jt-kt)/1e9, jr, kr, jb
  }'

# The same Debian build with hashicorp/packer-plugin-qemu v1.0.9 and with
# kubenode-libvirt + kubenode-export, one after the other (minutes each).
# BENCH_PEER_BUILD=skip leaves it out: `make ci` does, since its three TCG
# builds take minutes and make ci's integration and e2e steps build and
# boot the same base disk with this plugin anyway.
if [ "${BENCH_PEER_BUILD:-run}" = skip ]; then
  echo "peer build: skipped (BENCH_PEER_BUILD=skip; make bench runs it)"
else
  out=$(go test -tags integration -run '^$' -bench 'PeerBuild' -benchtime 1x -count 1 -timeout 60m ./bench) || { echo "$out"; exit 1; }
  echo "$out"
  echo "$out" | awk '
    function fig(   i) { for (i = 1; i <= NF; i++) { if ($i == "ns/op") t = $(i-1); if ($i == "bytes") s = $(i-1); if ($i == "ssh-s") a = $(i-1); if ($i == "provision-s") p = $(i-1); if ($i == "finish-s") f = $(i-1) } }
    function line(name, t, s, a, p, f) { printf "  %-62s %6.1f s (to SSH %.1f s, provision + shutdown %.1f s, image %.1f s), %d bytes (%.1f MiB)\n", name, t/1e9, a, p, f, s, s/1048576 }
    /^BenchmarkPeerBuild\/qemu_backing_file/ { fig(); bt = t; bs = s; ba = a; bp = p; bf = f; next }
    /^BenchmarkPeerBuild\/qemu/     { fig(); qt = t; qs = s; qa = a; qp = p; qf = f }
    /^BenchmarkPeerBuild\/kubenode/ { fig(); kt = t; ks = s; ka = a; kp = p; kf = f }
    END {
      if (qt == "" || kt == "") { print "peer build: missing figures"; exit 1 }
      print "peer build (Debian base disk, TCG, 2 vCPUs, 1 GiB, one shell provisioner, compressed qcow2; packer build wall time):"
      line("hashicorp/qemu v1.0.9 (use_backing_file = false, disk_compression):", qt, qs, qa, qp, qf)
      if (bt != "") line("hashicorp/qemu v1.0.9 (use_backing_file = true, disk_compression):", bt, bs, ba, bp, bf)
      line("kubenode-libvirt + kubenode-export (zstd):", kt, ks, ka, kp, kf)
      printf "  kubenode/qemu: time %.2fx (goal <= 0.7x), size %.2fx (goal <= 1.0x)\n", kt/qt, ks/qs
    }'
fi

# The lab (image build, boot -> Ready with 1 and 2 nodes, Ready -> first Job
# Succeeded) is measured by `make e2e`, which boots both node counts anyway;
# a second lab run here would add about ten minutes of TCG boots for the
# same figures. Show what this tree's last e2e run measured.
if [ -f e2e.log ] && grep -q 'lab figures:' e2e.log; then
  echo "lab (from this tree's last make e2e run, $(date -u -r e2e.log +%Y-%m-%dT%H:%MZ)):"
  grep -o 'lab figures: .*' e2e.log | tail -1 | sed 's/^/  /'
  pct=$(grep -o 'lab figures: .*' e2e.log | tail -1 | sed -n 's/.*, \([+-]*[0-9]*\)% over 1 node.*/\1/p')
  echo "  the second node adds ${pct}% to boot -> Ready wall time (goal <= +50%)"
else
  echo "lab: no figures: run make e2e first (it measures the lab with 1 and 2 nodes)"
fi

# The Linux bake's artifact transfer, the same files both ways in one
# build: the first bake's guest downloads them from the bake's server
# (artifact_delivery = "http"), the second bake uploads them over SSH
# (artifact_delivery = "communicator"). TestLinuxBakeInATCGGuest in
# `make integration` runs that build anyway; a second one here would add
# about nine minutes of TCG boot and bakes for the same figures. Show what
# this tree's last integration run measured.
if [ -f integration.log ] && grep -q 'artifact transfer figures:' integration.log; then
  echo "Linux bake artifact transfer (from this tree's last make integration run, $(date -u -r integration.log +%Y-%m-%dT%H:%MZ); TCG guest, 2 vCPUs):"
  line=$(grep -o 'artifact transfer figures: .*' integration.log | tail -1)
  echo "  ${line#artifact transfer figures: }"
  echo "$line" | awk '{ for (i = 1; i <= NF; i++) { if ($i == "HTTP") h = $(i+1); if ($i == "(SSH)") c = $(i+1) } }
    END { gsub(/s/, "", h); gsub(/s/, "", c); if (h > 0 && c > 0) printf "  HTTP takes %.2fx the communicator'"'"'s time\n", h / c }'
else
  echo "Linux bake artifact transfer: no figures: run make integration first (TestLinuxBakeInATCGGuest measures both ways)"
fi
