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
