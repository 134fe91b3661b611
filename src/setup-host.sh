#!/usr/bin/env bash
# Installs what ringlab's local target needs on a Debian or Ubuntu machine and starts the Docker engine.
#   npm run setup        Docker engine, Ansible, debootstrap, OpenSSH client
#   npm run setup:test   the same plus the test tools (pytest, Debian's PyTorch, ansible-lint, yamllint, shellcheck)
#                        and .venv-torch-current/ (a current PyTorch for the worker's tests; see below)
# Safe to rerun. Needs root (re-runs itself with sudo when it is not).
set -euo pipefail

runtime_packages=(docker.io ansible debootstrap openssh-client iproute2 python3 ca-certificates)
test_packages=(ansible-lint yamllint shellcheck python3-pytest python3-torch python3-torchvision python3-jsonschema
               python3-pil python3-venv)

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
fi
