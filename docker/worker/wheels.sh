#!/usr/bin/env bash
# Downloads the worker's Python wheels (requirements.txt beside this file, with torch's dependencies) for CPython 3.11
# on Linux of this machine's architecture into DIR, so that the cpu image and the tests' virtual environment install
# the same files offline (pip install --no-index --find-links DIR). Files already in DIR are not fetched again.
#
# Usage: docker/worker/wheels.sh DIR
# Where the wheels come from: RINGLAB_PIP_SOURCES, pip options (e.g. "--index-url URL --find-links FOLDER"), if set;
# otherwise the local wheel folder and indexes a build machine holds (/opt/wheels, /opt/pypi, /opt/pypi-more), where
# present; otherwise the PyTorch CPU index for torch and PyPI for the rest.
set -euo pipefail

dest="${1:?usage: $0 DIR}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

case "$(uname -m)" in
  x86_64) arch=x86_64 ;;
  aarch64 | arm64) arch=aarch64 ;;
  *) echo "error: no PyTorch CPU wheels for $(uname -m); the worker needs x86_64 or aarch64" >&2; exit 1 ;;
esac

if [[ -n "${RINGLAB_PIP_SOURCES:-}" ]]; then
  # shellcheck disable=SC2206  # word splitting of the user's pip options is intended
  sources=(${RINGLAB_PIP_SOURCES})
elif [[ -d /opt/wheels || -d /opt/pypi/simple ]]; then
  sources=()
  if [[ -d /opt/pypi/simple ]]; then sources+=(--index-url file:///opt/pypi/simple); fi
  if [[ -d /opt/pypi-more/simple ]]; then sources+=(--extra-index-url file:///opt/pypi-more/simple); fi
  if [[ -d /opt/wheels ]]; then sources+=(--find-links /opt/wheels); fi
else
  sources=(--index-url https://download.pytorch.org/whl/cpu --extra-index-url https://pypi.org/simple)
fi

pip=(python3 -m pip)
"${pip[@]}" --version >/dev/null 2>&1 || { echo "error: python3 -m pip is not available (apt-get install python3-pip)" >&2; exit 1; }

mkdir -p "$dest"
"${pip[@]}" download --quiet --disable-pip-version-check --only-binary=:all: \
  --python-version 3.11 --implementation cp --abi cp311 \
  --platform "manylinux_2_28_$arch" --platform "manylinux_2_17_$arch" --platform "manylinux2014_$arch" \
  "${sources[@]}" --dest "$dest" --requirement "$here/requirements.txt" 2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)
echo "wheels: $(find "$dest" -name '*.whl' | wc -l) files in $dest ($(du -sh "$dest" | cut -f1))"
