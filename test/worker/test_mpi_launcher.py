"""ringlab-mpi (ansible/roles/mpi/files/ringlab_mpi.py): the worker container's place in the job from Open MPI's
environment, the hostfile, how mpirun's tagged output and exit become outcome.json, and which processes a cancel
stops. The mpirun output below is Open MPI 4.1.4's (Debian 12), as it printed it. The e2e tests run it for real."""

import base64
import importlib.util
import sys
from pathlib import Path

import pytest

ROLES = Path(__file__).resolve().parents[2] / "ansible" / "roles"
SCRIPT = ROLES / "mpi" / "files" / "ringlab_mpi.py"
# On the nodes ringlab_launcher_lib is installed beside it (/usr/local/lib/ringlab); here it is imported from the repo.
sys.path.insert(0, str(ROLES / "worker" / "files"))
_spec = importlib.util.spec_from_file_location("ringlab_mpi", SCRIPT)
ringlab_mpi = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ringlab_mpi)

RESULT = "/shared/runs/r/result.json"
# Rank 1 exited with code 3 (mpirun --tag-output, both ranks on one host).
FAILED = """[1,0]<stdout>:node 0 of 2
[1,1]<stdout>:node 1 of 2
[1,1]<stderr>:Traceback (most recent call last):
--------------------------------------------------------------------------
Primary job  terminated normally, but 1 process returned
a non-zero exit code. Per user-direction, the job has been aborted.
--------------------------------------------------------------------------
--------------------------------------------------------------------------
mpirun detected that one or more processes exited with non-zero status, thus causing
the job to be terminated. The first process to do so was:

  Process name: [[30097,1],1]
  Exit code:    3
--------------------------------------------------------------------------
"""


def results_from(files):
    """read_result over a dict of the shared storage's files, as read_regular_file answers."""
    return lambda path: (files[path], None) if path in files else (None, f"file not found: {path}")


def outcome_of(exit_code, output, timed_out=False, files=None):
    return ringlab_mpi.build_outcome(
        "r",
        ["n-0", "n-1"],
        exit_code,
        timed_out,
        600.0,
        output,
        RESULT,
        results_from(files or {}),
        "10.0.0.10 slots=1\n10.0.0.11 slots=1\n",
    )


def test_the_workers_place_comes_from_open_mpis_environment_and_the_head_from_the_hostfile():
    ompi = {"OMPI_COMM_WORLD_SIZE": "3", "OMPI_COMM_WORLD_RANK": "2", "OMPI_COMM_WORLD_LOCAL_RANK": "0"}
    assert ringlab_mpi.placement(ompi, "10.0.0.10") == {
        "RINGLAB_NUM_NODES": "3",
        "RINGLAB_NODE_RANK": "2",
        "RINGLAB_HEAD_ADDR": "10.0.0.10",
    }


def test_the_container_gets_open_mpis_and_pmixs_settings_and_nothing_else_of_the_ranks_environment():
    env = {
        "OMPI_COMM_WORLD_RANK": "1",
        "PMIX_SERVER_URI4": "1.0;tcp4://127.0.0.1:5000",
        "OPAL_PREFIX": "/usr",
        "PMIX_MCA_gds": "ds21",
        "HOME": "/root",
        "SSH_AUTH_SOCK": "/tmp/agent",
        "RINGLAB_NODE_RANK": "9",
    }
    assert ringlab_mpi.mpi_environment(env) == {
        "OMPI_COMM_WORLD_RANK": "1",
        "PMIX_SERVER_URI4": "1.0;tcp4://127.0.0.1:5000",
        "OPAL_PREFIX": "/usr",
        # PMIx's shared-memory store is in the daemon's session folder, which the container does not see.
        "PMIX_MCA_gds": "hash",
    }


@pytest.mark.parametrize(
    "env, problem",
    [
        (
            {},
            "runs as a process that mpirun starts; "
            "OMPI_COMM_WORLD_SIZE, OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_LOCAL_RANK unset",
        ),
        (
            {"OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_RANK": "2", "OMPI_COMM_WORLD_LOCAL_RANK": "0"},
            "is not a place in the job",
        ),
        # Two ranks on one node would start the same container.
        (
            {"OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_LOCAL_RANK": "1"},
            "every node runs one",
        ),
    ],
)
def test_a_worker_not_placed_one_per_node_by_mpirun_refuses_to_start(env, problem):
    with pytest.raises(SystemExit, match=problem):
        ringlab_mpi.placement(env, "10.0.0.10")


def test_the_hostfile_lists_each_node_once_with_one_slot_in_rank_order():
    assert ringlab_mpi.hostfile_text(["10.0.0.10", "10.0.0.11"]) == "10.0.0.10 slots=1\n10.0.0.11 slots=1\n"
    with pytest.raises(ValueError):
        ringlab_mpi.hostfile_text(["10.0.0.10 slots=8"])


def test_nodes_are_names_with_addresses_and_nothing_else():
    assert ringlab_mpi.parse_args(
        [
            "launch",
            "/var/lib/ringlab-mpi/r/mpirun.sh",
            "--run-id",
            "r",
            "--result",
            RESULT,
            "--timeout",
            "60",
            "--nodes",
            "n-0=10.0.0.10",
            "n-1=10.0.0.11",
        ]
    ).nodes == [("n-0", "10.0.0.10"), ("n-1", "10.0.0.11")]
    for bad in ["n-0", "n-0=", "=10.0.0.10", "n 0=10.0.0.10", "n-0=10.0.0.10 slots=4", "n-0=-oProxyCommand=x"]:
        with pytest.raises(SystemExit):
            ringlab_mpi.parse_args(
                ["launch", "s", "--run-id", "r", "--result", RESULT, "--timeout", "1", "--nodes", bad]
            )


def test_the_worker_command_line_passes_the_jobs_own_options_through():
    args = ringlab_mpi.parse_args(
        [
            "worker",
            "--run-id",
            "r1",
            "--head-addr",
            "10.0.0.10",
            "--cpus",
            "0.5",
            "train",
            "--model",
            "tiny",
            "--output",
            "/s/r.json",
        ]
    )
    assert (args.run_id, args.head_addr, args.cpus, args.procs_per_node, args.job, args.job_args) == (
        "r1",
        "10.0.0.10",
        0.5,
        None,
        "train",
        ["--model", "tiny", "--output", "/s/r.json"],
    )
    with pytest.raises(SystemExit):
        ringlab_mpi.parse_args(["worker", "--run-id", "r1", "--head-addr", "h", "rm", "-rf"])


def test_mpiruns_output_is_split_into_each_ranks_lines_by_its_tags():
    logs, own = ringlab_mpi.split_tagged_output(FAILED, 2)
    assert logs == {0: "node 0 of 2\n", 1: "node 1 of 2\nTraceback (most recent call last):\n"}
    assert own.startswith("-----") and "Exit code:    3" in own and "[1," not in own


def test_a_line_that_came_in_parts_between_other_ranks_pieces_is_put_together():
    # As mpirun printed two ranks writing "partial " and "rest\n" apart, and a print() in several writes.
    text = (
        "[1,0]<stdout>:partial [1,1]<stdout>:rank 1 size 2\n"
        "[1,1]<stdout>:partial [1,0]<stdout>:rest\n"
        "[1,1]<stdout>:rest\n"
        "[1,0]<stdout>:worker [1,0]<stderr>:to stderr\n"
        "[1,0]<stdout>:size 1\r50%\n"
        "[1,1]<stdout>:killed mid-line"
    )
    logs, own = ringlab_mpi.split_tagged_output(text, 2)
    assert logs[0] == "partial rest\nto stderr\nworker size 1\r50%\n"
    assert logs[1] == "rank 1 size 2\npartial rest\nkilled mid-line"
    assert own == ""


def test_a_rank_mpirun_does_not_know_and_untagged_lines_are_mpiruns_own():
    logs, own = ringlab_mpi.split_tagged_output(
        "ssh: connect to host 10.0.0.11 port 22: Connection refused\n[1,7]<stdout>:x\n", 2
    )
    assert logs == {0: "", 1: ""}
    assert own == "ssh: connect to host 10.0.0.11 port 22: Connection refused\nx\n"


def test_a_completed_job_gives_every_rank_ok_and_the_heads_result():
    output = "[1,0]<stdout>:head log\n[1,1]<stdout>:worker log\n"
    outcome = outcome_of(0, output, files={RESULT: '{"job": "train"}'})
    assert [(rank["rank"], rank["host"], rank["ok"], rank["outcome"], rank["log"]) for rank in outcome["ranks"]] == [
        (0, "n-0", True, "exited with code 0", "head log\n"),
        (1, "n-1", True, "exited with code 0", "worker log\n"),
    ]
    assert base64.b64decode(outcome["ranks"][0]["result"]).decode() == '{"job": "train"}'
    assert outcome["ranks"][1]["result"] == "" and outcome["ranks"][1]["result_file"] == ""
    assert outcome["mpi"] == {
        "exit_code": 0,
        "timed_out": False,
        "nodes": ["n-0", "n-1"],
        "hostfile": "10.0.0.10 slots=1\n10.0.0.11 slots=1\n",
        "description": "ran under mpirun, which exited with code 0",
        "output": output,
    }
    # The keys every launcher's outcome.json has for a rank (roles/worker/tasks/job.yml).
    assert set(outcome["ranks"][0]) == {
        "run_id",
        "rank",
        "host",
        "ok",
        "outcome",
        "log",
        "result",
        "result_error",
        "result_file",
    }


def test_a_completed_job_without_a_result_fails_on_the_head_only():
    head, other = outcome_of(0, "")["ranks"]
    assert (head["ok"], other["ok"]) == (False, True)
    assert head["result_error"] == f"file not found: {RESULT}"


def test_a_failed_rank_is_named_in_mpiruns_words_and_fails_the_job_on_every_rank():
    outcome = outcome_of(3, FAILED, files={RESULT: "{}"})
    head, failed = outcome["ranks"]
    assert (head["ok"], failed["ok"]) == (False, False)
    assert failed["outcome"] == "exited with code 3, and mpirun ended the job"
    assert outcome["mpi"]["description"] == (
        "ran under mpirun, which exited with code 3; rank 1 (n-1) was the first to fail, with exit code 3 "
        "(mpirun: Primary job terminated normally, but 1 process returned a non-zero exit code. Per user-direction, "
        "the job has been aborted.)"
    )
    assert head["outcome"] == outcome["mpi"]["description"]
    # A stale result of an earlier attempt is not read for a job that did not complete.
    assert head["result"] == "" and head["result_error"] == f"{RESULT} was not read"


def test_mpirun_that_could_not_reach_a_node_is_explained_by_ssh_and_mpirun():
    output = (
        "ssh: connect to host 10.0.0.11 port 22: Connection refused\n"
        "--------------------------------------------------------------------------\n"
        "ORTE was unable to reliably start one or more daemons.\n"
        "This usually is caused by:\n\n* not finding the required libraries\n"
    )
    outcome = outcome_of(1, output)
    assert (
        outcome["mpi"]["description"] == "ran under mpirun, which exited with code 1 "
        "(mpirun: ssh: connect to host 10.0.0.11 port 22: Connection refused)"
    )
    assert [rank["log"] for rank in outcome["ranks"]] == ["", ""]


def test_a_timed_out_job_is_worded_as_the_ansible_launchers_and_keeps_the_logs():
    outcome = outcome_of(1, "[1,0]<stdout>:Iter #1\n", timed_out=True, files={RESULT: "{}"})
    assert [rank["outcome"] for rank in outcome["ranks"]] == ["timed out after 600 s and was stopped"] * 2
    assert outcome["ranks"][0]["log"] == "Iter #1\n" and not outcome["ranks"][0]["ok"]
    assert outcome["mpi"]["description"] == "ran under mpirun, which was stopped after 600 s (the run's time limit)"


def test_mpirun_killed_by_a_signal_and_an_unreadable_output_are_said_so():
    outcome = outcome_of(-9, None)
    assert outcome["mpi"]["description"] == "ran under mpirun, which was killed by signal 9"
    assert outcome["ranks"][1]["log"] == "(no output: mpirun.out could not be read)\n"


def test_mpiruns_words_are_one_line_and_bounded():
    assert ringlab_mpi.mpirun_words("----\n\n  a  b\nc\n\nd\n") == "a b c"
    assert ringlab_mpi.mpirun_words("") == ""
    assert len(ringlab_mpi.mpirun_words("x" * 1000)) == ringlab_mpi.WORDS_MAX


def test_a_cancel_stops_every_launch_and_only_the_mpiruns_whose_launch_is_gone():
    processes = {
        10: (1, ["/usr/bin/python3", "/usr/local/bin/ringlab-mpi", "launch", "/var/lib/ringlab-mpi/r1/mpirun.sh"]),
        11: (10, ["mpirun", "--allow-run-as-root", "--hostfile", "/var/lib/ringlab-mpi/r1/hostfile", "-np", "2"]),
        # Its launch was killed: the orphan is stopped itself.
        21: (1, ["mpirun", "--hostfile", "/var/lib/ringlab-mpi/r2/hostfile"]),
        # Not ringlab's: another mpirun, a worker, something named alike.
        30: (1, ["mpirun", "--hostfile", "/home/me/hostfile"]),
        31: (1, ["/usr/bin/python3", "/usr/local/bin/ringlab-mpi", "worker", "--run-id", "r1"]),
        32: (1, ["mpirun", "--hostfile", "/var/lib/ringlab-mpi/hostfile"]),
        33: (1, ["bash", "-c", "mpirun --hostfile /var/lib/ringlab-mpi/r3/hostfile"]),
        34: (1, []),
    }
    # 11 is left to its launch: a second SIGTERM would make mpirun exit at once, without ending its ranks.
    assert ringlab_mpi.targets(processes) == [10, 21]


def test_the_job_folder_is_refused_where_others_could_write_and_named_for_mpi(tmp_path):
    root = tmp_path / "ringlab-mpi"
    root.mkdir()
    root.chmod(0o777)
    with pytest.raises(SystemExit, match="ringlab-mpi: refusing to write the job script: .* can be written by others"):
        ringlab_mpi.lib.make_job_folder(str(root / "r1"), "ringlab-mpi", ringlab_mpi.CONFIGURE_HINT)
    with pytest.raises(SystemExit, match=r"does not exist \(the mpi role makes it: run `ringlab configure --mpi`\)"):
        ringlab_mpi.lib.make_job_folder(str(tmp_path / "none" / "r1"), "ringlab-mpi", ringlab_mpi.CONFIGURE_HINT)


def test_mpirun_past_the_time_limit_gets_sigterm_and_one_that_ignores_it_sigkill(tmp_path):
    """run_until_done with a stand-in for mpirun.sh (a real mpirun: tried by hand, and in the e2e tests)."""
    out = tmp_path / "out"
    script = tmp_path / "mpirun.sh"
    script.write_text("trap 'echo got TERM; exit 143' TERM\necho started\nsleep 60 & wait\n")
    with open(out, "wb") as handle:
        assert ringlab_mpi.run_until_done(["/bin/bash", str(script)], str(tmp_path), handle.fileno(), 0.2, grace=5) == (
            143,
            True,
            None,
        )
    assert out.read_text() == "started\ngot TERM\n"
    script.write_text("trap '' TERM\nsleep 60\n")
    with open(out, "wb") as handle:
        assert ringlab_mpi.run_until_done(
            ["/bin/bash", str(script)], str(tmp_path), handle.fileno(), 0.2, grace=0.5
        ) == (-9, True, None)
