#!/usr/bin/env python3
"""The language models on one GPU: tokens per second, peak memory against the prediction made before the run, and
model FLOPs utilisation (issue #55).

Runs every run of <card folder>/transformer-predictions.json (written before, by test/bench/gpu-transformer-predict.ts)
through the worker's own command line (ringlab_worker.cli.main: the train job, its layouts, its memory measure), one
after another in this one process (one CUDA start for all of them), and writes beside it:
  transformer-results.json  every run: status (ok, oom, failed), tokens/s, peak allocated and reserved bytes, the
                            prediction and its error, MFU against the card's published dense peak;
  transformer-results.md    the same as a table;
  records/<run>.json        the worker's result records.

  python3 test/bench/gpu-transformer.py test/bench/gpu/nvidia-h200 [OUT_DIR]
OUT_DIR defaults to $OUT when set, else the card folder. Needs a CUDA GPU and the worker's dependencies.

MFU = 6 x parameters x tokens per second / the card's dense peak for the precision (fp32 runs use no TF32: the
worker leaves torch's default, highest-precision fp32 matrix products); the attention's FLOPs (12 L h s per token,
PaLM's appendix B) are reported beside it as hardware FLOPs utilisation would count them.
"""

import gc
import json
import os
import platform
import sys
import time
import traceback

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(REPO, "docker", "worker"))

# Published dense peaks (no sparsity), FLOP/s, with their source; by torch's exact device name.
PEAKS = {
    "NVIDIA H200": {
        "bf16": 989e12,
        "fp32": 67e12,
        "source": "NVIDIA H200 Tensor Core GPU datasheet (H200 SXM: BF16 Tensor Core 1,979 TFLOPS with "
        "sparsity, i.e. 989 dense; FP32 67 TFLOPS)",
    },
    "NVIDIA H100 80GB HBM3": {
        "bf16": 989e12,
        "fp32": 67e12,
        "source": "NVIDIA H100 Tensor Core GPU datasheet (H100 SXM: BF16 1,979 TFLOPS with "
        "sparsity, 989 dense; FP32 67 TFLOPS)",
    },
}


def argv_of(run: dict, steps: dict, output: str) -> list:
    from ringlab_worker.registry import TRAIN_KNOBS

    argv = [
        "train",
        "--model",
        run["model"],
        "--batch-size",
        str(run["batchSize"]),
        "--device",
        "cuda",
        "--cpu-check-seconds",
        "0",
        "--timeout-seconds",
        "900",
        "--output",
        output,
    ]
    for name, value in {**steps, **run["knobs"]}.items():
        flag = TRAIN_KNOBS[name]["flag"]
        argv += [flag] if value is True else [] if value is False else [flag, str(value)]
    return argv


def measure(run: dict, steps: dict, records: str) -> dict:
    import torch
    from ringlab_worker import cli

    output = os.path.join(records, f"{run['name']}.json")
    started = time.perf_counter()
    try:
        code = cli.main(argv_of(run, steps, output))
        status = "ok" if code == 0 else f"failed (exit {code})"
    except torch.OutOfMemoryError as error:
        status, code = "oom", None
        print(f"{run['name']}: out of memory: {str(error).splitlines()[0]}", flush=True)
    except Exception:  # noqa: BLE001 - one run's failure is recorded, the others still run
        status, code = "failed", None
        traceback.print_exc()
    finally:
        if torch.distributed.is_initialized():
            torch.distributed.destroy_process_group()
        gc.collect()
        torch.cuda.empty_cache()
    row = {
        "name": run["name"],
        "status": status,
        "seconds": time.perf_counter() - started,
        "predictedPeakBytes": run["predictedPeakBytes"],
    }
    if status == "ok":
        row.update(read_record(output, run))
    return row


def read_record(path: str, run: dict) -> dict:
    with open(path, encoding="utf-8") as handle:
        record = json.load(handle)
    metrics, provenance = record["metrics"], record["provenance"]
    rank = metrics["memory"]["perRank"][0]
    knobs = record["knobs"]
    parameters = metrics["parameterCount"]
    tokens = metrics["tokensPerSecondTotal"]["mean"]
    attention = 12 * knobs["layers"] * knobs["width"] * knobs["sequenceLength"]
    peak = PEAKS.get(provenance["deviceModel"])
    precision = "bf16" if knobs["precision"] == "bf16" else "fp32"
    measured = rank["peakBytes"] - rank["baselineBytes"]
    return {
        "deviceModel": provenance["deviceModel"],
        "torch": provenance["torch"],
        "parameters": parameters,
        "tokensPerSecond": tokens,
        "tokensPerSecondSpread95": metrics["tokensPerSecondTotal"]["ci95"],
        "peakAllocatedBytes": measured,
        "peakReservedBytes": rank.get("peakReservedBytes"),
        "memoryError": run["predictedPeakBytes"] / measured - 1,
        "mfu": None if peak is None else 6 * parameters * tokens / peak[precision],
        "mfuWithAttention": None if peak is None else (6 * parameters + attention) * tokens / peak[precision],
        "finalLoss": metrics["finalLoss"],
    }


def markdown(results: dict) -> str:
    gib = lambda value: "-" if value is None else f"{value / 2**30:.2f}"  # noqa: E731
    pct = lambda value: "-" if value is None else f"{100 * value:+.1f} %"  # noqa: E731
    lines = [
        f"# Language models on one {results['deviceModel']}",
        "",
        f"Predicted before the run: {results['predictionsMadeAt']} ({results['constants']}). "
        f"MFU against {results['peakSource']}.",
        "",
        "| run | status | tokens/s | predicted GiB | allocated GiB | error | reserved GiB | MFU | with attention |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    share = lambda value: "-" if value is None else f"{100 * value:.1f} %"  # noqa: E731
    for row in results["runs"]:
        ok = row["status"] == "ok"
        tokens = f"{row['tokensPerSecond']:.0f}" if ok else "-"
        error = pct(row.get("memoryError")) if ok else "-"
        lines.append(
            f"| {row['name']} | {row['status']} | {tokens} | {gib(row['predictedPeakBytes'])} | "
            f"{gib(row.get('peakAllocatedBytes'))} | {error} | {gib(row.get('peakReservedBytes'))} | "
            f"{share(row.get('mfu'))} | {share(row.get('mfuWithAttention'))} |"
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    import torch

    folder = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) > 2 else os.environ.get("OUT") or folder
    records = os.path.join(out, "records")
    os.makedirs(records, exist_ok=True)
    with open(os.path.join(folder, "transformer-predictions.json"), encoding="utf-8") as handle:
        predictions = json.load(handle)
    if not torch.cuda.is_available():
        print("gpu-transformer.py: no CUDA GPU here", file=sys.stderr)
        return 2
    device = torch.cuda.get_device_name(0)
    print(f"# {device}, torch {torch.__version__}, {len(predictions['runs'])} runs", flush=True)
    peak = PEAKS.get(device, {})
    results = {
        "schema": "ringlab.gpu-transformer/v1",
        "deviceModel": device,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "gpuMemoryBytes": torch.cuda.get_device_properties(0).total_memory,
        "predictionsMadeAt": predictions["madeAt"],
        "constants": predictions["constants"],
        "largestFit": predictions["largestFit"],
        "peakSource": peak.get("source", "no published peak known"),
        "runs": [],
    }
    for run in predictions["runs"]:
        row = measure(run, predictions["steps"], records)
        results["runs"].append(row)
        print(json.dumps(row), flush=True)
        write(out, results)  # after every run: a run cut short by a time limit keeps what was measured
    print(markdown(results), flush=True)
    return 0


def write(out: str, results: dict) -> None:
    for name, text in (
        ("transformer-results.json", json.dumps(results, indent=2) + "\n"),
        ("transformer-results.md", markdown(results)),
    ):
        with open(os.path.join(out, name), "w", encoding="utf-8") as handle:
            handle.write(text)


if __name__ == "__main__":
    sys.exit(main())
