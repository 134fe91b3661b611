#!/usr/bin/env bash
# The project's formatters and linters, one per language, configured at the root (biome.json, ruff.toml):
#   npm run lint     checks: fails on a file the formatter would change, on a lint finding, on a comment over 120 columns
#   npm run format   rewrites: the formatters' output and the linters' safe fixes
# TypeScript: Biome (formatter and linter in one fast binary, from npm). Python: ruff, installed into .venv-worker/ by
# `npm run setup:test`.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"

ruff="$repo/.venv-worker/bin/ruff"
if [[ ! -x $ruff ]]; then
  echo "lint: $ruff is missing: run npm run setup:test (it installs ruff into .venv-worker/)" >&2
  exit 1
fi
biome=(node "$repo/node_modules/@biomejs/biome/bin/biome")

if [[ "${1:-}" == "--write" ]]; then
  "${biome[@]}" check --write .
  "$ruff" check --fix --quiet .
  "$ruff" format --quiet .
  exit 0
fi

"${biome[@]}" ci --error-on-warnings .
"$ruff" check --quiet .
"$ruff" format --check --quiet .
# The formatter wraps code at 120 columns but cannot wrap prose: a comment line over 120 is the author's to break.
git ls-files -z '*.ts' '*.mjs' | python3 -c '
import re, sys
comment = re.compile(r"\s*(//|/\*|\*)")
bad = 0
for name in sys.stdin.read().split("\0")[:-1]:
    for number, line in enumerate(open(name, encoding="utf-8").read().split("\n"), 1):
        if len(line) > 120 and comment.match(line):
            print(f"{name}:{number}: a comment line of {len(line)} characters (at most 120)")
            bad = 1
sys.exit(bad)
'
echo "PASS: lint (biome, ruff, comment width)"
