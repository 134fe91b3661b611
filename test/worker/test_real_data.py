"""Real data, time to train, checkpoints and recovery (issue #16): the dataset on disk, the worker reading it,
a resumed run continuing where it stopped, and a killed rank restarted by torchrun over loopback."""

import hashlib
import json
import os
import uuid

import pytest
from conftest import base_env, free_port, node_env, run_worker
from ringlab_worker import checkpoint, compat, time_to_train
from ringlab_worker.data import DatasetSpec, check_dataset, list_image_folder, parse_data_source, write_dataset
from ringlab_worker.errors import BadArguments

SPEC = DatasetSpec(classes=4, images_per_class=30, image_size=32, held_out=0.2, seed=0)
QUIET = {"log": lambda *args, **kwargs: None}


def digest_of(root):
    """Every file's relative path and content hash: equal digests, equal datasets."""
    found = {}
    for folder, _, files in os.walk(root):
        for name in files:
            path = os.path.join(folder, name)
            found[os.path.relpath(path, root)] = hashlib.sha256(open(path, "rb").read()).hexdigest()
    return found


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("shared") / "datasets" / "shapes")
    write_dataset(root, SPEC, **QUIET)
    return root


def test_the_dataset_is_an_imagefolder_with_a_held_out_split_and_the_same_bytes_every_time(dataset, tmp_path):
    again = str(tmp_path / "again")
    write_dataset(again, SPEC, **QUIET)
    files = digest_of(dataset)
    assert files == digest_of(again)
    assert len([name for name in files if name.startswith("train/")]) == 4 * 24
    assert len([name for name in files if name.startswith("val/")]) == 4 * 6
    classes, samples = list_image_folder(os.path.join(dataset, "val"))
    assert classes == ["class000", "class001", "class002", "class003"]
    assert sorted({label for _, label in samples}) == [0, 1, 2, 3]
    assert check_dataset(dataset) == {"path": dataset, "classes": 4, "trainImages": 96, "valImages": 24}
    manifest = json.loads(open(os.path.join(dataset, "ringlab-dataset.json")).read())
    assert manifest["format"] == "ringlab.dataset/v1" and manifest["imagesPerClass"] == 30
    # Another seed draws other images.
    other = str(tmp_path / "other")
    write_dataset(other, DatasetSpec(**{**SPEC.__dict__, "seed": 1}), **QUIET)
    assert digest_of(other).keys() == files.keys() and digest_of(other) != files


def test_writing_the_same_dataset_again_changes_nothing_and_another_one_is_refused(dataset, tmp_path):
    before = {path: os.stat(os.path.join(dataset, path)).st_mtime_ns for path in digest_of(dataset)}
    assert write_dataset(dataset, SPEC, **QUIET) is False
    assert {path: os.stat(os.path.join(dataset, path)).st_mtime_ns for path in digest_of(dataset)} == before
    with pytest.raises(BadArguments, match=r"holds another dataset \(classes 4 -> 5"):
        write_dataset(dataset, DatasetSpec(**{**SPEC.__dict__, "classes": 5}), **QUIET)
    (tmp_path / "mine").mkdir()
    with pytest.raises(BadArguments, match="is not a dataset ringlab wrote"):
        write_dataset(str(tmp_path / "mine"), SPEC, **QUIET)
    assert not [name for name in os.listdir(tmp_path) if ".partial-" in name]


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"held_out": 0}, "--held-out must be above 0"),
        ({"images_per_class": 2}, "holds out no image per class"),
        ({"images_per_class": 1, "held_out": 0.9}, "leaves no training image per class"),
        ({"classes": 1}, "--classes must be 2 to 1000"),
    ],
)
def test_a_dataset_without_images_in_either_split_is_refused_before_writing(tmp_path, changes, message):
    with pytest.raises(BadArguments, match=message):
        write_dataset(str(tmp_path / "x"), DatasetSpec(**{**SPEC.__dict__, **changes}), **QUIET)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize(
    "text, expected",
    [("synthetic", None), ("folder:/data/x/", "/data/x"), ("dataset:shapes", "/srv/shared/datasets/shapes")],
)
def test_data_sources(text, expected):
    assert parse_data_source(text, {"RINGLAB_SHARED_DIR": "/srv/shared/"}) == expected


@pytest.mark.parametrize(
    "text, env, message",
    [
        ("dataset:shapes", {}, "needs RINGLAB_SHARED_DIR"),
        ("dataset:../../etc", {"RINGLAB_SHARED_DIR": "/srv"}, "a dataset's name is lower-case letters"),
        ("dataset:", {"RINGLAB_SHARED_DIR": "/srv"}, "a dataset's name is lower-case letters"),
    ],
)
def test_a_dataset_name_never_leaves_the_shared_storage(text, env, message):
    with pytest.raises(BadArguments, match=message):
        parse_data_source(text, env)


@pytest.mark.parametrize(
    "args, message",
    [
        (["train", "--data", "s3://bucket"], "--data must be 'synthetic', 'folder:<path>' or 'dataset:<name>'"),
        (["train", "--data", "folder:data/x"], "the path must be absolute"),
        (["train", "--data", "folder:/no/such/dataset"], "no folder /no/such/dataset (on this node)"),
        (
            ["train", "--data", "folder:/tmp", "--epochs", "1", "--checkpoint-every", "3"],
            "--checkpoint-every needs --checkpoint-dir (or --output",
        ),
        (["train", "--epochs", "2"], "--epochs trains over a dataset: add --data folder:PATH"),
        (["train", "--checkpoint-dir", "/tmp/x"], "--checkpoint-dir needs --epochs"),
        (["train", "--fail-at-step", "3"], "--fail-at-step needs --epochs"),
        (["train", "--target-accuracy", "1.5"], "--target-accuracy: must be between 0 and 1"),
        (["dataset", "--out", "relative/path"], "the path must be absolute"),
    ],
)
def test_bad_data_arguments_exit_2_before_training(args, message):
    code, output, _ = run_worker(args)
    assert code == 2, output
    assert message in output


EPOCH_ON_TMP = ["train", "--data", "folder:/tmp", "--epochs", "1"]


@pytest.mark.parametrize(
    "args, nodes, message",
    [
        ([*EPOCH_ON_TMP, "--fail-node", "1"], "2", "--fail-node needs --fail-at-step"),
        (
            [*EPOCH_ON_TMP, "--fail-at-step", "2", "--fail-node", "1", "--fail-rank", "0"],
            "2",
            "--fail-rank and --fail-node exclude each other: set one",
        ),
        ([*EPOCH_ON_TMP, "--fail-at-step", "2", "--fail-node", "1"], "", "--fail-node needs a multi-node run"),
        (
            [*EPOCH_ON_TMP, "--fail-at-step", "2", "--fail-node", "2"],
            "2",
            "--fail-node 2: this run has nodes 0 to 1, and node 0 holds the rendezvous",
        ),
        ([*EPOCH_ON_TMP, "--min-nodes", "3"], "2", "--min-nodes 3 is more than this run's 2 nodes"),
        ([*EPOCH_ON_TMP, "--min-nodes", "1"], "2", "add --max-restarts 1 (or more) and --checkpoint-every"),
    ],
)
def test_bad_fault_and_elastic_arguments_exit_2_before_starting(args, nodes, message):
    code, output, _ = run_worker(args, env=base_env(RINGLAB_NUM_NODES=nodes))
    assert code == 2, output
    assert message in output


def make_bad_dataset(root, layout):
    for path in layout:
        os.makedirs(os.path.join(root, os.path.dirname(path)), exist_ok=True)
        if not path.endswith("/"):
            open(os.path.join(root, path), "wb").close()


@pytest.mark.parametrize(
    "layout, args, message",
    [
        ([], [], "no folder"),
        (["train/", "val/"], [], "has no class folders"),
        (["train/a/readme.txt", "val/a/"], [], "has 1 class folders but no images"),
    ],
)
def test_a_folder_that_is_not_an_imagefolder_dataset_fails_with_exit_2(tmp_path, layout, args, message):
    root = str(tmp_path / "bad")
    os.makedirs(root)
    make_bad_dataset(root, layout)
    code, output, _ = run_worker(["train", "--model", "tiny", "--data", f"folder:{root}", *args])
    assert code == 2, output
    assert message in output


@pytest.mark.parametrize(
    "args, message",
    [
        (["--batch-size", "128"], "fewer than one batch for every rank (1 ranks x batch size 128 = 128)"),
    ],
)
def test_too_few_images_for_the_batch_fails_with_exit_2(dataset, args, message):
    code, output, _ = run_worker(["train", "--model", "tiny", "--data", f"folder:{dataset}", *args])
    assert code == 2, output
    assert message in output


def test_more_classes_than_the_model_outputs_fails_with_exit_2(tmp_path):
    root = str(tmp_path / "eleven")
    write_dataset(root, DatasetSpec(classes=11, images_per_class=3, image_size=16, held_out=0.34, seed=0), **QUIET)
    code, output, _ = run_worker(["train", "--model", "tiny", "--batch-size", "2", "--data", f"folder:{root}"])
    assert code == 2, output
    assert "has 11 classes, but --model tiny has 10 outputs" in output


def test_throughput_on_real_data_records_the_wait_for_data_of_every_step(dataset, tmp_path, validate_result):
    output = tmp_path / "real.json"
    # By name on the shared storage, as a campaign's runs find it.
    shared = os.path.dirname(os.path.dirname(dataset))
    code, log, _ = run_worker(
        [
            "train",
            "--model",
            "tiny",
            "--batch-size",
            "16",
            "--data",
            "dataset:shapes",
            "--loader-workers",
            "1",
            "--num-warmup-batches",
            "1",
            "--num-batches-per-iter",
            "4",
            "--num-iters",
            "2",
            "--output",
            str(output),
        ],
        env=base_env(RINGLAB_SHARED_DIR=shared),
        timeout=120,
    )
    assert code == 0, log
    metrics = validate_result(output)["metrics"]
    assert metrics["data"] == {
        "kind": "folder",
        "path": dataset,
        "classes": 4,
        "trainImages": 96,
        "valImages": 24,
        "loaderWorkers": 1,
    }
    assert len(metrics["dataWaitSeconds"]) == len(metrics["stepSeconds"]) == 8
    assert all(0 <= wait < step for wait, step in zip(metrics["dataWaitSeconds"], metrics["stepSeconds"], strict=True))
    assert "Waiting for data:" in log


FIT = [
    "train",
    "--model",
    "small",
    "--batch-size",
    "16",
    "--learning-rate",
    "0.02",
    "--momentum",
    "0.9",
    "--loader-workers",
    "0",
]


def test_time_to_train_stops_at_the_target_accuracy_and_records_each_epoch(dataset, tmp_path, validate_result):
    output = tmp_path / "fit.json"
    code, log, _ = run_worker(
        [*FIT, "--data", f"folder:{dataset}", "--epochs", "10", "--target-accuracy", "0.75", "--output", str(output)],
        timeout=240,
    )
    assert code == 0, log
    record = validate_result(output)
    metrics = record["metrics"]
    epochs = metrics["epochs"]
    assert metrics["reachedTargetAtEpoch"] == len(epochs) < 10
    assert epochs[-1]["heldOutAccuracy"] >= 0.75 > max((epoch["heldOutAccuracy"] for epoch in epochs[:-1]), default=0)
    assert [epoch["steps"] for epoch in epochs] == [6 * (i + 1) for i in range(len(epochs))]  # 96 images / 16
    assert metrics["timeToTrainSeconds"] >= sum(epoch["trainingSeconds"] for epoch in epochs) > 0
    rates = [epoch["imagesPerSecondPerWorker"] for epoch in epochs]
    assert all(rate > 0 for rate in rates)
    assert metrics["imagesPerSecondPerWorker"]["mean"] == pytest.approx(sum(rates) / len(rates))
    assert metrics["restarts"] == 0 and metrics["recovery"] == [] and metrics["targetAccuracy"] == 0.75
    # The strategies' comparison reads these from time-to-train runs too.
    assert metrics["wireBytesPerStep"] == metrics["gradientBytes"] and metrics["replicaDivergence"] == 0
    assert record["knobs"]["epochs"] == 10 and record["knobs"]["data"] == f"folder:{dataset}"
    assert f"target reached at epoch {len(epochs)}" in log


def test_a_run_killed_mid_epoch_resumes_from_its_checkpoint_with_the_same_steps_and_losses(
    dataset, tmp_path, validate_result
):
    common = [*FIT, "--data", f"folder:{dataset}", "--epochs", "3", "--checkpoint-every", "4"]
    straight = tmp_path / "straight.json"
    code, log, _ = run_worker(
        [*common, "--checkpoint-dir", str(tmp_path / "ck-straight"), "--output", str(straight)], timeout=240
    )
    assert code == 0, log

    resumed = tmp_path / "run" / "result.json"
    again = [*common, "--output", str(resumed)]  # checkpoints beside the result, as in a campaign's run folder
    code, log, _ = run_worker([*again, "--fail-at-step", "10"], timeout=240)
    assert code == -9, log  # SIGKILL, as an OOM kill
    assert "fault injection: killing this process after step 10" in log and not resumed.exists()
    assert checkpoint.checkpoint_steps(str(tmp_path / "run" / "checkpoints")) == [8, 4]  # the newest two
    # Run again (as torchrun's restart does): it resumes from step 8, in epoch 2, and redoes steps 9 and 10.
    code, log, _ = run_worker([*again, "--fail-at-step", "10"], timeout=240)
    assert code == 0, log
    assert "Resuming from checkpoint at step 8 (epoch 2, batch 2)" in log

    first, second = validate_result(straight)["metrics"], validate_result(resumed)["metrics"]
    assert [epoch["steps"] for epoch in second["epochs"]] == [6, 12, 18]
    assert second["restarts"] == 1 and second["stepsRedone"] == 2
    event = second["recovery"][0]
    assert (event["failedAfterStep"], event["resumedFromStep"]) == (10, 8)
    assert event["secondsLost"] >= event["recoverySeconds"] > 0
    assert second["checkpoints"]["resumedFromStep"] == 8
    # The same data order and optimizer state: the resumed run's losses are the uninterrupted run's.
    assert [step for step, _ in second["lossCurve"]] == [step for step, _ in first["lossCurve"]]
    assert [loss for _, loss in second["lossCurve"]] == pytest.approx(
        [loss for _, loss in first["lossCurve"]], rel=1e-4
    )
    assert [e["heldOutAccuracy"] for e in second["epochs"]] == [e["heldOutAccuracy"] for e in first["epochs"]]
    # A finished run's folder is not resumed by a new run.
    code, log, _ = run_worker(again, timeout=120)
    assert code == 2 and "holds a run that has finished" in log


def test_a_killed_rank_is_restarted_by_torchrun_and_the_record_counts_one_restart(
    dataset, tmp_path, nodes, validate_result
):
    output = tmp_path / "elastic.json"
    args = [
        *FIT,
        "--data",
        f"folder:{dataset}",
        "--epochs",
        "2",
        "--checkpoint-dir",
        str(tmp_path / "ck"),
        "--checkpoint-every",
        "2",
        "--max-restarts",
        "1",
        "--fail-at-step",
        "5",
        "--fail-rank",
        "1",
        "--timeout-seconds",
        "60",
        "--output",
        str(output),
    ]
    port, run_id = free_port(), f"test-{uuid.uuid4().hex[:8]}"
    procs = [nodes.start(args, node_env(rank, 2, port, run_id)) for rank in (0, 1)]
    results = [nodes.finish(proc, timeout=240) for proc in procs]
    assert [code for code, _ in results] == [0, 0], results
    metrics = validate_result(output)["metrics"]
    assert metrics["restarts"] == 1 and metrics["stepsRedone"] == 1
    assert (metrics["recovery"][0]["failedAfterStep"], metrics["recovery"][0]["resumedFromStep"]) == (5, 4)
    assert metrics["recovery"][0]["recoverySeconds"] < 30  # the bound, besides the work redone
    assert [epoch["steps"] for epoch in metrics["epochs"]] == [3, 6]  # 96 images / (2 ranks x 16)
    assert "fault injection: killing this process after step 5" in results[1][1]


def test_a_lost_node_ends_its_launcher_and_the_others_go_on_at_fewer_nodes_when_min_nodes_allows(
    dataset, tmp_path, nodes, validate_result
):
    output = tmp_path / "elastic.json"
    args = [
        *FIT,
        "--data",
        f"folder:{dataset}",
        "--epochs",
        "2",
        "--checkpoint-dir",
        str(tmp_path / "ck"),
        "--checkpoint-every",
        "1",
        "--max-restarts",
        "1",
        "--min-nodes",
        "2",
        "--fail-at-step",
        "2",
        "--fail-node",
        "2",
        "--timeout-seconds",
        "60",
        "--output",
        str(output),
        "--batch-size",
        "8",
    ]
    port, run_id = free_port(), f"test-{uuid.uuid4().hex[:8]}"
    procs = [nodes.start(args, node_env(rank, 3, port, run_id)) for rank in (0, 1, 2)]
    results = [nodes.finish(proc, timeout=240) for proc in procs]
    assert [code for code, _ in results] == [0, 0, -9], results  # node 2's launcher was SIGKILLed
    assert "fault injection: node 2 is lost after step 2" in results[2][1]
    metrics = validate_result(output)["metrics"]
    event = metrics["recovery"][0]
    assert metrics["restarts"] == 1 and metrics["nodesAtStart"] == 3
    assert (event["nodesBefore"], event["nodesAfter"], event["worldSizeBefore"], event["worldSizeAfter"]) == (
        3,
        2,
        3,
        2,
    )
    assert (event["failedAfterStep"], event["resumedFromStep"]) == (2, 2)
    assert event["recoverySeconds"] < 30  # the bound (no work redone: a checkpoint every step)
    # 96 images an epoch: 2 steps of 3 x 8 (48 images), then 2 x 8 a step from the epoch's 49th image on: 3 more
    # steps (not 4: the 48 images already trained on are not trained on again); then 6 steps an epoch.
    assert [epoch["steps"] for epoch in metrics["epochs"]] == [5, 11]
    assert "1 node(s) lost, going on with 2" in results[0][1]


@pytest.mark.parametrize("saved_world, world, expected", [(3, 3, 10), (3, 2, 15), (3, 4, 7), (2, 3, 6)])
def test_a_run_resumed_at_another_world_size_skips_the_images_the_checkpoint_had_trained_on(
    saved_world, world, expected
):
    state = {"batchInEpoch": 10, "worldSize": saved_world, "config": {}}
    assert time_to_train.resumed_batch_in_epoch(state, 32, world) == expected


def test_an_elastic_run_waits_for_a_node_that_starts_late_instead_of_training_without_it(
    dataset, tmp_path, nodes, validate_result
):
    output = tmp_path / "late.json"
    args = [
        *FIT,
        "--data",
        f"folder:{dataset}",
        "--epochs",
        "1",
        "--checkpoint-every",
        "1",
        "--max-restarts",
        "1",
        "--min-nodes",
        "2",
        "--timeout-seconds",
        "60",
        "--output",
        str(output),
    ]
    port, run_id = free_port(), f"test-{uuid.uuid4().hex[:8]}"
    procs = [nodes.start(args, node_env(rank, 3, port, run_id)) for rank in (0, 1)]
    # Node 2 starts only once nodes 0 and 1 have formed a round of their own (past its last call) and said they
    # wait: printed by that round's global rank 0, which c10d may place on node 0 or node 1.
    nodes.wait_for(procs, "Elastic run: 2 of 3 nodes joined the first rendezvous; waiting for the others", timeout=120)
    procs.append(nodes.start(args, node_env(2, 3, port, run_id)))
    results = [nodes.finish(proc, timeout=240) for proc in procs]
    assert [code for code, _ in results] == [0, 0, 0], results
    record = validate_result(output)
    assert record["world"]["nodes"] == 3 and record["metrics"]["nodesAtStart"] == 3
    assert record["metrics"]["restarts"] == 0  # letting the late node in is no failure


def test_an_unreadable_checkpoint_is_skipped_with_a_warning_and_only_the_newest_two_are_kept(tmp_path):
    import torch

    directory = str(tmp_path)
    for step in (3, 6, 9):
        checkpoint.save(directory, step, {"step": step, "weights": torch.ones(2) * step})
    assert checkpoint.checkpoint_steps(directory) == [9, 6]
    with open(checkpoint.path_of(directory, 9), "r+b") as newest:
        newest.truncate(20)  # a node died mid-copy, or the disk filled up
    warnings = []
    state = checkpoint.load_newest(directory, warn=warnings.append)
    assert state["step"] == 6 and state["weights"].tolist() == [6.0, 6.0]
    assert len(warnings) == 1 and "skipping unreadable checkpoint" in warnings[0]
    assert "step-000000009.safetensors" in warnings[0]
    assert not [name for name in os.listdir(directory) if name.endswith(".tmp")]


def test_restarted_workers_get_a_fresh_store_rather_than_a_stale_shared_one():
    assert compat.TORCHRUN_ENV == {"TORCH_DISABLE_SHARE_RDZV_TCP_STORE": "1"}
