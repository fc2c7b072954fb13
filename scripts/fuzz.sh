#!/usr/bin/env bash
# Runs each fuzz target of ./autounattend for a while and copies the corpus
# it found into testdata/fuzz/<target>/, where `go test` replays it.
#   scripts/fuzz.sh 30s FuzzRenderWindows FuzzDiscNames ...
set -euo pipefail
time=$1; shift
pkg=./autounattend
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache="$(go env GOCACHE)/fuzz/$(cd "$ROOT" && go list "$pkg")"
for target in "$@"; do
  echo "== $target ($time)"
  (cd "$ROOT" && go test -tags pwsh -run '^$' -fuzz "^${target}\$" -fuzztime "$time" "$pkg")
  if [ -d "$cache/$target" ]; then
    mkdir -p "$ROOT/autounattend/testdata/fuzz/$target"
    cp "$cache/$target"/* "$ROOT/autounattend/testdata/fuzz/$target/"
    echo "corpus: $(ls "$ROOT/autounattend/testdata/fuzz/$target" | wc -l) inputs in autounattend/testdata/fuzz/$target"
  fi
done
