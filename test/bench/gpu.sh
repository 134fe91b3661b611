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
#   MODELS (the list above), TIMEOUT_SECONDS (300 per run).
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
echo "# gpu.sh: device $device, models ${models[*]}, precisions ${precisions[*]}, batch 32..$max_batch, out $out_dir"

free_port() {
  "$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# One run through the launcher as on a one-node cluster; prints nothing, returns the worker's exit code.
run_worker() {
  local name="$1"; shift
  local port; port="$(free_port)"
  (cd "$worker_dir" && env RINGLAB_NUM_NODES=1 RINGLAB_NODE_RANK=0 RINGLAB_HEAD_ADDR=127.0.0.1 \
    RINGLAB_RDZV_PORT="$port" RINGLAB_NPROC_PER_NODE=1 RINGLAB_SOCKET_IFNAME=lo RINGLAB_RUN_ID="gpu-bench-$name" \
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
    for ((batch = 32; batch <= max_batch; batch += 32)); do
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

"$python" - "$out_dir" "$device" "$max_batch" "$probe_status" <<'PY'
"""Gathers the worker's records into results.json and results.md (written atomically: temp file, rename)."""
import csv
import json
import os
import sys
import tempfile
from datetime import datetime, timezone

out_dir, device, max_batch, probe_status = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]

# Published single-GPU training throughput, ResNet-50 v1.5 in PyTorch, images/s per GPU. Keyed by a part of
# the GPU name torch reports; fp32 on A100 is TF32 (also the default for cuDNN convolutions in torch).
DLE = ("NVIDIA DeepLearningExamples, PyTorch/Classification/ConvNets/resnet50v1.5 README, training performance "
       "(https://github.com/NVIDIA/DeepLearningExamples/tree/master/PyTorch/Classification/ConvNets/resnet50v1.5)")
PUBLISHED = {
    "V100": {"fp32": 367, "amp": 1200, "source": DLE},
    "A100": {"fp32": 938, "amp": 2470, "source": DLE + "; fp32 there is TF32"},
}


def read_record(name):
    try:
        with open(os.path.join(out_dir, "records", name + ".json"), encoding="utf-8") as record:
            return json.load(record)
    except FileNotFoundError:
        return None


with open(os.path.join(out_dir, "runs.tsv"), encoding="utf-8") as index:
    rows = list(csv.DictReader(index, delimiter="\t"))
runs, provenance = [], None
for row in rows:
    record = read_record(row["name"])
    provenance = provenance or (record or {}).get("provenance")
    rate = record["metrics"]["imagesPerSecondPerWorker"] if record else None
    runs.append({"model": row["model"], "precision": row["precision"], "batchSize": int(row["batch"]),
                 "channelsLast": bool(record and record["knobs"].get("channelsLast")), "status": row["status"],
                 "exitCode": int(row["exitCode"]), "imagesPerSecond": rate,
                 "record": f"records/{row['name']}.json" if record else None, "log": f"logs/{row['name']}.log"})

largest = []
for key in dict.fromkeys((run["model"], run["precision"]) for run in runs):
    tried = [run for run in runs if (run["model"], run["precision"]) == key]
    fitted = [run for run in tried if run["status"] == "ok"]
    best = max(fitted, key=lambda run: run["imagesPerSecond"]["mean"], default=None)
    largest.append({"model": key[0], "precision": key[1],
                    "largestBatch": fitted[-1]["batchSize"] if fitted else None,
                    # no out-of-memory seen: a larger batch may fit too
                    "stoppedBy": tried[-1]["status"] if tried[-1]["status"] != "ok" else "maxBatch",
                    "bestImagesPerSecond": best["imagesPerSecond"]["mean"] if best else None,
                    "bestBatch": best["batchSize"] if best else None})

probe = read_record("allreduce")
provenance = provenance or (probe or {}).get("provenance") or {}
gpu_name = provenance.get("deviceModel", "") if device == "cuda" else ""
published_key = next((key for key in PUBLISHED if key in gpu_name), None)
published = PUBLISHED.get(published_key)
results = {
    "schema": "ringlab.gpu-bench/v1",
    "device": device,
    "writtenAt": datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z"),
    "maxBatch": max_batch,
    "provenance": provenance,
    "runs": runs,
    "largestBatch": largest,
    "allreduce": {"status": probe_status, "record": "records/allreduce.json" if probe else None,
                  "peakAlgbwGbps": max((row["algbwGbps"] for row in probe["metrics"]["rows"]), default=None)
                  if probe else None},
    "published": {"gpu": published_key, **published} if published else None,
}


def fmt(value, digits=1):
    return "-" if value is None else f"{value:.{digits}f}"


lines = [f"# ringlab GPU benchmark: {provenance.get('deviceModel', 'unknown device')}", ""]
lines.append(" · ".join(f"{label} {provenance.get(field) or '-'}" for label, field in (
    ("torch", "torch"), ("torchvision", "torchvision"), ("CUDA", "cuda"), ("cuDNN", "cudnn"), ("NCCL", "nccl"),
    ("driver", "nvidiaDriver"), ("python", "python"))))
lines += ["", f"One process, torchrun + {'NCCL' if device == 'cuda' else 'Gloo'} as on a cluster node; synthetic "
          "data; img/s as mean ± 1.96 std over the timed iterations; amp runs use channels-last.", "",
          "| model | precision | batch | img/s | ± | status |", "|---|---|---:|---:|---:|---|"]
for run in runs:
    rate = run["imagesPerSecond"] or {}
    lines.append(f"| {run['model']} | {run['precision']} | {run['batchSize']} | {fmt(rate.get('mean'))} | "
                 f"{fmt(rate.get('ci95'))} | {run['status']} |")
lines += ["", "| model | precision | largest batch that fit | stopped by | best img/s (batch) | published img/s | "
          "measured / published |", "|---|---|---:|---|---:|---:|---:|"]
for entry in largest:
    figure = published.get(entry["precision"]) if published and entry["model"] == "resnet50" else None
    ratio = f"{entry['bestImagesPerSecond'] / figure:.0%}" if figure and entry["bestImagesPerSecond"] else "-"
    best = (f"{fmt(entry['bestImagesPerSecond'])} ({entry['bestBatch']})" if entry["bestBatch"] else "-")
    lines.append(f"| {entry['model']} | {entry['precision']} | {entry['largestBatch'] or '-'} | {entry['stoppedBy']} | "
                 f"{best} | {figure or '-'} | {ratio} |")
lines += ["", f"All-reduce probe, one rank: {probe_status}, peak algbw "
          f"{fmt(results['allreduce']['peakAlgbwGbps'], 2)} Gbit/s (busbw is 0 for one rank by definition).", ""]
if published:
    lines.append(f"Published figures for {published_key}: {published['source']}.")
elif device == "cuda":
    lines.append(f"No published PyTorch ResNet-50 figure is recorded in gpu.sh for '{gpu_name}'; known: "
                 f"{', '.join(PUBLISHED)} ({DLE}).")
else:
    lines.append("CPU run (no GPU visible): the tiny model checks the script; figures are not comparable.")


def write_atomically(name, text):
    handle, temp = tempfile.mkstemp(dir=out_dir, prefix=f".{name}.")
    with os.fdopen(handle, "w", encoding="utf-8") as stream:
        stream.write(text)
    os.chmod(temp, 0o644)
    os.replace(temp, os.path.join(out_dir, name))


write_atomically("results.json", json.dumps(results, indent=2, allow_nan=False) + "\n")
write_atomically("results.md", "\n".join(lines) + "\n")
print("\n".join(lines))
PY
echo "# written: $out_dir/results.json, $out_dir/results.md"
exit "$failed"
