# Sourced by scripts/setup.sh, scripts/k8s-binaries.sh and
# scripts/release-files.sh: the official release downloads, each checked
# against the sha256 its publisher lists beside it. Those scripts take a
# download first and build from the Go module proxy only when it cannot be
# fetched, and say which they did. The sourcing script defines log.
#
# Where the downloads come from (each a mirror of the upstream layout if set):
#   KUBENODE_RELEASE_MIRROR  one URL serving every host below under its name
#                            (URL/dl.k8s.io/release/..., URL/github.com/...)
#   KUBENODE_DL_K8S_URL      instead of https://dl.k8s.io (Kubernetes)
#   KUBENODE_GITHUB_URL      instead of https://github.com (containerd, runc,
#                            crictl, the CNI plugins, etcd)
#   KUBENODE_HASHICORP_URL   instead of https://releases.hashicorp.com (packer)
#   KUBENODE_DOWNLOADS=off   no downloads: build everything

# release_url HOST PATH prints where HOST's PATH is downloaded from.
release_url() {
  local host=$1 path=$2 base=""
  case $host in
    dl.k8s.io) base=${KUBENODE_DL_K8S_URL:-} ;;
    github.com) base=${KUBENODE_GITHUB_URL:-} ;;
    releases.hashicorp.com) base=${KUBENODE_HASHICORP_URL:-} ;;
  esac
  if [ -z "$base" ]; then
    if [ -n "${KUBENODE_RELEASE_MIRROR:-}" ]; then
      base=${KUBENODE_RELEASE_MIRROR%/}/$host
    else
      base=https://$host
    fi
  fi
  printf '%s/%s' "${base%/}" "$path"
}

# release_arch prints this machine's architecture as release file names
# spell it (amd64, arm64); fails for any other.
release_arch() {
  case $(uname -m) in
    x86_64) echo amd64 ;;
    aarch64 | arm64) echo arm64 ;;
    *) return 1 ;;
  esac
}

# published_sha256 NAME < CHECKSUM_FILE prints the sha256 a checksum file
# gives for the file NAME: a bare digest alone (dl.k8s.io's .sha256,
# crictl's), or the digest of sha256sum's line that names it.
published_sha256() {
  awk -v name="$1" '
    function hex(s) { return length(s) == 64 && s ~ /^[0-9a-fA-F]+$/ }
    NR == 1 && NF == 1 && hex($1) { bare = tolower($1) }
    NF >= 2 { f = $NF; sub(/^\*/, "", f); sub(/^\.\//, "", f); if (f == name && hex($1)) { print tolower($1); found = 1; exit } }
    END { if (!found && NR == 1 && bare != "") print bare }'
}

# download_verified URL CHECKSUM_URL DEST: DEST becomes URL's file once its
# sha256 is the one CHECKSUM_URL publishes for it. When either cannot be
# fetched (unreachable, an HTTP error, no curl, KUBENODE_DOWNLOADS=off) it
# returns 1 with the reason in download_error, for the caller to build
# instead. A file whose sha256 differs, or a checksum file that gives none
# for it, is refused: the script stops, since building instead would hide a
# tampered or broken mirror. (Its callers call it as an if's or ||'s
# condition, where set -e does not apply: every step checks itself.)
download_verified() {
  local url=$1 sums_url=$2 dest=$3 name=${1##*/} err sums want got
  download_error=""
  if [ "${KUBENODE_DOWNLOADS:-}" = off ]; then
    download_error="KUBENODE_DOWNLOADS=off"
    return 1
  fi
  if ! command -v curl >/dev/null; then
    download_error="curl is not installed"
    return 1
  fi
  err=$(mktemp) || exit 1
  if ! sums=$(curl -fsSL --connect-timeout 15 --retry 2 "$sums_url" 2>"$err"); then
    download_error="$sums_url: $(tail -n1 "$err")"
    rm -f "$err"
    return 1
  fi
  want=$(published_sha256 "$name" <<<"$sums")
  if [ -z "$want" ]; then
    rm -f "$err"
    log "refused: $sums_url gives no sha256 for $name"
    exit 1
  fi
  mkdir -p "$(dirname "$dest")" || exit 1
  if ! curl -fsSL --connect-timeout 15 --retry 2 -o "$dest.part" "$url" 2>"$err"; then
    download_error="$url: $(tail -n1 "$err")"
    rm -f "$err" "$dest.part"
    return 1
  fi
  rm -f "$err"
  got=$(sha256sum "$dest.part" | cut -d' ' -f1) || exit 1
  if [ "$got" != "$want" ]; then
    rm -f "$dest.part"
    log "refused: $url has sha256 $got, but $sums_url publishes $want"
    exit 1
  fi
  mv "$dest.part" "$dest" || exit 1
  log "downloaded $url (sha256 $got, as $sums_url publishes)"
}
