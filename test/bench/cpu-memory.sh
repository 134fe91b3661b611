#!/usr/bin/env bash
# The CPU worker's memory, measured on loopback (issue #52): what the memory model's assumed CPU constants are fitted
# from, and the allocator's part in an FSDP rank's resident peak. Each run is the real worker under torchrun (Gloo,
# OMP_NUM_THREADS=1) on this machine's loopback, its record written to OUT:
#   - single workers of gpt-mini (DDP; 2 and 4 layers, batch 2 and 4) under tcmalloc, as the CPU image runs them:
#     src/predict/memory.ts's ASSUMED_MEMORY.cpu is their least-squares fit (test/bench/cpu-memory.test.ts);
#   - 3 ranks on one "node" as ddp, fsdp full and fsdp grad-op, under glibc's malloc and under tcmalloc.
# About 8 minutes on 2 cores; nothing else should run. Usage: test/bench/cpu-memory.sh OUT
#   test/bench/cpu-memory.sh test/bench/data/cpu-memory
set -euo pipefail
out=${1:?usage: test/bench/cpu-memory.sh OUT}
cd "$(dirname "$0")/../.."
python=.venv-worker/bin/python
tcmalloc=""
for candidate in /usr/lib/*-linux-gnu/libtcmalloc_minimal.so.4; do [ -e "$candidate" ] && tcmalloc=$candidate && break; done
[ -x "$python" ] || { echo "cpu-memory: .venv-worker is missing: run npm run setup:test" >&2; exit 1; }
[ -n "$tcmalloc" ] || { echo "cpu-memory: libtcmalloc_minimal.so.4 is missing: apt-get install libtcmalloc-minimal4" >&2; exit 1; }
mkdir -p "$out"

# run NAME ALLOCATOR PROCESSES ARGS...: one worker run, its record at OUT/NAME.json.
run() {
  local name=$1 allocator=$2 processes=$3; shift 3
  local preload=""
  [ "$allocator" = tcmalloc ] && preload=$tcmalloc
  echo "cpu-memory: $name ($allocator, $processes rank(s))" >&2
  env -i PATH="$PATH" HOME="$HOME" PYTHONPATH="$PWD/docker/worker" OMP_NUM_THREADS=1 LD_PRELOAD="$preload" \
    RINGLAB_NUM_NODES=1 RINGLAB_NODE_RANK=0 RINGLAB_HEAD_ADDR=127.0.0.1 RINGLAB_RDZV_PORT=$((29500 + RANDOM % 1000)) \
    RINGLAB_RUN_ID="mem-$name" RINGLAB_RDZV_SECRET=0123456789abcdef0123456789abcdef RINGLAB_SOCKET_IFNAME=lo \
    RINGLAB_NPROC_PER_NODE="$processes" \
    "$python" -m ringlab_worker train --model gpt-mini --width 512 --heads 8 --sequence-length 64 --optimizer adamw \
      --learning-rate 0.001 --num-warmup-batches 2 --num-batches-per-iter 3 --num-iters 3 --cpu-check-seconds 0 \
      --timeout-seconds 300 "$@" --output "$out/$name.json" > "$out/$name.log" 2>&1 \
    || { echo "cpu-memory: $name failed (its log: $out/$name.log)" >&2; exit 1; }
}

for layers in 2 4; do
  for batch in 2 4; do
    run "single-l$layers-b$batch" tcmalloc 1 --layers "$layers" --batch-size "$batch" --parallelism ddp
  done
done
for allocator in glibc tcmalloc; do
  run "ddp-$allocator" "$allocator" 3 --layers 4 --batch-size 4 --parallelism ddp
  run "fsdp-full-$allocator" "$allocator" 3 --layers 4 --batch-size 4 --parallelism fsdp --fsdp-sharding full
  run "fsdp-grad-op-$allocator" "$allocator" 3 --layers 4 --batch-size 4 --parallelism fsdp --fsdp-sharding grad-op
done
rm -f "$out"/*.log
echo "cpu-memory: records in $out" >&2
