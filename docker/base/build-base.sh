#!/usr/bin/env bash
# Builds a minimal Debian bookworm base image offline (no image registry needed):
# debootstrap from the Debian mirror named in this host's apt configuration, then `docker import`.
# Images built on top of it can still `apt-get install`, because the host's apt sources are copied in.
#
# Usage: docker/base/build-base.sh [--force] [IMAGE]   (default IMAGE: ringlab/debian:bookworm)
set -euo pipefail

force=0
if [[ "${1:-}" == "--force" ]]; then force=1; shift; fi
image="${1:-ringlab/debian:bookworm}"
suite=bookworm

if [[ $force -eq 0 ]] && docker image inspect "$image" >/dev/null 2>&1; then
  echo "base image $image already exists (use --force to rebuild)"
  exit 0
fi
for tool in debootstrap docker; do
  command -v "$tool" >/dev/null || { echo "error: '$tool' is not installed (apt-get install -y $tool)" >&2; exit 1; }
done

apt_files=()
[[ -f /etc/apt/sources.list ]] && apt_files+=(/etc/apt/sources.list)
for f in /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
  [[ -f "$f" ]] && apt_files+=("$f")
done

# The first mirror that serves the bookworm suite, from either apt format (one-line or deb822).
mirror=$(awk -v suite="$suite" '
  /^deb[ \t]/ { for (i = 2; i <= NF; i++) if ($i ~ /^https?:/ && $(i+1) == suite) { print $i; exit } }
  /^URIs:/    { uris = $2 }
  /^Suites:/  { for (i = 2; i <= NF; i++) if ($i == suite && uris != "") { print uris; exit } }
  /^[ \t]*$/  { uris = "" }
' "${apt_files[@]}")
if [[ -z "$mirror" ]]; then
  echo "error: no apt source for '$suite' found in /etc/apt; debootstrap needs a Debian mirror" >&2
  exit 1
fi

workdir=$(mktemp -d)
trap 'rm -rf "$workdir"' EXIT
rootfs="$workdir/rootfs"
echo "debootstrap $suite from $mirror (takes about a minute)"
debootstrap --variant=minbase "$suite" "$rootfs" "$mirror" >"$workdir/debootstrap.log" 2>&1 || {
  tail -20 "$workdir/debootstrap.log" >&2; echo "error: debootstrap failed" >&2; exit 1; }

# Only the source files that use this mirror: other repositories may need keys the image lacks.
rm -f "$rootfs/etc/apt/sources.list"
for f in "${apt_files[@]}"; do
  if grep -qF "$mirror" "$f"; then
    cp "$f" "$rootfs/etc/apt/sources.list.d/$(basename "$f")"
  fi
done
# Keep images small: no apt caches, no docs.
rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*

tar -C "$rootfs" -c . | docker import --change 'CMD ["/bin/bash"]' - "$image" >/dev/null
echo "built $image ($(docker image inspect -f '{{.Size}}' "$image" | awk '{printf "%.0f MB", $1/1e6}'))"
