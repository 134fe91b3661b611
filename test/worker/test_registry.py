"""registry.json against the worker's command line: every option of `train` is a campaign knob or a worker-only flag,
with the registry's default and choices; the campaign's ranges are inside the worker's; and the worker refuses what
the knobs' `needs` and `excludes` rule out. No torch: the command line is checked before torch is imported."""

import argparse
import json
import subprocess
import sys

import pytest
from conftest import WORKER_DIR, base_env
from ringlab_worker import cli, registry, result
from ringlab_worker.errors import BadArguments
from ringlab_worker.result import LAUNCHED_AT_ENV

KNOBS = registry.TRAIN_KNOBS
FLAG = {name: knob["flag"] for name, knob in KNOBS.items()}


def subparser(job: str) -> argparse.ArgumentParser:
    actions = cli.build_parser()._actions
    return next(action for action in actions if isinstance(action, argparse._SubParsersAction)).choices[job]


def options(job: str) -> dict:
    """Flag -> its argparse action, for every option of `job` but --help, by its name (an old name after it aside)."""
    return {
        action.option_strings[0]: action
        for action in subparser(job)._actions
        if action.option_strings and not isinstance(action, argparse._HelpAction)
    }


def test_the_registry_and_the_command_line_load_without_torch():
    check = (
        "import sys; from ringlab_worker import cli; cli.build_parser().parse_args(['train']); "
        "assert 'torch' not in sys.modules, 'torch imported'"
    )
    done = subprocess.run([sys.executable, "-c", check], env=base_env(), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_parallelism_takes_the_registrys_layouts_each_with_its_module_in_parallel():
    from ringlab_worker.parallel import TECHNIQUES

    data = json.loads((WORKER_DIR / "ringlab_worker" / "registry.json").read_text())
    assert registry.LAYOUTS == tuple(data["layouts"]) == registry.knob_choices("parallelism")
    assert [layout for layout in registry.LAYOUTS if layout not in TECHNIQUES] == []


def test_the_registry_is_the_file_beside_the_package_and_lists_models_and_reductions_in_its_order():
    data = json.loads((WORKER_DIR / "ringlab_worker" / "registry.json").read_text())
    assert registry.MODELS == tuple(data["models"]) and registry.REDUCTIONS == tuple(data["reductions"])
    assert (
        set(registry.NATIVE_IMAGE_SIZE) | set(registry.LANGUAGE_SHAPE)
        == set(registry.MODELS)
        == set(registry.PARAMETER_COUNT)
    )
    assert not set(registry.NATIVE_IMAGE_SIZE) & set(registry.LANGUAGE_SHAPE)
    assert registry.TRAIN_KNOBS == data["trainKnobs"] and registry.WORKER_ONLY == data["workerOnly"]


def test_every_reduction_and_knob_reaches_the_record_and_passes_its_schema():
    # The result schema listed three reductions after powersgd and local-sgd were added, and asyncStaleness was left
    # out of the record: the registry is the list both must follow.
    schema = json.loads((WORKER_DIR / "result.schema.json").read_text())
    assert tuple(schema["properties"]["knobs"]["properties"]["reduction"]["enum"]) == registry.REDUCTIONS
    assert set(KNOBS) <= set(result._KNOB_NAMES.values())


def test_every_train_option_is_a_campaign_knob_or_a_worker_only_flag_and_each_of_those_is_an_option():
    knob_flags = list(FLAG.values())
    assert len(set(knob_flags)) == len(knob_flags), "two knobs with one flag"
    assert not set(knob_flags) & set(registry.WORKER_ONLY), "a flag both a knob and worker-only"
    assert set(options("train")) == set(knob_flags) | set(registry.WORKER_ONLY)


def test_every_knob_has_the_registry_default_and_choices_on_the_command_line():
    train = options("train")
    for name, knob in KNOBS.items():
        action = train[knob["flag"]]
        if knob["type"] == "switch":
            assert isinstance(action, argparse._StoreTrueAction) and knob["default"] is False, name
            continue
        assert action.default == knob["default"] and type(action.default) is type(knob["default"]), name
        if knob["type"] == "enum" and name != "data":
            assert tuple(action.choices) == registry.knob_choices(name), name
    # The worker's data is a source: synthetic (the campaign's default), folder:PATH or dataset:NAME.
    assert train["--data"].default == "synthetic" and train["--data"].choices is None


def test_the_models_and_reductions_offered_are_the_registry_s_in_its_order():
    assert tuple(options("train")["--model"].choices) == registry.MODELS
    for job in ("train", "allreduce"):
        assert tuple(options(job)["--reduction"].choices) == registry.REDUCTIONS


def test_the_record_names_each_knob_as_the_campaign_does():
    train = options("train")
    for name, knob in KNOBS.items():
        assert result.knobs_of(argparse.Namespace(**{train[knob["flag"]].dest: 1})) == {name: 1}


def _inside(knob: dict) -> list:
    """Values at the ends of a knob's campaign range (or inside an open end), as command-line text."""
    number = int if knob["type"] == "int" else float
    ends = [knob[key] for key in ("min", "max") if key in knob]
    if "gt" in knob:
        ends.append(knob["gt"] + (1 if knob["type"] == "int" else 1e-6))
    if "lt" in knob:
        ends.append(knob["lt"] - (1 if knob["type"] == "int" else 1e-6))
    return [str(number(end)) for end in ends] or ["1"]


@pytest.mark.parametrize(
    "name", [name for name, knob in KNOBS.items() if knob["type"] in ("int", "number", "enum") and name != "data"]
)
def test_the_worker_takes_every_value_of_the_campaign_s_range(name):
    knob = KNOBS[name]
    values = list(registry.knob_choices(name)) if knob["type"] == "enum" else _inside(knob)
    for value in values:
        args = cli.build_parser().parse_args(["train", knob["flag"], value])
        assert getattr(args, options("train")[knob["flag"]].dest) == (
            value if knob["type"] == "enum" else (int if knob["type"] == "int" else float)(value)
        )


def _sample(name: str, data_folder: str) -> list:
    """Command-line arguments that set knob `name` to a value the worker takes."""
    knob = KNOBS[name]
    if knob["type"] == "switch":
        return [knob["flag"]]
    if name == "data":
        return [knob["flag"], f"folder:{data_folder}"]
    if knob["type"] == "enum":
        return [knob["flag"], registry.knob_choices(name)[-1]]
    # A value other than the default: the default is what the worker does without the knob (it is not set).
    number = int if knob["type"] == "int" else float
    return [knob["flag"], next(value for value in _inside(knob) + ["7"] if number(value) != knob["default"])]


def _with_needs(names, left_out: str, data_folder: str) -> list:
    """Arguments that set `names` and, transitively, the knobs they need, except `left_out`. Time to train
    (epochs) trains over a dataset: it comes with --data folder:PATH."""
    wanted, todo = [], list(names)
    while todo:
        name = todo.pop(0)
        if name != left_out and name not in wanted:
            wanted.append(name)
            todo.extend(KNOBS[name].get("needs", []))
    if "epochs" in wanted and "data" not in wanted:
        wanted.append("data")
    return ["train", "--device", "cpu"] + [arg for name in wanted for arg in _sample(name, data_folder)]


def _refusal(argv: list, monkeypatch, capsys) -> str:
    """What the worker says when it refuses `argv` (exit 2), checked both through check_arguments and main."""
    monkeypatch.delenv("RINGLAB_NUM_NODES", raising=False)
    monkeypatch.delenv("RINGLAB_SHARED_DIR", raising=False)
    monkeypatch.setenv(LAUNCHED_AT_ENV, "2000-01-01T00:00:00.000Z")  # main sets it otherwise, for good
    with pytest.raises(BadArguments) as refused:
        cli.check_arguments(cli.build_parser().parse_args(argv))
    assert refused.value.exit_code == 2
    assert cli.main(argv) == 2
    assert f"ringlab-worker: error: {refused.value}" in capsys.readouterr().err
    return str(refused.value)


NEEDS = [(name, other) for name, knob in KNOBS.items() for other in knob.get("needs", [])]
EXCLUDES = [(name, other) for name, knob in KNOBS.items() for other in knob.get("excludes", []) if name < other]


@pytest.mark.parametrize("name, other", NEEDS)
def test_a_knob_without_the_knob_it_needs_is_refused(name, other, tmp_path, monkeypatch, capsys):
    message = _refusal(_with_needs([name], other, str(tmp_path)), monkeypatch, capsys)
    assert FLAG[name] in message
    assert f"needs {FLAG[other]}" in message


def test_checkpoints_without_epochs_are_refused_also_where_output_gives_them_a_folder(tmp_path, monkeypatch, capsys):
    # --output gives --checkpoint-every a folder beside the result; a throughput run (no --epochs) took the flag and
    # wrote no checkpoint, where the campaign refuses the same knob.
    argv = ["train", "--device", "cpu", "--checkpoint-every", "5", "--output", str(tmp_path / "result.json")]
    assert _refusal(argv, monkeypatch, capsys) == "--checkpoint-every needs --epochs (time to train)"


@pytest.mark.parametrize("name, other", EXCLUDES)
def test_knobs_that_exclude_each_other_are_refused_together(name, other, tmp_path, monkeypatch, capsys):
    assert name in KNOBS[other].get("excludes", []), "excludes goes both ways"
    message = _refusal(_with_needs([name, other], "", str(tmp_path)), monkeypatch, capsys)
    assert FLAG[name] in message and FLAG[other] in message


def test_the_knob_rules_are_all_tested():
    assert NEEDS and EXCLUDES  # a registry without them would leave the two tests above empty


def _violating(rule) -> list:
    """Command-line arguments that meet a rule's `if` and break its `then` (the first allowed-elsewhere value)."""
    argv = ["train", "--device", "cpu"]
    for axis, values in rule["if"].items():
        argv += (
            ["--model", "small" if values == ["image"] else "gpt-nano"]
            if axis == "model"
            else _sample_value(axis, values[-1])
        )
    knob, allowed = next(iter(rule["then"].items()))
    candidates = {"switch": [True], "int": [3]}.get(KNOBS[knob]["type"]) or list(registry.knob_choices(knob))
    value = next(candidate for candidate in candidates if candidate not in allowed)
    return argv + _sample_value(knob, value)


def _sample_value(knob: str, value) -> list:
    flag = KNOBS[knob]["flag"]
    return [flag] if value is True else [flag, str(value)]


@pytest.mark.parametrize(
    "rule", registry.RULES, ids=lambda rule: f"{next(iter(rule['if']))}->{next(iter(rule['then']))}"
)
def test_every_rule_of_the_registry_is_refused_with_its_reason(rule, monkeypatch, capsys):
    argv = _violating(rule)
    if "--model" not in argv:
        argv += ["--model", "gpt-nano" if "--parallelism" in argv else "small"]
    message = _refusal(argv, monkeypatch, capsys)
    assert message.endswith(rule["because"])


def test_the_probe_has_nccl_tests_bus_factor_for_every_collective_of_the_registry():
    from ringlab_worker.allreduce import BUS_FACTOR, PATTERNS

    assert tuple(BUS_FACTOR) == registry.COLLECTIVES
    assert set(PATTERNS) | {"all-reduce"} == set(registry.COLLECTIVES)
    assert options("allreduce")["--collective"].choices == registry.COLLECTIVES
