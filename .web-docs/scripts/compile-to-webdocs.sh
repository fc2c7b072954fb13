#!/usr/bin/env bash
# Regenerates .web-docs/, the layout HashiCorp's Packer integrations site
# reads, from docs/:
#
#   docs/README.md                  -> .web-docs/README.md
#   docs/builders/<slug>.mdx        -> .web-docs/components/builder/<slug>/README.md
#   docs/provisioners/<slug>.mdx    -> .web-docs/components/provisioner/<slug>/README.md
#   docs/post-processors/<slug>.mdx -> .web-docs/components/post-processor/<slug>/README.md
#   docs/datasources/<slug>.mdx     -> .web-docs/components/data-source/<slug>/README.md
#
# Every @include 'partial' is replaced first by `packer-sdc renderdocs`: the
# SDK's partials (packer-plugin-sdk/...) and ours from docs-partials/, which
# `go generate` writes from the config structs' field comments, so run this
# after `go generate ./...`. The front matter and the top heading of each
# component page are dropped: the site shows its own title. The plain
# docs/*.md pages are the repository's documentation and are not published.
# metadata.hcl and this script are the only hand-written files here.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
sdc=$(go tool -n packer-sdc)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# renderdocs logs every step to stderr; show it only when it fails (for
# instance on an @include naming a partial that does not exist).
if ! "$sdc" renderdocs -src docs -partials docs-partials -dst "$tmp/docs" 2>"$tmp/log"; then
	cat "$tmp/log" >&2
	echo "compile-to-webdocs.sh: packer-sdc renderdocs failed" >&2
	exit 1
fi

# front matter (--- ... --- on the first lines), then the first "# " heading
# and the blank lines around it.
strip_header='
	NR == 1 && $0 == "---" { front = 1; next }
	front { if ($0 == "---") front = 0; next }
	!started && /^[[:space:]]*$/ { next }
	!started && !titled && /^# / { titled = 1; next }
	{ started = 1; print }
'

rm -rf .web-docs/components
cp "$tmp/docs/README.md" .web-docs/README.md
shopt -s nullglob
for kind in builders:builder provisioners:provisioner post-processors:post-processor datasources:data-source; do
	for page in "$tmp/docs/${kind%%:*}"/*.mdx; do
		slug=$(basename "$page" .mdx)
		[ "$slug" = index ] && continue
		out=.web-docs/components/${kind#*:}/$slug
		mkdir -p "$out"
		awk "$strip_header" "$page" >"$out/README.md"
	done
done

# The site shows these pages away from the repository: a link to a page of
# docs/ (relative in the sources, so that it works in the repository)
# becomes a link to that page at this release's tag, so a reader of the
# registry reads the documentation of the version they install.
version=$(sed -n 's/^[[:space:]]*Version = "\([^"]*\)".*/\1/p' version/version.go)
[ -n "$version" ] || { echo "compile-to-webdocs.sh: no Version in version/version.go" >&2; exit 1; }
base="https://github.com/kubenode/packer-plugin-kubenode/blob/v$version/docs"
find .web-docs -name README.md -print0 | xargs -0 sed -i -E \
	-e "s#\]\(\.\./([a-z0-9-]+\.md)#](${base}/\1#g" \
	-e "s#\]\(([a-z0-9-]+\.md)#](${base}/\1#g"
