#!/usr/bin/env bash
# GPU benchmark in one command, without Docker: the worker package run directly on a machine with an NVIDIA
# GPU and PyTorch (torchvision for the models). One process per run, started the way a cluster node starts
# it (RINGLAB_NUM_NODES=1: torchrun, c10d rendezvous, NCCL), so it measures the code path ringlab deploys.
#
#   GPU: resnet50, resnet101, inception_v3; fp32 and amp (amp with --channels-last); batch 32, 64, 96, ...
#        per model and precision, up in steps of 32 until the first out-of-memory or MAX_BATCH; then the
#        all-reduce probe with one rank.
#   CPU (no GPU visible): the same steps with the tiny model, fp32 only, tiny sizes; CI runs this.
#
# Usage: test/bench/gpu.sh [OUT_DIR]
#   OUT_DIR defaults to $OUT when set, else ./gpu-bench-out. Written there: results.json (every run and the
#   largest batch that fit, with the provenance), results.md (the table beside published figures),
#   records/*.json (the worker's result records), logs/*.log (each run's output).
# Environment (defaults): PYTHON (python3), MAX_BATCH (256 on GPU, 64 on CPU), DEVICE (auto; cpu forces the
#   CPU steps), WARMUP_BATCHES / BATCHES_PER_ITER / ITERS (10/10/5 on GPU, 1/2/2 on CPU),
#   MODELS (the list above), BATCHES (32 64 96 ... MAX_BATCH: the batch sizes tried, in order, per model and
#   precision; the first that does not fit ends the list), TIMEOUT_SECONDS (300 per run).
# Exit status: 0 when every run finished or stopped at out-of-memory, 1 when a run failed otherwise.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
worker_dir="$repo/docker/worker"
python="${PYTHON:-python3}"
out_dir="${1:-${OUT:-./gpu-bench-out}}"
mkdir -p "$out_dir/records" "$out_dir/logs"
out_dir="$(cd "$out_dir" && pwd)"
timeout_seconds="${TIMEOUT_SECONDS:-300}"

device="${DEVICE:-auto}"
if [[ "$device" == auto ]]; then
  device="$("$python" -c 'import torch; print("cuda" if torch.cuda.is_available() else "cpu")')"
fi
if [[ "$device" == cuda ]]; then
  read -r -a models <<<"${MODELS:-resnet50 resnet101 inception_v3}"
  precisions=(fp32 amp)
  max_batch="${MAX_BATCH:-256}"
  train_sizes=(--num-warmup-batches "${WARMUP_BATCHES:-10}" --num-batches-per-iter "${BATCHES_PER_ITER:-10}"
               --num-iters "${ITERS:-5}")
  probe_sizes=(--min-bytes 1M --max-bytes 1G --step-factor 4 --warmup-iters 5 --iters 20)
else
  read -r -a models <<<"${MODELS:-tiny}"
  precisions=(fp32)  # amp needs a GPU
  max_batch="${MAX_BATCH:-64}"  # each run starts torch twice (launcher, worker): keep CI under a minute
  train_sizes=(--num-warmup-batches "${WARMUP_BATCHES:-1}" --num-batches-per-iter "${BATCHES_PER_ITER:-2}"
               --num-iters "${ITERS:-2}" --image-size 32)
  probe_sizes=(--min-bytes 4K --max-bytes 1M --step-factor 4 --warmup-iters 1 --iters 2)
fi
read -r -a batches <<<"${BATCHES:-$(seq -s ' ' 32 32 "$max_batch")}"
for batch in "${batches[@]}"; do
  [[ "$batch" =~ ^[1-9][0-9]{0,4}$ ]] || { echo "gpu.sh: BATCHES holds '$batch', not a batch size" >&2; exit 2; }
done
max_batch="$(printf '%s\n' "${batches[@]}" | sort -n | tail -1)"  # the largest tried, for results.json
echo "# gpu.sh: device $device, models ${models[*]}, precisions ${precisions[*]}, batches ${batches[*]}, out $out_dir"

free_port() {
  "$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# One run through the launcher as on a one-node cluster; prints nothing, returns the worker's exit code.
run_worker() {
  local name="$1"; shift
  local port; port="$(free_port)"
  (cd "$worker_dir" && env RINGLAB_NUM_NODES=1 RINGLAB_NODE_RANK=0 RINGLAB_HEAD_ADDR=127.0.0.1 \
    RINGLAB_RDZV_PORT="$port" RINGLAB_NPROC_PER_NODE=1 RINGLAB_SOCKET_IFNAME=lo RINGLAB_RUN_ID="gpu-bench-$name" \
    RINGLAB_RDZV_SECRET="$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')" \
    "$python" -m ringlab_worker "$@" --device "$device" --timeout-seconds "$timeout_seconds" \
    --output "$out_dir/records/$name.json") >"$out_dir/logs/$name.log" 2>&1
}

# torch reports running out of GPU memory as an exception (exit 1): its text is all there is to go by.
is_out_of_memory() {
  grep -q -e 'CUDA out of memory' -e 'OutOfMemoryError' -e 'CUDNN_STATUS_NOT_ENOUGH_MEMORY' \
    -e 'CUBLAS_STATUS_ALLOC_FAILED' "$1"
}

index="$out_dir/runs.tsv"  # name, model, precision, batch, status, exit code: read by the report below
printf 'name\tmodel\tprecision\tbatch\tstatus\texitCode\n' >"$index"
failed=0
for model in "${models[@]}"; do
  for precision in "${precisions[@]}"; do
    extra=()
    if [[ "$precision" == amp ]]; then extra=(--channels-last); fi
    for batch in "${batches[@]}"; do
      name="$model-$precision-$batch"
      code=0
      run_worker "$name" train --model "$model" --precision "$precision" --batch-size "$batch" \
        "${train_sizes[@]}" "${extra[@]}" || code=$?
      if [[ $code -eq 0 ]]; then status=ok
      elif is_out_of_memory "$out_dir/logs/$name.log"; then status=oom
      else status=failed; failed=1
      fi
      printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$model" "$precision" "$batch" "$status" "$code" >>"$index"
      echo "$name: $status$( [[ $status == ok ]] || echo " (exit $code, see logs/$name.log)")"
      [[ $status == ok ]] || break  # the first batch that does not fit ends this model and precision
    done
  done
done

code=0
run_worker allreduce allreduce "${probe_sizes[@]}" || code=$?
probe_status=$([[ $code -eq 0 ]] && echo ok || echo failed)
[[ $code -eq 0 ]] || failed=1
echo "allreduce: $probe_status$( [[ $code -eq 0 ]] || echo " (exit $code, see logs/allreduce.log)")"

"$python" "$repo/test/bench/gpu-report.py" "$out_dir" "$device" "$max_batch" "$probe_status"
echo "# written: $out_dir/results.json, $out_dir/results.md"
exit "$failed"
