"""test/bench/gpu.sh in its CPU mode: the same steps as on a GPU (batch sweep through the launcher, probe,
JSON and Markdown), with the tiny model, under the interpreter running the tests."""

import json
import os
import subprocess
import sys

import torch
from conftest import REPO, base_env


def test_the_gpu_benchmark_script_runs_on_the_cpu_and_writes_the_results_and_the_table(tmp_path, validate_result):
    env = base_env(PYTHON=sys.executable, DEVICE="cpu")
    env.pop("OUT", None)
    done = subprocess.run(
        ["bash", str(REPO / "test" / "bench" / "gpu.sh"), str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["schema"] == "ringlab.gpu-bench/v2" and results["device"] == "cpu" and results["published"] is None
    assert [(run["model"], run["precision"], run["batchSize"], run["status"]) for run in results["runs"]] == [
        ("tiny", "fp32", 32, "ok"),
        ("tiny", "fp32", 64, "ok"),
    ]
    for run in results["runs"]:
        record = validate_result(tmp_path / run["record"])
        assert record["knobs"]["batchSize"] == run["batchSize"] and record["world"]["backend"] == "gloo"
        assert record["metrics"]["imagesPerSecondPerWorker"] == run["imagesPerSecond"]
        assert os.path.exists(tmp_path / run["log"])
    assert results["largestBatch"] == [
        {
            "model": "tiny",
            "precision": "fp32",
            "largestBatch": 64,
            "stoppedBy": "maxBatch",
            "bestImagesPerSecond": max(run["imagesPerSecond"]["mean"] for run in results["runs"]),
            "bestBatch": results["largestBatch"][0]["bestBatch"],
        }
    ]
    probe = validate_result(tmp_path / results["allreduce"]["record"])
    assert results["allreduce"]["status"] == "ok" and all(row["wrong"] == 0 for row in probe["metrics"]["rows"])
    assert results["provenance"]["torch"] == torch.__version__ and results["provenance"]["device"] == "cpu"

    table = (tmp_path / "results.md").read_text()
    rows = [line.split("|")[1:-1] for line in table.splitlines() if line.startswith("| tiny | fp32 |")]
    assert [[cell.strip() for cell in row[:3]] for row in rows[:2]] == [["tiny", "fp32", "32"], ["tiny", "fp32", "64"]]
    assert float(rows[0][3]) == round(results["runs"][0]["imagesPerSecond"]["mean"], 1)
    assert f"torch {torch.__version__}" in table and "CPU run" in table
    assert sorted(p.name for p in tmp_path.iterdir()) == ["logs", "records", "results.json", "results.md", "runs.tsv"]
