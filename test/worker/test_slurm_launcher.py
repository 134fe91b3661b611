"""ringlab-slurm (ansible/roles/slurm/files/ringlab_slurm.py): how a Slurm job's end becomes outcome.json, and the
worker container's rendezvous from Slurm's environment. The e2e tests run it for real in a Slurm cluster."""

import base64
import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "ansible" / "roles" / "slurm" / "files" / "ringlab_slurm.py"
_spec = importlib.util.spec_from_file_location("ringlab_slurm", SCRIPT)
ringlab_slurm = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ringlab_slurm)

# As `scontrol show job -o 3` printed it for a job stopped at its time limit (shortened).
TIMED_OUT = ("JobId=3 JobName=ringlab-r2 UserId=root(0) JobState=TIMEOUT Reason=TimeLimit Dependency=(null) "
             "ExitCode=143:0 RunTime=00:01:24 TimeLimit=00:01:00 NodeList=n-[0-1] BatchHost=n-0 NumNodes=2")
COMPLETED = "JobId=1 JobName=ringlab-r1 JobState=COMPLETED Reason=None ExitCode=0:0 NodeList=n-[0-1]"


def fields_of(line, run_dir="/shared/runs/r"):
    fields = ringlab_slurm.parse_scontrol_record(line)
    fields["_run_dir"] = run_dir
    fields["_result_file"] = f"{run_dir}/result.json"
    return fields


def test_a_timed_out_job_is_described_in_slurms_words():
    fields = ringlab_slurm.parse_scontrol_record(TIMED_OUT)
    assert ringlab_slurm.job_state(fields) == "TIMEOUT"
    assert ringlab_slurm.describe_job("3", fields) == \
        "ran as Slurm job 3, which ended TIMEOUT (reason: TimeLimit, exit code 143:0 (code:signal))"


def test_a_completing_job_is_waited_for_and_a_cancelled_one_is_over():
    # COMPLETING: the steps (and their worker containers) may still be ending.
    assert "COMPLETING" not in ringlab_slurm.FINAL_STATES and "RUNNING" not in ringlab_slurm.FINAL_STATES
    assert {"CANCELLED", "COMPLETED", "FAILED", "NODE_FAIL", "TIMEOUT"} <= ringlab_slurm.FINAL_STATES


def test_a_completed_job_gives_every_rank_ok_and_the_heads_result():
    files = {"/shared/runs/r/rank-0.log": "head log\n", "/shared/runs/r/rank-1.log": "worker log\n",
             "/shared/runs/r/result.json": '{"job": "train"}', "/shared/runs/r/slurm-1.out": ""}
    outcome = ringlab_slurm.build_outcome("r", "1", fields_of(COMPLETED), 2, ["n-0", "n-1"], files.get)
    assert [(rank["rank"], rank["host"], rank["ok"], rank["log"]) for rank in outcome["ranks"]] == \
        [(0, "n-0", True, "head log\n"), (1, "n-1", True, "worker log\n")]
    assert base64.b64decode(outcome["ranks"][0]["result"]).decode() == '{"job": "train"}'
    assert outcome["ranks"][1]["result"] == ""
    assert outcome["slurm"]["state"] == "COMPLETED"


def test_a_completed_job_without_a_result_fails_on_the_head_only():
    files = {"/shared/runs/r/rank-0.log": "", "/shared/runs/r/rank-1.log": ""}
    outcome = ringlab_slurm.build_outcome("r", "1", fields_of(COMPLETED), 2, ["n-0", "n-1"], files.get)
    head, other = outcome["ranks"]
    assert (head["ok"], other["ok"]) == (False, True)
    assert head["result_error"] == "/shared/runs/r/result.json could not be read"


def test_a_timed_out_job_fails_every_rank_with_slurms_reason_and_keeps_the_logs():
    files = {"/shared/runs/r/rank-0.log": "Iter #1\n", "/shared/runs/r/result.json": "{}",
             "/shared/runs/r/slurm-3.out": "*** JOB 3 CANCELLED DUE TO TIME LIMIT ***\n"}
    outcome = ringlab_slurm.build_outcome("r", "3", fields_of(TIMED_OUT), 2, ["n-0", "n-1"], files.get)
    assert [rank["ok"] for rank in outcome["ranks"]] == [False, False]
    assert all("TIMEOUT (reason: TimeLimit" in rank["outcome"] for rank in outcome["ranks"])
    # A stale result of an earlier attempt is not read for a job that did not complete.
    assert outcome["ranks"][0]["result"] == ""
    assert outcome["ranks"][1]["log"] == "(no log: /shared/runs/r/rank-1.log could not be read)\n"
    assert outcome["slurm"]["reason"] == "TimeLimit"
    assert "TIME LIMIT" in outcome["slurm"]["batch_log"]


def test_the_workers_rendezvous_comes_from_slurms_environment():
    config = {"env": {"GLOO_SOCKET_IFNAME": "eth0"}, "rdzv_port": 29400}
    slurm = {"SLURM_NNODES": "3", "SLURM_NODEID": "2", "SLURM_JOB_ID": "17", "SLURM_JOB_NODELIST": "n-[0-2]"}
    env = ringlab_slurm.worker_environment(config, slurm, "r1", 2, 1.5, "10.0.0.10")
    assert env == {"GLOO_SOCKET_IFNAME": "eth0", "RINGLAB_NUM_NODES": "3", "RINGLAB_NODE_RANK": "2",
                   "RINGLAB_HEAD_ADDR": "10.0.0.10", "RINGLAB_RDZV_PORT": "29400", "RINGLAB_RUN_ID": "r1",
                   "RINGLAB_SLURM_JOB_ID": "17", "RINGLAB_NPROC_PER_NODE": "2", "OMP_NUM_THREADS": "1"}
    # As the Ansible launcher: threads per process are the quota's share, rounded up.
    assert ringlab_slurm.worker_environment(config, slurm, "r1", None, 2.5, "h")["OMP_NUM_THREADS"] == "3"
    assert ringlab_slurm.worker_environment(config, slurm, "r1", None, 2.01, "h")["OMP_NUM_THREADS"] == "3"
    assert ringlab_slurm.worker_environment(config, slurm, "r1", 4, 2.0, "h")["OMP_NUM_THREADS"] == "1"
    assert "OMP_NUM_THREADS" not in ringlab_slurm.worker_environment(config, slurm, "r1", None, None, "h")


def test_the_head_is_the_first_node_of_the_job():
    expanded = {"n-[3,1]": ["n-3", "n-1"], "": []}
    assert ringlab_slurm.head_address("n-[3,1]", resolve=lambda name: f"ip-of-{name}", hostnames=expanded.get) == "ip-of-n-3"
    with pytest.raises(SystemExit, match="names no node"):
        ringlab_slurm.head_address("", hostnames=expanded.get)


def test_the_worker_command_line_passes_the_jobs_own_options_through():
    args = ringlab_slurm.parse_args(["worker", "--run-id", "r1", "--cpus", "0.5", "train", "--model", "tiny", "--output", "/s/r.json"])
    assert (args.run_id, args.cpus, args.procs_per_node, args.job, args.job_args) == \
        ("r1", 0.5, None, "train", ["--model", "tiny", "--output", "/s/r.json"])
    with pytest.raises(SystemExit):
        ringlab_slurm.parse_args(["worker", "--run-id", "r1", "rm", "-rf"])


def test_the_job_script_is_written_whole_into_a_folder_made_for_it(tmp_path):
    script = tmp_path / "runs" / "r1" / "job.sbatch"
    ringlab_slurm.write_script(str(script), "#!/bin/bash\n#SBATCH --nodes=2\n")
    assert script.read_text() == "#!/bin/bash\n#SBATCH --nodes=2\n"
    assert script.stat().st_mode & 0o777 == 0o755
    assert [p.name for p in script.parent.iterdir()] == ["job.sbatch"]


@pytest.mark.parametrize("planted", ["job.sbatch", "job.sbatch.partial"])
def test_the_job_script_is_not_written_through_a_link_planted_in_the_shared_folder(tmp_path, planted):
    """The run folder is on storage other users may write to: a link planted at the script's path (or where it
    is written first) is replaced, and the file it points to (written as root otherwise) is left alone."""
    target = tmp_path / "outside"
    target.write_text("do not overwrite\n")
    target.chmod(0o600)
    script = tmp_path / "runs" / "r1" / "job.sbatch"
    script.parent.mkdir(parents=True)
    (script.parent / planted).symlink_to(target)
    ringlab_slurm.write_script(str(script), "#!/bin/bash\n")
    assert target.read_text() == "do not overwrite\n" and target.stat().st_mode & 0o777 == 0o600
    assert not script.is_symlink() and script.read_text() == "#!/bin/bash\n"
    assert script.stat().st_mode & 0o777 == 0o755
    assert {p.name for p in script.parent.iterdir()} == {"job.sbatch", planted}  # no temporary file left
