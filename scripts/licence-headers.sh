#!/bin/sh
# licence-headers.sh: give every hand-written Go file of the repository the
# licence header CONTRIBUTING.md asks for (generated files keep theirs:
# their generator writes them again). Run again, it changes nothing.
set -eu
cd "$(dirname "$0")/.."
header='// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0
'
git ls-files -co --exclude-standard '*.go' | while read -r f; do
  [ -f "$f" ] || continue
  if grep -q '^// Code generated .* DO NOT EDIT\.$' "$f"; then continue; fi
  if head -n 2 "$f" | grep -q '^// SPDX-License-Identifier: Apache-2.0$'; then continue; fi
  tmp=$(mktemp)
  { printf '%s\n' "$header"; cat "$f"; } > "$tmp"
  cat "$tmp" > "$f"; rm -f "$tmp"
  echo "header added: $f"
done
