"""Checkpoints on a shared folder other users can write to (issue #33): a planted file runs no code when a run
resumes, a link is not followed, and what the worker writes there (checkpoints, progress.json, the result, a
dataset) does not follow a link planted at its path to overwrite another file."""

import hashlib
import io
import json
import os

import pytest
from conftest import RunsCode, base_env, run_worker
from ringlab_worker import checkpoint, data, result
from ringlab_worker.data import DatasetSpec
from ringlab_worker.errors import BadArguments

QUIET = {"log": lambda *args, **kwargs: None}


def _json_beside(directory, step):
    return os.path.join(directory, f"step-{step:09d}.json")


def pickle_payload(marker):
    """torch.save's zip with a pickle in it that runs a command when unpickled."""
    import torch

    buffer = io.BytesIO()
    torch.save({"step": 8, "weights": RunsCode(marker)}, buffer)
    return buffer.getvalue()


def torchscript_payload(marker):
    """A TorchScript archive: torch.load handed such a file to torch.jit.load before torch 2.6 (CVE-2025-32434)."""
    import torch

    class Planted(torch.nn.Module):
        def forward(self, x):
            return x

    buffer = io.BytesIO()
    torch.jit.save(torch.jit.script(Planted()), buffer)
    return buffer.getvalue()


def plant(directory, step, payload, name):
    """What someone who can write to the shared folder can put there: `payload` as the tensor file of a checkpoint at
    `step` under `name` ("pt": the name ringlab used before 2026-11-27, "safetensors": today's), and the JSON beside it
    copied from a genuine one and rewritten to describe that file (its hash matches)."""
    tensor_file = f"step-{step:09d}.{name}"
    with open(os.path.join(directory, tensor_file), "wb") as out:
        out.write(payload)
    genuine = [name for name in sorted(os.listdir(directory)) if name.endswith(".json") and name.startswith("step-")]
    with open(os.path.join(directory, genuine[-1]), encoding="utf-8") as handle:
        described = json.load(handle)
    described["step"] = step
    described["tensors"] = {
        **described["tensors"],
        "file": tensor_file,
        "sha256": hashlib.sha256(payload).hexdigest(),
        "bytes": len(payload),
    }
    with open(_json_beside(directory, step), "w", encoding="utf-8") as out:
        json.dump(described, out)
    return tensor_file


def genuine_state(step):
    import torch

    optimizer = {"state": {0: {"buffer": torch.zeros(2)}}, "param_groups": [{"lr": 0.1, "params": [0]}]}
    return {"step": step, "epoch": 0, "weights": torch.ones(2) * step, "optimizer": optimizer}


def newest_readable(directory):
    """The state load_newest resumes from, and the warnings it gave on the way."""
    warnings = []
    return checkpoint.load_newest(directory, warn=warnings.append), warnings


@pytest.fixture
def no_unpickler(monkeypatch):
    """Every loader that can turn a file into code, replaced by one that notes the call: a test asserts none ran."""
    import pickle

    import torch

    calls = []
    for owner, name in ((torch, "load"), (torch.jit, "load"), (pickle, "load"), (pickle, "loads")):
        monkeypatch.setattr(owner, name, lambda *args, _name=name, **kwargs: calls.append(_name))
    return calls


@pytest.mark.parametrize("payload", [pickle_payload, torchscript_payload])
@pytest.mark.parametrize("name", ["pt", "safetensors"])
def test_a_planted_pickle_or_torchscript_checkpoint_reaches_no_loader_and_the_genuine_one_is_resumed(
    tmp_path, no_unpickler, payload, name
):
    directory = str(tmp_path / "checkpoints")
    checkpoint.save(directory, 4, genuine_state(4))
    marker = tmp_path / "pwned"
    planted = plant(directory, 8, payload(marker), name)
    state, warnings = newest_readable(directory)
    assert no_unpickler == [] and not marker.exists()
    assert state["step"] == 4 and state["weights"].tolist() == [4.0, 4.0]
    assert len(warnings) == 1 and "skipping unreadable checkpoint" in warnings[0] and planted in warnings[0]
    if name == "pt":
        assert "format of ringlab before 2026-11-27" in warnings[0]


def test_a_restarted_run_does_not_run_a_planted_checkpoint_and_resumes_from_its_own(tmp_path):
    dataset = str(tmp_path / "shared" / "datasets" / "shapes")
    data.write_dataset(
        dataset, DatasetSpec(classes=2, images_per_class=10, image_size=16, held_out=0.2, seed=0), **QUIET
    )
    output = tmp_path / "run" / "result.json"
    args = [
        "train",
        "--model",
        "tiny",
        "--batch-size",
        "4",
        "--loader-workers",
        "0",
        "--data",
        f"folder:{dataset}",
        "--epochs",
        "1",
        "--checkpoint-every",
        "2",
        "--fail-at-step",
        "3",
        "--output",
        str(output),
    ]
    code, log, _ = run_worker(args, timeout=120)
    assert code == -9, log
    directory = str(tmp_path / "run" / "checkpoints")
    assert checkpoint.checkpoint_steps(directory) == [2]
    marker = tmp_path / "pwned"
    plant(directory, 4, pickle_payload(marker), "pt")
    code, log, _ = run_worker(args, env=base_env(), timeout=120)
    assert code == 0, log
    assert not marker.exists()
    assert "skipping unreadable checkpoint" in log and "Resuming from checkpoint at step 2 (epoch 1, batch 2)" in log
    assert json.loads(output.read_text())["metrics"]["checkpoints"]["resumedFromStep"] == 2


def test_a_checkpoint_that_is_a_link_to_another_file_is_not_read(tmp_path):
    elsewhere, directory = str(tmp_path / "elsewhere"), str(tmp_path / "checkpoints")
    checkpoint.save(elsewhere, 9, genuine_state(9))
    checkpoint.save(directory, 3, genuine_state(3))
    for name in os.listdir(elsewhere):
        if name.startswith("step-"):
            os.symlink(os.path.join(elsewhere, name), os.path.join(directory, name))
    state, warnings = newest_readable(directory)
    assert state["step"] == 3
    assert len(warnings) == 1 and "step-000000009.safetensors" in warnings[0]


def test_a_checkpoint_whose_tensor_file_alone_is_a_link_is_not_read(tmp_path):
    directory = str(tmp_path / "checkpoints")
    checkpoint.save(directory, 3, genuine_state(3))
    checkpoint.save(directory, 6, genuine_state(6))
    newest = checkpoint.path_of(directory, 6)
    os.rename(newest, str(tmp_path / "moved.safetensors"))
    os.symlink(
        str(tmp_path / "moved.safetensors"), newest
    )  # the same bytes, the JSON's hash matches: only the link differs
    state, warnings = newest_readable(directory)
    assert state["step"] == 3
    assert len(warnings) == 1 and "step-000000006.safetensors" in warnings[0]


def test_a_tensor_file_that_does_not_match_its_json_is_skipped(tmp_path):
    """The JSON and the tensors are one checkpoint: a tensor file from another step (or replaced) is refused."""
    import shutil

    directory = str(tmp_path / "checkpoints")
    checkpoint.save(directory, 3, genuine_state(3))
    checkpoint.save(directory, 6, genuine_state(6))
    shutil.copyfile(checkpoint.path_of(directory, 3), checkpoint.path_of(directory, 6))
    state, warnings = newest_readable(directory)
    assert state["step"] == 3
    assert len(warnings) == 1 and "step-000000006.safetensors" in warnings[0]


def test_the_tensor_file_holds_tensors_only_and_the_rest_is_json(tmp_path):
    import torch

    directory = str(tmp_path)
    state = {
        "step": 5,
        "config": {"model": "tiny", "momentum": 0.9, "worldSize": None},
        "lossCurve": [[1, 2.5]],
        "optimizer": {
            "state": {0: {"momentum_buffer": torch.ones(3)}, 1: {"momentum_buffer": None}},
            "param_groups": [{"lr": 0.1, "betas": (0.9, 0.99), "nesterov": False, "params": [0, 1]}],
        },
        "scaler": {},
        "model": {"w": torch.arange(4), "flag": torch.tensor(True)},
    }
    checkpoint.save(directory, 5, state)
    from safetensors.torch import load_file

    tensors = load_file(checkpoint.path_of(directory, 5))
    assert all(isinstance(key, str) and isinstance(value, torch.Tensor) for key, value in tensors.items())
    assert len(tensors) == 3
    described = json.loads(open(_json_beside(directory, 5), encoding="utf-8").read())
    assert described["step"] == 5
    loaded = checkpoint.load_newest(directory)
    assert list(loaded) == list(state)
    assert loaded["optimizer"]["state"][0]["momentum_buffer"].tolist() == [1.0, 1.0, 1.0]
    assert loaded["optimizer"]["state"][1] == {"momentum_buffer": None}  # int keys stay ints
    assert loaded["optimizer"]["param_groups"][0]["betas"] == (0.9, 0.99)
    assert loaded["model"]["w"].tolist() == [0, 1, 2, 3] and loaded["model"]["flag"].item() is True
    assert {key: loaded[key] for key in ("config", "lossCurve", "scaler")} == {
        key: state[key] for key in ("config", "lossCurve", "scaler")
    }


def test_a_trainers_state_round_trips_through_a_checkpoint(tmp_path):
    """What train.Trainer.checkpoint_state saves (model, SGD with momentum, scaler) restores to the same values."""
    import torch

    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.Linear(4, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model(torch.randn(5, 3)).sum().backward()
    optimizer.step()
    saved = {"step": 1, "model": model.state_dict(), "optimizer": optimizer.state_dict(), "scaler": {}}
    checkpoint.save(str(tmp_path), 1, saved)
    loaded = checkpoint.load_newest(str(tmp_path))
    other = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.Linear(4, 2))
    other_optimizer = torch.optim.SGD(other.parameters(), lr=0.5, momentum=0.1)
    other.load_state_dict(loaded["model"])
    other_optimizer.load_state_dict(loaded["optimizer"])
    for key, value in model.state_dict().items():
        assert torch.equal(other.state_dict()[key], value)
    assert other_optimizer.state_dict()["param_groups"] == optimizer.state_dict()["param_groups"]
    for index, values in optimizer.state_dict()["state"].items():
        assert torch.equal(other_optimizer.state_dict()["state"][index]["momentum_buffer"], values["momentum_buffer"])


# What the worker writes in the shared folder does not follow a link planted at its path.


def _outside(tmp_path):
    target = tmp_path / "outside" / "precious"
    target.parent.mkdir()
    target.write_text("do not overwrite\n")
    return target


def test_the_result_is_not_written_through_a_link_planted_at_its_path(tmp_path):
    target = _outside(tmp_path)
    path = tmp_path / "run" / "result.json"
    path.parent.mkdir()
    path.symlink_to(target)
    result.write_atomically(str(path), {"ok": True})
    assert target.read_text() == "do not overwrite\n"
    assert not path.is_symlink() and json.loads(path.read_text()) == {"ok": True}


def test_a_run_writes_its_result_in_place_of_a_link_planted_at_output(tmp_path):
    target = _outside(tmp_path)
    output = tmp_path / "run" / "result.json"
    output.parent.mkdir()
    output.symlink_to(target)
    code, printed, _ = run_worker(
        [
            "train",
            "--model",
            "tiny",
            "--batch-size",
            "2",
            "--num-warmup-batches",
            "0",
            "--num-batches-per-iter",
            "1",
            "--num-iters",
            "1",
            "--output",
            str(output),
        ]
    )
    assert code == 0, printed
    assert target.read_text() == "do not overwrite\n"
    assert not output.is_symlink() and json.loads(output.read_text())["metrics"]


@pytest.mark.parametrize("planted", ["progress.json", ".progress.json.tmp"])
def test_progress_is_not_written_through_a_link(tmp_path, planted):
    target = _outside(tmp_path)
    directory = tmp_path / "checkpoints"
    directory.mkdir()
    (directory / planted).symlink_to(target)
    checkpoint.write_progress(str(directory), {"step": 3})
    assert target.read_text() == "do not overwrite\n"
    assert checkpoint.read_progress(str(directory)) == {"step": 3}
    assert not (directory / "progress.json").is_symlink()


@pytest.mark.parametrize("planted", ["step-000000004.safetensors", "step-000000004.json"])
def test_a_checkpoint_is_not_written_through_a_link(tmp_path, planted):
    target = _outside(tmp_path)
    directory = tmp_path / "checkpoints"
    directory.mkdir()
    (directory / planted).symlink_to(target)
    checkpoint.save(str(directory), 4, genuine_state(4))
    assert target.read_text() == "do not overwrite\n"
    assert checkpoint.load_newest(str(directory))["step"] == 4


def test_checkpoints_are_not_written_into_a_linked_folder(tmp_path):
    elsewhere = tmp_path / "outside"
    elsewhere.mkdir()
    directory = tmp_path / "run" / "checkpoints"
    directory.parent.mkdir()
    directory.symlink_to(elsewhere)
    for write in (
        lambda: checkpoint.save(str(directory), 4, genuine_state(4)),
        lambda: checkpoint.write_progress(str(directory), {"step": 4}),
    ):
        with pytest.raises(BadArguments, match="is a symbolic link; ringlab does not follow links"):
            write()
    assert list(elsewhere.iterdir()) == []
    checkpoint.save(str(elsewhere), 4, genuine_state(4))  # nor read there
    with pytest.raises(BadArguments, match="is a symbolic link"):
        checkpoint.load_newest(str(directory))
    with pytest.raises(BadArguments, match="is a symbolic link"):
        checkpoint.read_progress(str(directory))


def test_a_dataset_is_not_written_through_a_link_planted_where_it_is_written_first(tmp_path):
    elsewhere = tmp_path / "outside"
    elsewhere.mkdir()
    root = tmp_path / "shared" / "datasets" / "shapes"
    root.parent.mkdir(parents=True)
    for pid in range(os.getpid() - 2, os.getpid() + 3):  # the names the old code used
        (root.parent / f"shapes.partial-{pid}").symlink_to(elsewhere)
    data.write_dataset(
        str(root), DatasetSpec(classes=2, images_per_class=3, image_size=8, held_out=0.34, seed=0), **QUIET
    )
    assert list(elsewhere.iterdir()) == []
    assert not root.is_symlink() and data.check_dataset(str(root))["trainImages"] == 4
