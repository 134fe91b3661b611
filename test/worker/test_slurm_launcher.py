"""ringlab-slurm (ansible/roles/slurm/files/ringlab_slurm.py): how a Slurm job's end becomes outcome.json, and the
worker container's rendezvous from Slurm's environment. The e2e tests run it for real in a Slurm cluster."""

import base64
import importlib.util
import io
import os
import sys
from pathlib import Path

import pytest

ROLES = Path(__file__).resolve().parents[2] / "ansible" / "roles"
SCRIPT = ROLES / "slurm" / "files" / "ringlab_slurm.py"
# On the nodes ringlab_launcher_lib is installed beside it (/usr/local/lib/ringlab); here it is imported from the repo.
sys.path.insert(0, str(ROLES / "worker" / "files"))
_spec = importlib.util.spec_from_file_location("ringlab_slurm", SCRIPT)
ringlab_slurm = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ringlab_slurm)

# As `scontrol show job -o 3` printed it for a job stopped at its time limit (shortened).
TIMED_OUT = (
    "JobId=3 JobName=ringlab-r2 UserId=root(0) JobState=TIMEOUT Reason=TimeLimit Dependency=(null) "
    "ExitCode=143:0 RunTime=00:01:24 TimeLimit=00:01:00 NodeList=n-[0-1] BatchHost=n-0 NumNodes=2"
)
COMPLETED = "JobId=1 JobName=ringlab-r1 JobState=COMPLETED Reason=None ExitCode=0:0 NodeList=n-[0-1]"


def fields_of(line, job_dir="/var/lib/ringlab-slurm/r", result_file="/shared/runs/r/result.json"):
    fields = ringlab_slurm.parse_scontrol_record(line)
    fields["_job_dir"] = job_dir
    fields["_result_file"] = result_file
    return fields


def results_from(files):
    """read_result over a dict of the shared storage's files, as read_regular_file answers."""
    return lambda path: (files[path], None) if path in files else (None, f"file not found: {path}")


def test_a_timed_out_job_is_described_in_slurms_words():
    fields = ringlab_slurm.parse_scontrol_record(TIMED_OUT)
    assert ringlab_slurm.job_state(fields) == "TIMEOUT"
    assert (
        ringlab_slurm.describe_job("3", fields)
        == "ran as Slurm job 3, which ended TIMEOUT (reason: TimeLimit, exit code 143:0 (code:signal))"
    )


def test_a_completing_job_is_waited_for_and_a_cancelled_one_is_over():
    # COMPLETING: the steps (and their worker containers) may still be ending.
    assert "COMPLETING" not in ringlab_slurm.FINAL_STATES and "RUNNING" not in ringlab_slurm.FINAL_STATES
    assert {"CANCELLED", "COMPLETED", "FAILED", "NODE_FAIL", "TIMEOUT"} <= ringlab_slurm.FINAL_STATES


def test_the_batch_output_is_split_into_each_ranks_lines_by_sruns_labels():
    # As srun --label writes it with 12 tasks (labels padded to two digits), and slurmstepd's own line unlabelled.
    text = (
        " 0: node 0 of 12\n 1: node 1 of 12\n11: node 11 of 12\n 0: Iter #1: 3.1 img/sec\n"
        "slurmstepd: error: *** JOB 3 ON n-0 CANCELLED AT 2026-11-25T10:00:00 DUE TO TIME LIMIT ***\n"
        " 0:\n 1: no newline"
    )
    logs = ringlab_slurm.split_labelled_output(text, 12)
    assert logs[0] == "node 0 of 12\nIter #1: 3.1 img/sec\n\n"
    assert logs[1] == "node 1 of 12\nno newline"
    assert logs[11] == "node 11 of 12\n"
    assert logs[5] == ""
    assert "CANCELLED" not in "".join(logs.values())


def test_a_carriage_return_inside_a_ranks_line_stays_in_that_ranks_log():
    # A progress bar redrawn with "\r": without its own label after it, the text must not be lost or go elsewhere.
    logs = ringlab_slurm.split_labelled_output("0: step 1\r0: step 2\n1: 3: not a label\x0bmore\n", 2)
    assert logs[0] == "step 1\r0: step 2\n"
    assert logs[1] == "3: not a label\x0bmore\n"


def test_a_completed_job_gives_every_rank_ok_and_the_heads_result():
    files = {"/var/lib/ringlab-slurm/r/slurm-1.out": "0: head log\n1: worker log\n"}
    shared = {"/shared/runs/r/result.json": '{"job": "train"}'}
    outcome = ringlab_slurm.build_outcome(
        "r", "1", fields_of(COMPLETED), 2, ["n-0", "n-1"], files.get, results_from(shared)
    )
    assert [(rank["rank"], rank["host"], rank["ok"], rank["log"]) for rank in outcome["ranks"]] == [
        (0, "n-0", True, "head log\n"),
        (1, "n-1", True, "worker log\n"),
    ]
    assert base64.b64decode(outcome["ranks"][0]["result"]).decode() == '{"job": "train"}'
    assert outcome["ranks"][1]["result"] == ""
    assert outcome["slurm"]["state"] == "COMPLETED"
    assert outcome["slurm"]["batch_log"] == "0: head log\n1: worker log\n"


def test_a_completed_job_without_a_result_fails_on_the_head_only():
    files = {"/var/lib/ringlab-slurm/r/slurm-1.out": ""}
    outcome = ringlab_slurm.build_outcome(
        "r", "1", fields_of(COMPLETED), 2, ["n-0", "n-1"], files.get, results_from({})
    )
    head, other = outcome["ranks"]
    assert (head["ok"], other["ok"]) == (False, True)
    assert head["result_error"] == "file not found: /shared/runs/r/result.json"


def test_a_timed_out_job_fails_every_rank_with_slurms_reason_and_keeps_the_logs():
    files = {
        "/var/lib/ringlab-slurm/r/slurm-3.out": (
            "0: Iter #1\nslurmstepd: error: *** JOB 3 CANCELLED DUE TO TIME LIMIT ***\n"
        )
    }
    outcome = ringlab_slurm.build_outcome(
        "r", "3", fields_of(TIMED_OUT), 2, ["n-0", "n-1"], files.get, results_from({"/shared/runs/r/result.json": "{}"})
    )
    assert [rank["ok"] for rank in outcome["ranks"]] == [False, False]
    assert all("TIMEOUT (reason: TimeLimit" in rank["outcome"] for rank in outcome["ranks"])
    # A stale result of an earlier attempt is not read for a job that did not complete.
    assert outcome["ranks"][0]["result"] == ""
    assert outcome["ranks"][0]["log"] == "Iter #1\n"
    assert outcome["ranks"][1]["log"] == ""
    assert outcome["slurm"]["reason"] == "TimeLimit"
    assert "TIME LIMIT" in outcome["slurm"]["batch_log"]


def test_a_batch_output_that_is_missing_says_where_the_batch_step_ran():
    outcome = ringlab_slurm.build_outcome("r", "3", fields_of(TIMED_OUT), 2, ["n-0", "n-1"], {}.get, results_from({}))
    assert (
        outcome["ranks"][1]["log"]
        == "(no output: /var/lib/ringlab-slurm/r/slurm-3.out could not be read (the batch step ran on n-0))\n"
    )


def test_the_result_is_read_only_when_it_is_a_regular_file_of_its_own(tmp_path):
    """The result is on the shared storage: a link planted in its place (to the cluster's key, say) is not read by
    root and copied into the results, nor is a FIFO opened to hang the job."""
    secret = tmp_path / "id_ed25519"
    secret.write_text("PRIVATE KEY\n")
    result = tmp_path / "result.json"
    result.symlink_to(secret)
    assert ringlab_slurm.read_regular_file(str(result)) == (None, f"{result} is a link: not read")
    result.unlink()
    os.mkfifo(result)
    assert ringlab_slurm.read_regular_file(str(result)) == (None, f"{result} is not a regular file: not read")
    result.unlink()
    result.write_text('{"job": "allreduce"}')
    assert ringlab_slurm.read_regular_file(str(result)) == ('{"job": "allreduce"}', None)
    assert ringlab_slurm.read_regular_file(str(tmp_path / "none")) == (None, f"file not found: {tmp_path / 'none'}")


def test_the_containers_output_reaches_srun_a_whole_line_at_a_time():
    out = io.BytesIO()
    writes = []
    out.write = lambda data: writes.append(bytes(data))
    ringlab_slurm.write_whole_lines([b"node 0", b" of 2\nIter", b" #1\nIter #2\n", b"end"], out)
    assert writes == [b"node 0 of 2\n", b"Iter #1\nIter #2\n", b"end\n"]


def test_the_workers_rendezvous_comes_from_slurms_environment():
    config = {"env": {"GLOO_SOCKET_IFNAME": "eth0"}, "rdzv_port": 29400}
    slurm = {"SLURM_NNODES": "3", "SLURM_NODEID": "2", "SLURM_JOB_ID": "17", "SLURM_JOB_NODELIST": "n-[0-2]"}
    env = ringlab_slurm.worker_environment(config, slurm, "r1", 2, 1.5, "10.0.0.10")
    assert env == {
        "GLOO_SOCKET_IFNAME": "eth0",
        "RINGLAB_NUM_NODES": "3",
        "RINGLAB_NODE_RANK": "2",
        "RINGLAB_HEAD_ADDR": "10.0.0.10",
        "RINGLAB_RDZV_PORT": "29400",
        "RINGLAB_RUN_ID": "r1",
        "RINGLAB_SLURM_JOB_ID": "17",
        "RINGLAB_NPROC_PER_NODE": "2",
        "OMP_NUM_THREADS": "1",
    }
    # As the Ansible launcher: threads per process are the quota's share, rounded up.
    assert ringlab_slurm.worker_environment(config, slurm, "r1", None, 2.5, "h")["OMP_NUM_THREADS"] == "3"
    assert ringlab_slurm.worker_environment(config, slurm, "r1", None, 2.01, "h")["OMP_NUM_THREADS"] == "3"
    assert ringlab_slurm.worker_environment(config, slurm, "r1", 4, 2.0, "h")["OMP_NUM_THREADS"] == "1"
    assert "OMP_NUM_THREADS" not in ringlab_slurm.worker_environment(config, slurm, "r1", None, None, "h")


def test_the_runs_rendezvous_secret_reaches_the_worker_from_sbatchs_environment_and_nothing_else():
    config = {"env": {}, "rdzv_port": 29400}
    slurm = {"SLURM_NNODES": "2", "SLURM_NODEID": "1", "SLURM_JOB_ID": "17", "SLURM_JOB_NODELIST": "n-[0-1]"}
    secret = "0123456789abcdef0123456789abcdef"
    env = ringlab_slurm.worker_environment(config, {**slurm, "RINGLAB_RDZV_SECRET": secret}, "r1", None, None, "h")
    assert env["RINGLAB_RDZV_SECRET"] == secret
    assert "RINGLAB_RDZV_SECRET" not in ringlab_slurm.worker_environment(config, slurm, "r1", None, None, "h")


def test_the_head_is_the_first_node_of_the_job():
    expanded = {"n-[3,1]": ["n-3", "n-1"], "": []}
    assert (
        ringlab_slurm.head_address("n-[3,1]", resolve=lambda name: f"ip-of-{name}", hostnames=expanded.get)
        == "ip-of-n-3"
    )
    with pytest.raises(SystemExit, match="names no node"):
        ringlab_slurm.head_address("", hostnames=expanded.get)


def test_the_worker_command_line_passes_the_jobs_own_options_through():
    args = ringlab_slurm.parse_args(
        ["worker", "--run-id", "r1", "--cpus", "0.5", "train", "--model", "tiny", "--output", "/s/r.json"]
    )
    assert (args.run_id, args.cpus, args.procs_per_node, args.job, args.job_args) == (
        "r1",
        0.5,
        None,
        "train",
        ["--model", "tiny", "--output", "/s/r.json"],
    )
    with pytest.raises(SystemExit):
        ringlab_slurm.parse_args(["worker", "--run-id", "r1", "rm", "-rf"])


def test_the_job_script_is_written_whole_into_a_folder_made_afresh(tmp_path):
    root = tmp_path / "ringlab-slurm"
    root.mkdir(mode=0o700)
    folder = root / "r1"
    folder.mkdir()
    (folder / "slurm-7.out").write_text("an earlier attempt's output\n")
    ringlab_slurm.make_job_folder(str(folder))
    script = folder / "job.sbatch"
    ringlab_slurm.write_script(str(script), "#!/bin/bash\n#SBATCH --nodes=2\n")
    assert script.read_text() == "#!/bin/bash\n#SBATCH --nodes=2\n"
    assert script.stat().st_mode & 0o777 == 0o755 and folder.stat().st_mode & 0o777 == 0o700
    assert [p.name for p in folder.iterdir()] == ["job.sbatch"]


def test_a_job_folder_in_place_of_a_link_is_made_without_touching_what_the_link_names(tmp_path):
    root = tmp_path / "ringlab-slurm"
    root.mkdir(mode=0o700)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep").write_text("x")
    (root / "r1").symlink_to(elsewhere)
    ringlab_slurm.make_job_folder(str(root / "r1"))
    assert (elsewhere / "keep").read_text() == "x"
    assert (root / "r1").is_dir() and not (root / "r1").is_symlink()


@pytest.mark.parametrize("how", ["group-writable", "world-writable", "link", "missing"])
def test_no_job_script_is_written_under_a_folder_others_could_write_to(tmp_path, how):
    """Root runs the job script and reads Slurm's output there: a folder others can write (or swap) is refused."""
    root = tmp_path / "ringlab-slurm"
    if how == "link":
        (tmp_path / "real").mkdir(mode=0o700)
        root.symlink_to(tmp_path / "real")
    elif how != "missing":
        root.mkdir()
        root.chmod(0o770 if how == "group-writable" else 0o777)
    with pytest.raises(
        SystemExit,
        match="refusing to write the job script: .*"
        + {
            "group-writable": "can be written by others",
            "world-writable": "can be written by others",
            "link": "not a folder",
            "missing": "does not exist",
        }[how],
    ):
        ringlab_slurm.make_job_folder(str(root / "r1"))
    assert not (tmp_path / "real" / "r1").exists()


def test_the_job_script_is_not_written_through_a_link_planted_where_it_is_written_first(tmp_path):
    target = tmp_path / "outside"
    target.write_text("do not overwrite\n")
    target.chmod(0o600)
    script = tmp_path / "r1" / "job.sbatch"
    script.parent.mkdir()
    (script.parent / "job.sbatch").symlink_to(target)
    ringlab_slurm.write_script(str(script), "#!/bin/bash\n")
    assert target.read_text() == "do not overwrite\n" and target.stat().st_mode & 0o777 == 0o600
    assert not script.is_symlink() and script.read_text() == "#!/bin/bash\n"
