"""test/bench/gpu-report.py's comparison with the published figures: each card with its own, found by the device's
whole name in the table generated from src/catalogue/published-throughput.ts, and the committed H200 report as the
script writes it from its results.json."""

import json
import shutil
import subprocess
import sys

from conftest import REPO

REPORT = REPO / "test" / "bench" / "gpu-report.py"
H200 = REPO / "test" / "bench" / "gpu" / "nvidia-h200"


def render(folder):
    done = subprocess.run(
        [sys.executable, str(REPORT), "--render", str(folder)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads((folder / "results.json").read_text()), (folder / "results.md").read_text()


def h200_run_as(tmp_path, device_name):
    results = json.loads((H200 / "results.json").read_text())
    results["provenance"]["deviceModel"] = device_name
    (tmp_path / "results.json").write_text(json.dumps(results))
    return render(tmp_path)


def test_the_committed_h200_report_is_what_the_script_writes_from_its_results(tmp_path):
    shutil.copy(H200 / "results.json", tmp_path / "results.json")
    results, table = render(tmp_path)
    assert (tmp_path / "results.json").read_text() == (H200 / "results.json").read_text(), (
        "stale: python3 test/bench/gpu-report.py --render test/bench/gpu/nvidia-h200"
    )
    assert table == (H200 / "results.md").read_text(), (
        "stale: python3 test/bench/gpu-report.py --render test/bench/gpu/nvidia-h200"
    )


def test_an_h200_is_compared_with_the_h200_row_of_lambdas_table_and_says_which(tmp_path):
    results, table = h200_run_as(tmp_path, "NVIDIA H200")
    published = results["published"]
    assert (published["deviceName"], published["gpuModel"]) == ("NVIDIA H200", "NVIDIA H200")
    assert [
        (each["precision"], each["publishedImagesPerSecond"], each["publishedBatch"], f"{each['ratio']:.0%}")
        for each in published["comparisons"]
    ] == [("fp32", 2259, 1280, "95%"), ("amp", 3079, 2560, "186%")]
    for each in published["comparisons"]:
        assert 'row "LambdaBM_ENG04_1xH200_140GB_SXM_h200_v2", column "resnet50"' in each["at"]
        assert each["at"] in table
    assert "| resnet50 | amp | 5714.1 (256) | 3079 (2560) | H200 140GB SXM (Lambda) | 186% |" in table
    assert "H100" not in table


def test_a_gh200_is_no_h200_a_device_is_matched_by_its_whole_name(tmp_path):
    results, table = h200_run_as(tmp_path, "NVIDIA GH200 480GB")
    assert results["published"] == {
        "deviceName": "NVIDIA GH200 480GB",
        "gpuModel": None,
        "table": "src/catalogue/published-throughput.ts",
        "comparisons": [],
    }
    assert "No published PyTorch figure for 'NVIDIA GH200 480GB'" in table
    assert "3079" not in table and "measured / published" not in table


def test_an_h100_sxm5_is_compared_with_the_h100s_rows(tmp_path):
    results, _ = h200_run_as(tmp_path, "NVIDIA H100 80GB HBM3")
    assert results["published"]["gpuModel"] == "NVIDIA H100"
    assert [
        (each["precision"], each["publishedImagesPerSecond"], each["card"])
        for each in results["published"]["comparisons"]
    ] == [("fp32", 1895, "H100 80GB SXM5 (Lambda Cloud)"), ("amp", 2791, "H100 80GB SXM5 (Lambda Cloud)")]
