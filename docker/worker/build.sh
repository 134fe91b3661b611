#!/usr/bin/env bash
# Builds the worker image. Usage: docker/worker/build.sh [cpu|gpu]   (default: cpu)
#   cpu -> ringlab/worker:cpu on ringlab/debian:bookworm (built first by docker/base/build-base.sh if missing), with
#          the Python wheels that wheels.sh puts in docker/worker/wheels/ (where from: see wheels.sh)
#   gpu -> ringlab/worker:gpu on nvcr.io/nvidia/pytorch (needs that registry; extra args: INSTALL_HOROVOD=1 etc.
#          via the environment variable GPU_BUILD_ARGS, e.g. GPU_BUILD_ARGS="--build-arg INSTALL_HOROVOD=1").
#          The base is pinned by digest: GPU_BASE_DIGEST=sha256:... is required (README.md, "Pinning the gpu
#          base image"; with GPU_BUILD_ARGS="--build-arg NGC_PYTORCH_TAG=..." the digest must be that tag's). The
#          default tag is 26.02; its torch must be 2.10 or newer (the build checks).
# Prints progress and the image size; exits non-zero if any step fails.
set -euo pipefail

target="${1:-cpu}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
base_image="${RINGLAB_BASE_IMAGE:-ringlab/debian:bookworm}"
image="ringlab/worker:$target"

command -v docker >/dev/null || { echo "error: docker is not installed" >&2; exit 1; }
docker info >/dev/null 2>&1 || { echo "error: no Docker engine answers (start dockerd)" >&2; exit 1; }

build_args=(--build-arg "IMAGE_NAME=$image" -t "$image")
case "$target" in
  cpu)
    echo "==> base image $base_image"
    "$repo/docker/base/build-base.sh" "$base_image"
    echo "==> Python wheels (docker/worker/wheels/)"
    "$here/wheels.sh" "$here/wheels"
    build_args+=(--target cpu --build-arg "BASE_IMAGE=$base_image")
    ;;
  gpu)
    if [[ ! "${GPU_BASE_DIGEST:-}" =~ ^sha256:[0-9a-f]{64}$ ]]; then
      echo "error: set GPU_BASE_DIGEST=sha256:<64 hex digits>, the digest of the gpu base image" >&2
      echo "       (docker buildx imagetools inspect nvcr.io/nvidia/pytorch:26.02-py3; see docker/worker/README.md)" >&2
      exit 2
    fi
    build_args+=(-f "$here/Dockerfile.gpu" --build-arg "GPU_BASE_DIGEST=$GPU_BASE_DIGEST")
    # shellcheck disable=SC2206  # word splitting of the extra arguments is intended
    build_args+=(${GPU_BUILD_ARGS:-})
    ;;
  *) echo "usage: $0 [cpu|gpu]" >&2; exit 2 ;;
esac

echo "==> building $image (the first cpu build installs PyTorch from the wheels: about a minute)"
started=$SECONDS
docker build "${build_args[@]}" "$here"
size=$(docker image inspect -f '{{.Size}}' "$image")
echo "==> built $image in $((SECONDS - started)) s, size $(awk -v b="$size" 'BEGIN { printf "%.0f MB", b / 1e6 }')"
