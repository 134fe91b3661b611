#!/bin/bash
# Starts sshd in the foreground. The controller's public key arrives in RINGLAB_AUTHORIZED_KEY;
# host keys are generated per container so that every node has its own identity, as real machines do.
set -euo pipefail
if [[ -z "${RINGLAB_AUTHORIZED_KEY:-}" ]]; then
  echo "ringlab-node: RINGLAB_AUTHORIZED_KEY is empty; nobody could log in" >&2
  exit 1
fi
install -d -m 700 /root/.ssh
printf '%s\n' "$RINGLAB_AUTHORIZED_KEY" > /root/.ssh/authorized_keys
chmod 600 /root/.ssh/authorized_keys
ssh-keygen -A >/dev/null
exec /usr/sbin/sshd -D -e -o PermitRootLogin=prohibit-password -o PasswordAuthentication=no
