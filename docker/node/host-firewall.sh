#!/bin/bash
# Keeps a local testbed's subnet out of reach of the host's other users. ringlab runs it in a throw-away container
# of the node image on the host's network namespace (docker run --rm --network host --cap-add NET_ADMIN ...), so
# that whoever may use the Docker engine can set it up without sudo:
#
#   ringlab-host-firewall guard CHAIN SUBNET COMMENT UID [GID]
#   ringlab-host-firewall unguard CHAIN
#
# guard: connections from this machine to SUBNET are let through for root, for UID (the user running ringlab) and
# for members of GID (the Docker socket's group: they own the machine anyway), replies and packets no process sent
# (ICMP errors, resets); any other user's connection is rejected. The rules sit in a chain of their own, CHAIN,
# jumped to from OUTPUT by one rule carrying COMMENT. Traffic between containers (FORWARD) is untouched.
# unguard: removes the jump and the chain; nothing to remove is not an error.
set -euo pipefail

ipt() { iptables -w 10 "$@"; }

# Line numbers of OUTPUT's jumps to the chain, highest first (deleting by number keeps the lower numbers valid).
jumps() { ipt -L OUTPUT -n --line-numbers | awk -v chain="$1" '$2 == chain { print $1 }' | sort -rn; }

unguard() {
  local chain=$1 line
  for line in $(jumps "$chain"); do ipt -D OUTPUT "$line"; done
  if ipt -L "$chain" -n >/dev/null 2>&1; then
    ipt -F "$chain"
    ipt -X "$chain"
  fi
}

guard() {
  local chain=$1 subnet=$2 comment=$3 uid=$4 gid=${5:-} line
  ipt -L "$chain" -n >/dev/null 2>&1 || ipt -N "$chain"
  ipt -F "$chain"
  ipt -A "$chain" -m conntrack --ctstate ESTABLISHED,RELATED -j RETURN
  ipt -A "$chain" -m owner ! --socket-exists -j RETURN
  ipt -A "$chain" -m owner --uid-owner 0 -j RETURN
  ipt -A "$chain" -m owner --uid-owner "$uid" -j RETURN
  if [[ -n "$gid" ]]; then ipt -A "$chain" -m owner --gid-owner "$gid" --suppl-groups -j RETURN; fi
  ipt -A "$chain" -j REJECT
  # The new jump goes in first, then the older ones go: the subnet is never left without one.
  ipt -I OUTPUT 1 -d "$subnet" -m comment --comment "$comment" -j "$chain"
  for line in $(jumps "$chain" | grep -vx 1); do ipt -D OUTPUT "$line"; done
}

case "${1:-}" in
  guard) [[ $# -ge 5 && $# -le 6 ]] || { echo "usage: $0 guard CHAIN SUBNET COMMENT UID [GID]" >&2; exit 2; }; shift; guard "$@" ;;
  unguard) [[ $# -eq 2 ]] || { echo "usage: $0 unguard CHAIN" >&2; exit 2; }; unguard "$2" ;;
  *) echo "usage: $0 guard CHAIN SUBNET COMMENT UID [GID] | unguard CHAIN" >&2; exit 2 ;;
esac
