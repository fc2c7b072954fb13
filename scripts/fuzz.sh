#!/usr/bin/env bash
# Runs each fuzz target for a while and copies the corpus it found into its
# package's testdata/fuzz/<target>/, where `go test` replays it. A target's
# package is the one whose _test.go files define `func <target>(`.
#   scripts/fuzz.sh 30s FuzzRenderWindows FuzzDiscNames ...
# FUZZMINIMIZETIME (default 5s) bounds the minimization of each new input:
# with go test's 60 s, the disc-image targets (inputs of a few KiB) spend a
# short run minimizing instead of fuzzing.
# FUZZ_CORPUS=discard runs the targets without copying the corpus (a check:
# the tree stays as it is). A failing input is written into testdata/fuzz/
# by `go test` itself either way: commit it as a regression seed.
# FUZZ_MIN_EXECS (default 0: none) is the executions each target must reach:
# a target that made fewer in its time (a busy machine, slow inputs) runs
# again for the missing count (-fuzztime Nx), so a short check never
# passes on a few dozen inputs. FUZZMINIMIZETIME=0 spends none of a short
# run minimizing new inputs (a failing input is still written, unminimized).
set -euo pipefail
time=$1; shift
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# fuzz FUZZTIME runs $target in $pkg and sets execs to the executions it
# reported.
fuzz() {
  # Go 1.26's fuzzing coordinator may report its own -fuzztime deadline
  # as the target's failure ("context deadline exceeded", no failing input
  # written; golang/go#75804, fixed in Go 1.27): such a run is run once
  # more. A failing input (written under testdata/fuzz/) fails at once.
  local attempt before after out
  for attempt in 1 2; do
    before=$(ls "$ROOT/$dir/testdata/fuzz/$target" 2>/dev/null | wc -l)
    out=$(mktemp)
    if (cd "$ROOT" && go test -tags pwsh -run '^$' -fuzz "^${target}\$" -fuzztime "$1" -fuzzminimizetime "${FUZZMINIMIZETIME:-5s}" "$pkg") 2>&1 | tee "$out"; [ "${PIPESTATUS[0]}" -eq 0 ]; then
      execs=$(sed -n 's/.*execs: \([0-9]*\).*/\1/p' "$out" | tail -n 1)
      execs=${execs:-0}
      rm -f "$out"
      return 0
    fi
    after=$(ls "$ROOT/$dir/testdata/fuzz/$target" 2>/dev/null | wc -l)
    if [ "$attempt" -eq 1 ] && [ "$after" -eq "$before" ] && grep -q '^    context deadline exceeded$' "$out" && ! grep -q 'Failing input written' "$out"; then
      rm -f "$out"
      echo "== $target: the fuzzing coordinator's own deadline, no failing input (golang/go#75804): once more"
      continue
    fi
    rm -f "$out"
    exit 1
  done
  exit 1
}
for target in "$@"; do
  file=$(cd "$ROOT" && grep -rl --include='*_test.go' "^func ${target}(" . | head -n 1)
  [ -n "$file" ] || { echo "no package defines $target" >&2; exit 1; }
  dir=$(dirname "${file#./}")
  pkg=./$dir
  cache="$(go env GOCACHE)/fuzz/$(cd "$ROOT" && go list "$pkg")"
  echo "== $target in $pkg ($time)"
  fuzz "$time"
  min=${FUZZ_MIN_EXECS:-0}
  if [ "$execs" -lt "$min" ]; then
    echo "== $target: $execs executions in $time, fewer than $min: $((min - execs)) more"
    have=$execs
    fuzz "$((min - execs))x"
    execs=$((have + execs))
  fi
  echo "== $target: $execs executions"
  if [ "${FUZZ_CORPUS:-keep}" = keep ] && [ -d "$cache/$target" ]; then
    mkdir -p "$ROOT/$dir/testdata/fuzz/$target"
    cp "$cache/$target"/* "$ROOT/$dir/testdata/fuzz/$target/"
    echo "corpus: $(ls "$ROOT/$dir/testdata/fuzz/$target" | wc -l) inputs in $dir/testdata/fuzz/$target"
  fi
done
