#!/usr/bin/env bash
# The worker image's cost to a newcomer, for issue #48 (test/bench/README.md, "The worker on current PyTorch"):
#   1. building ringlab/worker:cpu from an empty build cache (the base image present, as after a first campaign's
#      debootstrap), wheels fetched first where this checkout builds from wheels;
#   2. a rank's start under the local testbed's 0.5-core CFS quota (10 ms periods): `import torch` in the image,
#      then the worker's own imports up to its first line, each the median of 5 runs.
# Usage: test/bench/worker-image.sh [IMAGE_TAG]   (default ringlab/worker:bench; the image is left for inspection)
# Run it on an idle machine: it measures wall-clock time.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
tag="${1:-ringlab/worker:bench}"
context="$repo/docker/worker"

docker image inspect ringlab/debian:bookworm >/dev/null 2>&1 || "$repo/docker/base/build-base.sh"
docker builder prune -af >/dev/null
started=$SECONDS
if [[ -x "$context/wheels.sh" ]]; then "$context/wheels.sh" "$context/wheels" >/dev/null; fi
wheels=$((SECONDS - started))
docker build -q --no-cache --target cpu --build-arg BASE_IMAGE=ringlab/debian:bookworm -t "$tag" "$context" >/dev/null
echo "build: $((SECONDS - started)) s (of which wheels $wheels s), $(docker image inspect -f '{{.Size}}' "$tag" | awk '{ printf "%.0f MB", $1 / 1e6 }')"

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
timed() {  # seconds one `python3 -c CODE` takes in the image under the quota, median of 5
  for _ in 1 2 3 4 5; do
    docker run --rm --cpu-period 10000 --cpu-quota 5000 -e OMP_NUM_THREADS=1 --entrypoint python3 "$tag" -c \
      "import time; t = time.perf_counter(); $1; print(f'{time.perf_counter() - t:.2f}')"
  done | median
}
echo "import torch under 0.5 cores: $(timed 'import torch') s"
echo "worker imports under 0.5 cores (torch, torch.distributed.run, ringlab_worker.jobs): $(timed 'import torch, torch.distributed.run, ringlab_worker.jobs') s"
