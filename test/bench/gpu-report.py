#!/usr/bin/env python3
"""test/bench/gpu.sh's report: gathers the worker's records into results.json and results.md (written atomically:
temp file, rename).

Usage: gpu-report.py OUT_DIR DEVICE MAX_BATCH PROBE_STATUS
  OUT_DIR holds runs.tsv (name, model, precision, batch, status, exit code), records/<name>.json and
  records/allreduce.json as gpu.sh writes them; two sweeps' folders merge by concatenating their runs.tsv (one
  header) and copying their records and logs into one folder, then running this on it."""
import csv
import json
import os
import sys
import tempfile
from datetime import datetime, timezone

out_dir, device, max_batch, probe_status = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]

# Published single-GPU training throughput, ResNet-50 v1.5 in PyTorch, images/s per GPU. Keyed by a part of
# the GPU name torch reports; fp32 on A100 and H100 is TF32 (also the default for cuDNN convolutions in torch).
# The same figures, with their cells, are in src/catalogue/published-throughput.ts.
DLE = ("NVIDIA DeepLearningExamples, PyTorch/Classification/ConvNets/resnet50v1.5 README, training performance "
       "(https://github.com/NVIDIA/DeepLearningExamples/tree/master/PyTorch/Classification/ConvNets/resnet50v1.5)")
LAMBDA = ("Lambda's PyTorch benchmark, 'LambdaCloud 1x H100 80GB SXM5', resnet50 column of "
          "pytorch/csv_v1_v2/pytorch-train-throughput-fp32.csv and -fp16.csv (NVIDIA's ResNet-50 v1.5 code, synthetic "
          "data, batch 640 fp32 / 1280 fp16; https://github.com/lambdal/deeplearning-benchmark)")
H100 = {"fp32": 1895, "amp": 2791, "source": LAMBDA}
PUBLISHED = {
    "V100": {"fp32": 367, "amp": 1200, "source": DLE},
    "A100": {"fp32": 938, "amp": 2470, "source": DLE + "; fp32 there is TF32"},
    "H100": H100,
    # No PyTorch ResNet-50 training figure is published for the H200 (DeepLearningExamples stops at the A100,
    # Lambda's tables at the H100 and GH200): the nearest is the H100, the same GH100 chip with 80 GB of HBM3 at
    # 3.35 TB/s against the H200's 141 GB of HBM3e at 4.8 TB/s.
    "H200": {**H100, "card": "H100 80GB SXM5", "source": LAMBDA + "; the H100's figure: none is published for the H200"},
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
lines += ["", f"All-reduce probe, one rank: {probe_status}. It checks the collective's path and its sums; one rank "
          f"sends nothing, so its peak algbw ({fmt(results['allreduce']['peakAlgbwGbps'], 2)} Gbit/s) is no link's "
          "rate and busbw is 0 by definition.", ""]
if published:
    lines.append(f"Published figures for {published.get('card', published_key)}: {published['source']}.")
elif device == "cuda":
    lines.append(f"No published PyTorch ResNet-50 figure is recorded in gpu-report.py for '{gpu_name}'; known: "
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
