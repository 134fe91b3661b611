#!/usr/bin/env bash
# Benchmark, not a test: all-reduce bus bandwidth across 2, 4 and 8 worker containers on one bridge,
# each container's egress shaped to RATE_MBIT with tc, reported as % of that rate at the largest sizes.
#
# Usage: test/bench/allreduce-probe.sh [RANKS...]          (default: 2 4 8)
# Environment (defaults): IMAGE (ringlab/worker:cpu, built if missing), RATE_MBIT (1000; 0: no shaping),
#   MIN_BYTES (16M), MAX_BYTES (256M), WARMUP_ITERS (1), ITERS (5), SUBNET (10.231.77.0/24), KEEP (empty; set to
#   keep results), PLAIN_GLOO (empty; set to 1 to also time a bare dist.all_reduce of MAX_BYTES the same way, as a
#   control), CPUS (empty; a Docker --cpus quota per container, with OMP_NUM_THREADS to match, as the local
#   testbed's cpusPerNode does: with RATE_MBIT=0 this measures what Gloo drives per unit of CPU quota)
set -euo pipefail

if [[ $# -gt 0 ]]; then ranks_list=("$@"); else ranks_list=(2 4 8); fi
image="${IMAGE:-ringlab/worker:cpu}"
rate_mbit="${RATE_MBIT:-1000}"
subnet="${SUBNET:-10.231.77.0/24}"
max_bytes="${MAX_BYTES:-256M}"
iters="${ITERS:-5}"
cpus="${CPUS:-}"
cpu_args=()
if [[ -n "$cpus" ]]; then
  cpu_args=(--cpus "$cpus" -e "OMP_NUM_THREADS=$(python3 -c "import math, sys; print(math.ceil(float(sys.argv[1])))" "$cpus")")
fi
if [[ "$rate_mbit" == 0 ]]; then shape="true"; else shape="tc qdisc add dev eth0 root tbf rate ${rate_mbit}mbit burst 256kb latency 50ms"; fi
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
tag="rlw-bench-$$"
# The rendezvous id of every run (the worker requires one; see ringlab_worker/torchrun.py).
secret="$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
network="$tag-net"
results="$(mktemp -d)"
containers=()

cleanup() {
  if [[ ${#containers[@]} -gt 0 ]]; then docker rm -f "${containers[@]}" >/dev/null 2>&1 || true; fi
  docker network rm "$network" >/dev/null 2>&1 || true
  if [[ -z "${KEEP:-}" ]]; then rm -rf "$results"; else echo "results kept in $results"; fi
}
trap cleanup EXIT

# The control: what plain Gloo gets, timed like the probe (1 warm-up, barrier, ITERS all-reduces).
plain_gloo_script="
import sys, time, torch, torch.distributed as dist
dist.init_process_group('gloo')
n, size = dist.get_world_size(), int(sys.argv[1])
tensor = torch.zeros(size // 4)
dist.all_reduce(tensor)
dist.barrier()
started = time.perf_counter()
for _ in range($iters):
    dist.all_reduce(tensor)
seconds = (time.perf_counter() - started) / $iters
if dist.get_rank() == 0:
    busbw = size * 8 / seconds / 1e9 * 2 * (n - 1) / n
    print(f'plain Gloo: {n} ranks, {size} bytes, {seconds:.3f} s, busbw {busbw:.3f} Gbit/s')
"

# run_ranks KIND RANKS: starts RANKS shaped containers running KIND (probe|plain), waits, prints rank 0's output.
run_ranks() {
  local kind=$1 ranks=$2 names=() name rank code failed=0 job
  for ((rank = 0; rank < ranks; rank++)); do
    name="$tag-$kind-n$ranks-$rank"
    names+=("$name")
    containers+=("$name")
    if [[ $kind == probe ]]; then
      job="exec ringlab-worker allreduce --min-bytes ${MIN_BYTES:-16M} --max-bytes $max_bytes \
             --warmup-iters ${WARMUP_ITERS:-1} --iters $iters --output /out/ranks-$ranks.json"
    else
      job="exec python3 -c \"\$PLAIN_GLOO_SCRIPT\" $(numfmt --from=iec "$max_bytes")"
    fi
    # The hostname equals the container name, so Docker's DNS resolves what torchrun publishes as MASTER_ADDR.
    docker run -d --name "$name" --hostname "$name" --network "$network" --cap-add NET_ADMIN \
      -v "$results:/out" "${cpu_args[@]}" \
      -e RINGLAB_NUM_NODES="$ranks" -e RINGLAB_NODE_RANK="$rank" -e RINGLAB_HEAD_ADDR="${names[0]}" \
      -e RINGLAB_RUN_ID="$tag-$ranks" -e RINGLAB_RDZV_SECRET="$secret" \
      -e MASTER_ADDR="${names[0]}" -e MASTER_PORT=29500 -e RANK="$rank" -e WORLD_SIZE="$ranks" \
      -e PLAIN_GLOO_SCRIPT="$plain_gloo_script" \
      --entrypoint bash "$image" -c \
      "$shape && $job" >/dev/null
  done
  for name in "${names[@]}"; do
    code=$(docker wait "$name")
    if [[ "$code" != 0 ]]; then
      echo "error: $name exited with $code:" >&2
      docker logs "$name" 2>&1 | tail -20 >&2
      failed=1
    fi
  done
  [[ $failed -eq 0 ]] || exit 1
  # Rank 0 (on whichever container it landed) printed the table or the control's line.
  for name in "${names[@]}"; do docker logs "$name" 2>/dev/null | grep -E '^(#|  |plain)' || true; done
  docker rm -f "${names[@]}" >/dev/null
}

if ! docker image inspect "$image" >/dev/null 2>&1; then
  echo "==> $image missing: building it"
  "$repo/docker/worker/build.sh" cpu
fi
docker network create --subnet "$subnet" "$network" >/dev/null
if [[ "$rate_mbit" == 0 ]]; then echo "==> network $network ($subnet), links not shaped"; else echo "==> network $network ($subnet), egress of every container shaped to $rate_mbit Mbit/s (tc tbf)"; fi
if [[ -n "$cpus" ]]; then echo "==> every container under a CPU quota of $cpus cores (docker --cpus)"; fi

for ranks in "${ranks_list[@]}"; do
  echo "==> $ranks containers"
  run_ranks probe "$ranks"
  if [[ -n "${PLAIN_GLOO:-}" ]]; then run_ranks plain "$ranks"; fi
done

echo
if [[ "$rate_mbit" == 0 ]]; then echo "==> busbw at the largest sizes (links not shaped)"
else echo "==> busbw at the largest sizes, as % of the shaped rate ($rate_mbit Mbit/s)"; fi
python3 - "$results" "$rate_mbit" "$cpus" "${ranks_list[@]}" <<'EOF'
import json, sys
results, rate_gbps, cpus, ranks_list = sys.argv[1], int(sys.argv[2]) / 1000, sys.argv[3], sys.argv[4:]
last = f"{'% of rate':>9}" if rate_gbps else f"{'Gbit/s per core':>15}" if cpus else ""
print(f"{'ranks':>5} {'size (MiB)':>10} {'time (s)':>9} {'busbw (Gbit/s)':>15} {'#wrong':>6} {last}")
for ranks in ranks_list:
    record = json.load(open(f"{results}/ranks-{ranks}.json"))
    for row in record["metrics"]["rows"][-3:]:
        busbw = row["busbwGbps"]
        extra = f"{100 * busbw / rate_gbps:>8.1f}%" if rate_gbps else f"{busbw / float(cpus):>15.3f}" if cpus else ""
        print(f"{ranks:>5} {row['sizeBytes'] / 2**20:>10.0f} {row['timeSeconds']:>9.3f} {busbw:>15.3f} {row['wrong']:>6} {extra}")
EOF
