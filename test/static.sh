#!/usr/bin/env bash
# Static checks that need no testbed: Ansible lint/syntax (test/ansible/static.sh) and shellcheck of every
# shell script in the project.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"

bash test/ansible/static.sh
mapfile -t scripts < <(git ls-files '*.sh' docker/worker/ringlab-worker .ci/run)
echo "shellcheck: ${#scripts[@]} scripts"
shellcheck "${scripts[@]}"
echo "PASS: test/static.sh"
