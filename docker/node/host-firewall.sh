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
# Each command changes the rules in one iptables-restore transaction (--noflush: the rest of the table stays): rules
# are deleted by their spec, never by a line number read earlier (another testbed's `up` may insert a jump between),
# and a reused chain is replaced with its REJECT in the same commit, never flushed in place (every user would pass
# while it is empty).
set -euo pipefail

# OUTPUT's jumps to the chain as `iptables -S` writes them ("-A OUTPUT ... -j CHAIN"), quoting as iptables-restore reads.
jumps() { iptables -w 10 -S OUTPUT | awk -v chain="$1" '$NF == chain && $(NF - 1) == "-j"' || true; }

has_chain() { iptables -w 10 -S "$1" >/dev/null 2>&1; }

# Deletes the lines of `jumps` by their spec: "-A OUTPUT ..." becomes "-D OUTPUT ...".
deletions() { sed 's/^-A OUTPUT /-D OUTPUT /'; }

unguard() {
  local chain=$1 old
  old=$(jumps "$chain")
  if [[ -z "$old" ]] && ! has_chain "$chain"; then return 0; fi
  {
    echo "*filter"
    if [[ -n "$old" ]]; then deletions <<<"$old"; fi
    if has_chain "$chain"; then
      echo "-F $chain"
      echo "-X $chain"
    fi
    echo "COMMIT"
  } | iptables-restore -w 10 --noflush
}

guard() {
  local chain=$1 subnet=$2 comment=$3 uid=$4 gid=${5:-} old
  # What goes into the rules file: ringlab checked them already; a wrong one must not become another rule.
  [[ $chain =~ ^RINGLAB-[0-9a-f]{12}$ && $subnet =~ ^[0-9./]+$ && $comment =~ ^[A-Za-z0-9\ ._-]+$ ]] ||
    { echo "$0: bad CHAIN, SUBNET or COMMENT" >&2; exit 2; }
  [[ $uid =~ ^[0-9]+$ && $gid =~ ^[0-9]*$ ]] || { echo "$0: UID and GID must be numbers" >&2; exit 2; }
  old=$(jumps "$chain")
  {
    echo "*filter"
    # Declared, an existing chain is emptied and refilled within this commit: never seen without its REJECT.
    echo ":$chain - [0:0]"
    echo "-A $chain -m conntrack --ctstate ESTABLISHED,RELATED -j RETURN"
    echo "-A $chain -m owner ! --socket-exists -j RETURN"
    echo "-A $chain -m owner --uid-owner 0 -j RETURN"
    echo "-A $chain -m owner --uid-owner $uid -j RETURN"
    if [[ -n "$gid" ]]; then echo "-A $chain -m owner --gid-owner $gid --suppl-groups -j RETURN"; fi
    echo "-A $chain -j REJECT"
    # The older jumps go and the new one comes in the same commit: the subnet is never left without one.
    if [[ -n "$old" ]]; then deletions <<<"$old"; fi
    echo "-I OUTPUT 1 -d $subnet -m comment --comment \"$comment\" -j $chain"
    echo "COMMIT"
  } | iptables-restore -w 10 --noflush
}

case "${1:-}" in
  guard) [[ $# -ge 5 && $# -le 6 ]] || { echo "usage: $0 guard CHAIN SUBNET COMMENT UID [GID]" >&2; exit 2; }; shift; guard "$@" ;;
  unguard) [[ $# -eq 2 ]] || { echo "usage: $0 unguard CHAIN" >&2; exit 2; }; unguard "$2" ;;
  *) echo "usage: $0 guard CHAIN SUBNET COMMENT UID [GID] | unguard CHAIN" >&2; exit 2 ;;
esac
