#!/usr/bin/env bash
# Static checks of ringlab's Ansible: ansible-lint (production profile, offline), yamllint, a syntax check
# of every playbook against an inventory in the CLI's format. (test/static.sh shellchecks every script.)
# Usage: test/ansible/static.sh
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export ANSIBLE_CONFIG="$repo/ansible/ansible.cfg" ANSIBLE_NOCOLOR=1
work=$(mktemp -d /tmp/rla-static.XXXXXX)
trap 'rm -rf "$work"' EXIT
failed=()

check() {
  local name=$1; shift
  printf '%-36s' "$name"
  if "$@" >"$work/out" 2>&1; then echo ok; else echo FAILED; cat "$work/out"; failed+=("$name"); fi
}

cat >"$work/inventory.yml" <<'EOF_INVENTORY'
all:
  vars:
    ringlab_testbed: static
    ringlab_target: aws
    ringlab_shared_storage: nfs
    ringlab_shared_dir: /srv/ringlab
    ringlab_efs_endpoint: ""
    ringlab_cluster_cidr: 10.77.0.0/24
    ringlab_worker_image: ringlab/worker:cpu
    ansible_user: ubuntu
    ansible_ssh_private_key_file: /nonexistent/id_ed25519
  children:
    head:
      hosts:
        static-node-0: {ansible_host: 192.0.2.10, ringlab_private_ip: 10.77.0.10, ringlab_node_rank: 0, ringlab_instance_type: g4dn.xlarge}
    workers:
      hosts:
        static-node-1: {ansible_host: 192.0.2.11, ringlab_private_ip: 10.77.0.11, ringlab_node_rank: 1, ringlab_instance_type: g4dn.xlarge}
EOF_INVENTORY

cd "$repo/ansible"
check "ansible-lint (production, offline)" ansible-lint --offline
check "yamllint" yamllint -s .
for playbook in site.yml shape.yml run.yml stop-workers.yml slurm-status.yml dataset.yml; do
  check "syntax-check $playbook" ansible-playbook --syntax-check -i "$work/inventory.yml" "$playbook"
done

if [[ ${#failed[@]} -gt 0 ]]; then
  echo "FAIL: ${failed[*]}" >&2
  exit 1
fi
echo "PASS: test/ansible/static.sh"
