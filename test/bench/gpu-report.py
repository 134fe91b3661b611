#!/usr/bin/env python3
"""test/bench/gpu.sh's report: gathers the worker's records into results.json and results.md (written atomically:
temp file, rename), the measured ResNet-50 beside the published figures for the same GPU.

Usage: gpu-report.py OUT_DIR DEVICE MAX_BATCH PROBE_STATUS
       gpu-report.py --render DIR
  OUT_DIR holds runs.tsv (name, model, precision, batch, status, exit code), records/<name>.json and
  records/allreduce.json as gpu.sh writes them; two sweeps' folders merge by concatenating their runs.tsv (one
  header) and copying their records and logs into one folder, then running this on it.
  --render writes DIR's results.json and results.md again from its results.json alone (no records needed): the
  measurements as they were, the comparison with the published figures taken afresh from the table.

The published figures are src/catalogue/published-throughput.ts's, read from test/bench/gpu/published-throughput.json
(generated from it; test/bench/gpu-published.test.ts fails when the two differ). A GPU is known by the whole name
torch gives it, through the table's deviceNames: a card of another name (a GH200, an H100 PCIe) is compared with
nothing rather than with a near name."""

import csv
import json
import os
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

SCHEMA = "ringlab.gpu-bench/v2"  # v2: published is the device's match and its comparisons, each with its row
PUBLISHED_JSON = Path(__file__).resolve().parent / "gpu" / "published-throughput.json"


def read_record(out_dir, name):
    try:
        with open(os.path.join(out_dir, "records", name + ".json"), encoding="utf-8") as record:
            return json.load(record)
    except FileNotFoundError:
        return None


def gather(out_dir, device, max_batch, probe_status):
    """results.json's measurements from gpu.sh's runs.tsv and the worker's records."""
    with open(os.path.join(out_dir, "runs.tsv"), encoding="utf-8") as index:
        rows = list(csv.DictReader(index, delimiter="\t"))
    runs, provenance = [], None
    for row in rows:
        record = read_record(out_dir, row["name"])
        provenance = provenance or (record or {}).get("provenance")
        rate = record["metrics"]["imagesPerSecondPerWorker"] if record else None
        runs.append(
            {
                "model": row["model"],
                "precision": row["precision"],
                "batchSize": int(row["batch"]),
                "channelsLast": bool(record and record["knobs"].get("channelsLast")),
                "status": row["status"],
                "exitCode": int(row["exitCode"]),
                "imagesPerSecond": rate,
                "record": f"records/{row['name']}.json" if record else None,
                "log": f"logs/{row['name']}.log",
            }
        )

    largest = []
    for key in dict.fromkeys((run["model"], run["precision"]) for run in runs):
        tried = [run for run in runs if (run["model"], run["precision"]) == key]
        fitted = [run for run in tried if run["status"] == "ok"]
        best = max(fitted, key=lambda run: run["imagesPerSecond"]["mean"], default=None)
        largest.append(
            {
                "model": key[0],
                "precision": key[1],
                "largestBatch": fitted[-1]["batchSize"] if fitted else None,
                # no out-of-memory seen: a larger batch may fit too
                "stoppedBy": tried[-1]["status"] if tried[-1]["status"] != "ok" else "maxBatch",
                "bestImagesPerSecond": best["imagesPerSecond"]["mean"] if best else None,
                "bestBatch": best["batchSize"] if best else None,
            }
        )

    probe = read_record(out_dir, "allreduce")
    provenance = provenance or (probe or {}).get("provenance") or {}
    return {
        "schema": SCHEMA,
        "device": device,
        "writtenAt": datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z"),
        "maxBatch": max_batch,
        "provenance": provenance,
        "runs": runs,
        "largestBatch": largest,
        "allreduce": {
            "status": probe_status,
            "record": "records/allreduce.json" if probe else None,
            "peakAlgbwGbps": max((row["algbwGbps"] for row in probe["metrics"]["rows"]), default=None)
            if probe
            else None,
        },
        "published": None,
    }


def compare_with_published(results, table):
    """Each model and precision's best rate beside every published PyTorch figure for the same GPU (like with like:
    ringlab trains in PyTorch), each comparison naming its row; None for a CPU run."""
    if results["device"] != "cuda":
        return None
    device_name = results["provenance"].get("deviceModel") or ""
    gpu_model = table["deviceNames"].get(device_name)
    comparisons = []
    for entry in results["largestBatch"] if gpu_model else []:
        for row in table["rows"]:
            if (
                (row["gpuModel"], row["model"], row["precision"]) == (gpu_model, entry["model"], entry["precision"])
                and row["framework"].startswith("PyTorch")
                and entry["bestImagesPerSecond"] is not None
            ):
                comparisons.append(
                    {
                        "model": entry["model"],
                        "precision": entry["precision"],
                        "measuredImagesPerSecond": entry["bestImagesPerSecond"],
                        "measuredBatch": entry["bestBatch"],
                        "publishedImagesPerSecond": row["imagesPerSecond"],
                        "publishedBatch": row["batchSize"],
                        "ratio": entry["bestImagesPerSecond"] / row["imagesPerSecond"],
                        "card": row["card"],
                        "framework": row["framework"],
                        "conditions": row["conditions"],
                        "at": row["at"],
                        "batchAt": row["batchAt"],
                    }
                )
    return {
        "deviceName": device_name,
        "gpuModel": gpu_model,
        "table": table["generatedFrom"],
        "comparisons": comparisons,
    }


def fmt(value, digits=1):
    return "-" if value is None else f"{value:.{digits}f}"


def render_markdown(results, table):
    provenance, published = results["provenance"], results["published"]
    lines = [f"# ringlab GPU benchmark: {provenance.get('deviceModel', 'unknown device')}", ""]
    lines.append(
        " · ".join(
            f"{label} {provenance.get(field) or '-'}"
            for label, field in (
                ("torch", "torch"),
                ("torchvision", "torchvision"),
                ("CUDA", "cuda"),
                ("cuDNN", "cudnn"),
                ("NCCL", "nccl"),
                ("driver", "nvidiaDriver"),
                ("python", "python"),
            )
        )
    )
    lines += [
        "",
        f"One process, torchrun + {'NCCL' if results['device'] == 'cuda' else 'Gloo'} as on a cluster node; "
        "synthetic data; img/s as mean ± 1.96 std over the timed iterations; amp runs use channels-last.",
        "",
        "| model | precision | batch | img/s | ± | status |",
        "|---|---|---:|---:|---:|---|",
    ]
    for run in results["runs"]:
        rate = run["imagesPerSecond"] or {}
        lines.append(
            f"| {run['model']} | {run['precision']} | {run['batchSize']} | {fmt(rate.get('mean'))} | "
            f"{fmt(rate.get('ci95'))} | {run['status']} |"
        )
    lines += [
        "",
        "| model | precision | largest batch that fit | stopped by | best img/s (batch) |",
        "|---|---|---:|---|---:|",
    ]
    for entry in results["largestBatch"]:
        best = f"{fmt(entry['bestImagesPerSecond'])} ({entry['bestBatch']})" if entry["bestBatch"] else "-"
        lines.append(
            f"| {entry['model']} | {entry['precision']} | {entry['largestBatch'] or '-'} | "
            f"{entry['stoppedBy']} | {best} |"
        )
    probe = results["allreduce"]
    lines += [
        "",
        f"All-reduce probe, one rank: {probe['status']}. It checks the collective's path and its sums; one "
        f"rank sends nothing, so its peak algbw ({fmt(probe['peakAlgbwGbps'], 2)} Gbit/s) is no link's rate and "
        "busbw is 0 by definition.",
        "",
    ]
    if published is None:
        lines.append("CPU run (no GPU visible): the tiny model checks the script; figures are not comparable.")
    elif not published["comparisons"]:
        known = ", ".join(f"'{name}'" for name in table["deviceNames"])
        lines.append(
            f"No published PyTorch figure for '{published['deviceName']}' in {published['table']} (a device "
            f"is matched by its whole name; known: {known})."
        )
    else:
        lines += [
            f"Against the published figures for the {published['gpuModel']} ({published['table']}; the device "
            f"matched by its whole name, '{published['deviceName']}'):",
            "",
            "| model | precision | best img/s (batch) | published img/s (batch) | card | measured / published |",
            "|---|---|---:|---:|---|---:|",
        ]
        for each in published["comparisons"]:
            lines.append(
                f"| {each['model']} | {each['precision']} | {fmt(each['measuredImagesPerSecond'])} "
                f"({each['measuredBatch']}) | {each['publishedImagesPerSecond']} ({each['publishedBatch']}) | "
                f"{each['card']} | {each['ratio']:.0%} |"
            )
        lines.append("")
        for each in published["comparisons"]:
            lines.append(
                f"- {each['model']} {each['precision']}, {each['publishedImagesPerSecond']} img/s "
                f"({each['framework']}): {each['at']}; batch {each['publishedBatch']}: {each['batchAt']}. "
                f"{each['conditions']}."
            )
    return "\n".join(lines) + "\n"


def write_atomically(out_dir, name, text):
    handle, temp = tempfile.mkstemp(dir=out_dir, prefix=f".{name}.")
    with os.fdopen(handle, "w", encoding="utf-8") as stream:
        stream.write(text)
    os.chmod(temp, 0o644)
    os.replace(temp, os.path.join(out_dir, name))


def main(argv):
    with open(PUBLISHED_JSON, encoding="utf-8") as stream:
        table = json.load(stream)
    if argv[:1] == ["--render"] and len(argv) == 2:
        out_dir = argv[1]
        with open(os.path.join(out_dir, "results.json"), encoding="utf-8") as stream:
            results = json.load(stream)
        results["schema"] = SCHEMA
    elif len(argv) == 4:
        out_dir = argv[0]
        results = gather(out_dir, argv[1], int(argv[2]), argv[3])
    else:
        sys.exit(__doc__)
    results["published"] = compare_with_published(results, table)
    markdown = render_markdown(results, table)
    write_atomically(out_dir, "results.json", json.dumps(results, indent=2, allow_nan=False) + "\n")
    write_atomically(out_dir, "results.md", markdown)
    print(markdown, end="")


if __name__ == "__main__":
    main(sys.argv[1:])
