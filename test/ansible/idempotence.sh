#!/usr/bin/env bash
# Converge-then-idempotence test of ringlab's Ansible (what molecule would do), against a real local testbed
# of three node containers, reached over SSH: site.yml as a Slurm cluster, then `ringlab configure --slurm`, which
# must change nothing on any node and say so. Then verifies the state from inside the nodes, shape.yml, run.yml,
# Slurm jobs, stop-workers.yml, and that bad inventories fail fast.
#
# Usage: test/ansible/idempotence.sh        (from anywhere; needs docker, ansible-playbook, node)
#   By itself it brings up a testbed of its own (`ringlab up`), labeled with its own name and removed on exit, also
#   on failure or Ctrl-C, and converges it the first time itself. With RINGLAB_IDEMPOTENCE_STATE_DIR and
#   RINGLAB_IDEMPOTENCE_TESTBED it works on that state folder's 3-node local testbed instead (the e2e tests' own,
#   whose first converge was their `ringlab configure --slurm`) and leaves it up, unshaped, without workers or Slurm
#   jobs.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export ANSIBLE_CONFIG="$repo/ansible/ansible.cfg"
export ANSIBLE_NOCOLOR=1 ANSIBLE_FORCE_COLOR=0
# Every job's rendezvous id (run.yml requires one; ringlab's runner makes a fresh one for every attempt).
rdzv_secret=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')

if [[ -n "${RINGLAB_IDEMPOTENCE_TESTBED:-}" ]]; then
  own_testbed=0
  testbed=$RINGLAB_IDEMPOTENCE_TESTBED
  state=${RINGLAB_IDEMPOTENCE_STATE_DIR:?RINGLAB_IDEMPOTENCE_STATE_DIR names the state folder of RINGLAB_IDEMPOTENCE_TESTBED}
  work=$(mktemp -d "/tmp/rla-idem.XXXXXX")
else
  own_testbed=1
  testbed="rla-idem-$$"
  work=$(mktemp -d "/tmp/rla-idem.XXXXXX")
  state="$work/state"
fi
inventory="$state/testbeds/$testbed/inventory.yml"
# Control sockets and cached facts of this test only.
export ANSIBLE_SSH_CONTROL_PATH_DIR="$work/cp" ANSIBLE_CACHE_PLUGIN_CONNECTION="$work/facts"

step() { printf '\n=== [%d s] %s\n' "$SECONDS" "$*"; }
fail() { printf '\nFAIL: %s\n' "$*" >&2; exit 1; }
ringlab() { node "$repo/src/bin/ringlab.mjs" --state-dir "$state" "$@"; }

cleanup() {
  local status=$?
  set +e
  if [[ $own_testbed -eq 1 ]]; then
    ringlab down "$testbed" >/dev/null 2>&1
  elif [[ $status -ne 0 ]]; then
    # Someone else's testbed: not left shaped or with workers by a check that stopped half-way.
    play_inventory=$inventory
    play cleanup-shape ansible/shape.yml -e net_shaping_rate=unlimited
    play cleanup-workers ansible/stop-workers.yml
  fi
  rm -rf "$work"
  # (play sets the global rc: the script's own status is kept apart.)
  if [[ $status -eq 0 ]]; then echo "PASS: test/ansible/idempotence.sh"; else echo "cleaned up after failure (exit $status)" >&2; fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Runs ansible-playbook from the repository root (as the CLI does) on $play_inventory (the testbed's own unless a
# test points it at a broken copy); output to $work/<name>.log, status in $rc.
play_inventory=$inventory
play() {
  local name=$1; shift
  rc=0
  (cd "$repo" && ansible-playbook -i "$play_inventory" "$@") >"$work/$name.log" 2>&1 || rc=$?
}
show_log() { echo "--- last lines of $1.log:"; tail -40 "$work/$1.log"; }
# The PLAY RECAP lines of a log, one per host.
recap() { sed -n '/^PLAY RECAP/,/^$/p' "$work/$1.log" | grep -E '^[^ ]+ +: ok=' || true; }
require_success() { [[ $rc -eq 0 ]] || { show_log "$1"; fail "$2 (exit $rc)"; }; }
require_unchanged() {
  local lines; lines=$(recap "$1")
  [[ $(grep -c . <<<"$lines") -eq 3 ]] || { show_log "$1"; fail "$2: expected a recap line for each of the 3 nodes"; }
  if grep -vE 'changed=0 +unreachable=0 +failed=0' <<<"$lines"; then show_log "$1"; fail "$2: a node reported changes or failures"; fi
}
node_exec() { docker exec "ringlab-$testbed-node-$1" "${@:2}"; }

for tool in docker ansible-playbook node; do
  command -v "$tool" >/dev/null || fail "'$tool' is not installed"
done

if [[ $own_testbed -eq 1 ]]; then
  step "testbed $testbed: 3 nodes (ringlab up)"
  shared="$work/shared"
  mkdir -p "$shared"
  up_ok=0
  for third in $(( $$ % 200 + 20 )) $(( ($$ + 71) % 200 + 20 )) $(( ($$ + 137) % 200 + 20 )); do
    printf 'testbed: {target: local, name: %s, nodes: 3, subnet: 10.231.%s.0/24, sharedDir: %s}\n' "$testbed" "$third" "$shared" >"$work/testbed.yaml"
    if ringlab up "$work/testbed.yaml" >"$work/up.log" 2>&1; then up_ok=1; break; fi
  done
  [[ $up_ok -eq 1 ]] || { cat "$work/up.log"; fail "ringlab up failed (three 10.231.x.0/24 subnets tried)"; }
else
  step "testbed $testbed of $state"
fi
# The record names the nodes' addresses (rank r at <prefix>.1r) and the shared directory (the same path on the nodes).
record="$state/testbeds/$testbed/testbed.json"
[[ -f $record ]] || fail "no testbed record at $record"
read -r prefix shared nodes < <(python3 -c 'import json, sys; r = json.load(open(sys.argv[1]))
print(r["nodes"][0]["privateIp"].rsplit(".", 1)[0], r["sharedDir"], len(r["nodes"]))' "$record")
[[ $nodes -eq 3 ]] || fail "testbed $testbed has $nodes nodes; this test needs 3"
worker_image=ringlab/worker:cpu

# With the slurm and mpi roles (campaigns whose launcher is slurm or mpi), so that they converge twice too.
if [[ $own_testbed -eq 1 ]]; then
  step "converge site.yml (first run), the testbed as a Slurm cluster and for mpirun"
  start=$SECONDS; play converge1 ansible/site.yml -e '{"ringlab_launcher_roles": ["slurm", "mpi"]}'; first="$((SECONDS - start)) s"
  require_success converge1 "first converge failed"
  recap converge1
  echo "first converge: $first"
else
  first="done before by the caller (ringlab configure --slurm --mpi)"
fi

step "converge again through the CLI (ringlab configure --slurm --mpi): nothing may change, and it says so"
rc=0
start=$SECONDS; ringlab configure --testbed "$testbed" --slurm --mpi >"$work/configure.out" 2>&1 || rc=$?; second=$((SECONDS - start))
# The CLI keeps ansible-playbook's whole output in its log of this invocation (the newest: the names are times).
logs=("$state"/logs/*-configure.log)
[[ -e ${logs[-1]} ]] || { cat "$work/configure.out"; fail "ringlab configure left no log in $state/logs"; }
cp "${logs[-1]}" "$work/converge2.log"
[[ $rc -eq 0 ]] || { cat "$work/configure.out"; show_log converge2; fail "ringlab configure --slurm --mpi failed (exit $rc)"; }
require_unchanged converge2 "second converge is not idempotent"
grep -q "configured 3 nodes: no changes (already configured)" "$work/configure.out" ||
  { cat "$work/configure.out"; fail "ringlab configure did not report that nothing changed"; }
recap converge2
echo "second converge: ${second}s"

step "verify from inside the nodes: names, passwordless SSH, shared directory"
for from in 0 1 2; do
  for to in 0 1 2; do
    [[ $from == "$to" ]] && continue
    resolved=$(node_exec "$from" getent hosts "$testbed-node-$to" | awk '{print $1}')
    [[ "$resolved" == "$prefix.1$to" ]] || fail "node $from resolves $testbed-node-$to to '$resolved', not $prefix.1$to"
    answer=$(node_exec "$from" ssh -o BatchMode=yes -o ConnectTimeout=5 "$testbed-node-$to" hostname) ||
      fail "passwordless ssh from node $from to $testbed-node-$to failed"
    [[ "$answer" == "$testbed-node-$to" ]] || fail "ssh from node $from to $testbed-node-$to reached '$answer'"
    node_exec "$from" ssh -o BatchMode=yes -o ConnectTimeout=5 "$prefix.1$to" true ||
      fail "passwordless ssh from node $from to $prefix.1$to (by address) failed"
  done
  node_exec "$from" sh -c "echo $from > $shared/rla-from-$from" || fail "node $from cannot write to $shared"
done
for rank in 0 1 2; do
  seen=$(node_exec "$rank" sh -c "cat $shared/rla-from-*" | tr '\n' ' ')
  [[ "$seen" == "0 1 2 " ]] || fail "node $rank sees '$seen' in the shared directory instead of the files of all nodes"
done
rm -f "$shared"/rla-from-*
leftovers=$(find "$shared" -mindepth 1 | head -5)
[[ -z "$leftovers" ]] || fail "the converge left files in the shared directory: $leftovers"
echo "names, ssh (6 pairs, by name and address) and the shared directory are fine"

step "shape.yml: 1gbit, again (no change), unlimited"
play shape1 ansible/shape.yml -e net_shaping_rate=1gbit
require_success shape1 "shape.yml 1gbit failed"
for rank in 0 1 2; do
  qdisc=$(node_exec "$rank" tc qdisc show dev eth0 root)
  grep -q 'qdisc tbf .*rate 1Gbit' <<<"$qdisc" || fail "node $rank has no 1Gbit tbf qdisc: $qdisc"
done
grep -q "TASK \[net_shaping : Set the egress rate limit to 1gbit\]" "$work/shape1.log" || { show_log shape1; fail "shape.yml did not name the rate it set"; }
play shape2 ansible/shape.yml -e net_shaping_rate=1gbit
require_success shape2 "second shape.yml 1gbit failed"
require_unchanged shape2 "second shape.yml 1gbit"
play shape3 ansible/shape.yml -e net_shaping_rate=unlimited
require_success shape3 "shape.yml unlimited failed"
for rank in 0 1 2; do
  qdisc=$(node_exec "$rank" tc qdisc show dev eth0 root)
  grep -q tbf <<<"$qdisc" && fail "node $rank still has a tbf qdisc after unlimited: $qdisc"
done
play shape4 ansible/shape.yml -e net_shaping_rate=fast
if [[ $rc -eq 0 ]] || ! grep -q "net_shaping_rate must be a rate" "$work/shape4.log"; then show_log shape4; fail "a bad rate was not refused"; fi
echo "tbf at 1Gbit on all nodes, idempotent, removed by unlimited; bad rate refused"

# run.yml with one job (a JSON object of extra variables); the collection directory is $work/collect-<name>.
run_job() {
  local name=$1 nodes=$2 timeout=$3 args=$4
  play "$name" ansible/run.yml -e "{\"worker_timeout_seconds\": $timeout, \"worker_jobs\": [{\"rdzv_secret\": \"$rdzv_secret\", \"run_id\": \"$name\",
    \"nodes\": $nodes, \"job\": \"allreduce\", \"args\": $args, \"collect_dir\": \"$work/collect-$name\"}]}"
}
# A field of rank R in a job's outcome.json (empty when the rank did not take part): rank_field <name> <rank> <field>
rank_field() {
  python3 -c 'import json, sys; ranks = {int(r["rank"]): r for r in json.load(open(sys.argv[1]))["ranks"]}; print(ranks[int(sys.argv[2])][sys.argv[3]] if int(sys.argv[2]) in ranks else "")' \
    "$work/collect-$1/outcome.json" "$2" "$3"
}
no_workers_left() {
  local left; left=$(docker ps -aq --filter "label=ringlab.testbed=$testbed" --filter "label=ringlab.role=worker")
  [[ -z "$left" ]] || fail "$1: worker containers were left behind"
}

step "run.yml: two jobs in one play: allreduce on 2 nodes, then on 3"
small='"args": ["--max-bytes", "65536", "--iters", "2"]'
play run-ok ansible/run.yml -e "{\"worker_timeout_seconds\": 300, \"worker_jobs\": [
  {\"rdzv_secret\": \"$rdzv_secret\", \"run_id\": \"run-ok\", \"nodes\": 2, \"job\": \"allreduce\", \"args\": [\"--max-bytes\", \"1048576\", \"--iters\", \"3\"],
   \"collect_dir\": \"$work/collect-run-ok\"},
  {\"rdzv_secret\": \"$rdzv_secret\", \"run_id\": \"run-two-b\", \"nodes\": 3, \"job\": \"allreduce\", $small, \"collect_dir\": \"$work/collect-run-two-b\"}]}"
require_success run-ok "run.yml failed"
[[ -s "$work/collect-run-ok/outcome.json" ]] || { show_log run-ok; fail "run.yml left no outcome.json in collect_dir"; }
for rank in 0 1; do
  [[ $(rank_field run-ok $rank ok) == True ]] || { show_log run-ok; fail "outcome.json: rank $rank is not ok"; }
  grep -q "node $rank of 2" <<<"$(rank_field run-ok $rank log)" || fail "outcome.json holds no log of rank $rank"
done
[[ -z $(rank_field run-ok 2 host) ]] || fail "run.yml ran a worker on rank 2 although the job has 2 nodes"
rank_field run-ok 0 result | base64 -d >"$work/run-ok-result.json" || fail "the head's result in outcome.json is not base64"
python3 - "$work/run-ok-result.json" "$testbed" <<'EOF' || fail "the head's result does not describe a 2-node run of this testbed"
import json, sys
world = json.load(open(sys.argv[1]))["world"]
expected = [f"{sys.argv[2]}-node-0", f"{sys.argv[2]}-node-1"]
sys.exit(0 if world.get("nodes") == 2 and world.get("hostnames") == expected else f"world in the result: {world}")
EOF
[[ $(rank_field run-two-b 2 ok) == True ]] || fail "the second job did not run on rank 2"
no_workers_left "run.yml"
echo "outcome.json with both ranks' logs and the head's result; the second job on its 3 nodes; containers removed"

step "run.yml: the result of an earlier job of the same run id does not pass for this one's, nor what others left"
# Someone who can write the shared storage left a file and a link in the run's folder before the job.
echo planted >"$shared/runs/run-ok/planted"
ln -s /etc/hostname "$shared/runs/run-ok/elsewhere"
run_job run-ok 2 300 '["--help"]'
[[ $rc -ne 0 && $(rank_field run-ok 0 outcome) == "exited with code 0" && $(rank_field run-ok 0 result_error) == "file not found"* ]] ||
  { show_log run-ok; fail "a job that wrote no result was given the result of an earlier job of the same run id"; }
[[ ! -e "$shared/runs/run-ok/planted" && ! -L "$shared/runs/run-ok/elsewhere" ]] ||
  fail "the run's folder on the shared storage was reused with what someone else left in it"
echo "earlier result and foreign files removed before the job"

step "run.yml: a worker that fails ends the play, and the job after it does not start"
play run-bad ansible/run.yml -e "{\"worker_timeout_seconds\": 300, \"worker_jobs\": [
  {\"rdzv_secret\": \"$rdzv_secret\", \"run_id\": \"run-bad\", \"nodes\": 2, \"job\": \"allreduce\", \"args\": [\"--no-such-option\"], \"collect_dir\": \"$work/collect-run-bad\"},
  {\"rdzv_secret\": \"$rdzv_secret\", \"run_id\": \"run-after\", \"nodes\": 2, \"job\": \"allreduce\", $small, \"collect_dir\": \"$work/collect-run-after\"}]}"
[[ $rc -ne 0 ]] || { show_log run-bad; fail "run.yml succeeded although the workers failed"; }
grep -q "Job run-bad failed: $testbed-node-0, $testbed-node-1" "$work/run-bad.log" ||
  { show_log run-bad; fail "run.yml did not name the failed job and its hosts"; }
[[ $(rank_field run-bad 1 outcome) =~ ^"exited with code "[1-9] ]] || fail "outcome.json does not give rank 1's exit code"
grep -q "no-such-option" <<<"$(rank_field run-bad 1 log)" || fail "outcome.json does not hold the failed rank's log"
[[ -e "$work/collect-run-after/outcome.json" ]] && fail "the job after the failed one ran"
no_workers_left "failed run.yml"
echo "failure reported by job and rank with its exit code and log; the next job not started"

step "run.yml: workers that run past the timeout"
run_job run-slow 2 4 '["--min-bytes", "67108864", "--max-bytes", "67108864", "--iters", "100000"]'
[[ $rc -ne 0 ]] || { show_log run-slow; fail "run.yml succeeded although the workers ran past the timeout"; }
[[ $(rank_field run-slow 1 outcome) == "timed out after 4 s and was stopped" ]] ||
  { show_log run-slow; fail "run.yml did not stop and report timed-out workers"; }
no_workers_left "timed-out run.yml"
echo "timed-out workers stopped and reported"

step "Slurm: every node idle in the partition, a job through sbatch (worker_launcher_role=slurm)"
sinfo=$(node_exec 0 sinfo --noheader --Node --format '%N %t')
[[ $(grep -cE "^$testbed-node-[0-2] idle$" <<<"$sinfo") -eq 3 ]] || fail "Slurm does not see the 3 nodes idle: $sinfo"
# run.yml with one job on 2 nodes as a Slurm job: slurm_job <name> <timeout> <job> <args as JSON>
slurm_job() {
  play "$1" ansible/run.yml -e "{\"worker_launcher_role\": \"slurm\", \"worker_timeout_seconds\": $2, \"worker_jobs\": [{\"rdzv_secret\": \"$rdzv_secret\", \"run_id\": \"$1\",
    \"nodes\": 2, \"job\": \"$3\", \"args\": $4, \"collect_dir\": \"$work/collect-$1\"}]}"
}
slurm_job slurm-ok 120 allreduce '["--max-bytes", "65536", "--iters", "2"]'
require_success slurm-ok "run.yml with worker_launcher_role=slurm failed"
for rank in 0 1; do
  [[ $(rank_field slurm-ok $rank ok) == True ]] || { show_log slurm-ok; fail "Slurm job: rank $rank is not ok in outcome.json"; }
  grep -q "node $rank of 2" <<<"$(rank_field slurm-ok $rank log)" || fail "Slurm job: outcome.json holds no log of rank $rank"
done
# The job script and Slurm's output are in root's own folder on the head, nothing of Slurm's on the shared storage.
script=/var/lib/ringlab-slurm/slurm-ok/job.sbatch
grep -qx '#SBATCH --nodes=2' <(node_exec 0 cat "$script") || fail "the job script does not ask for 2 nodes: $(node_exec 0 cat "$script")"
[[ $(node_exec 0 stat -c '%a %U' /var/lib/ringlab-slurm /var/lib/ringlab-slurm/slurm-ok) == $'700 root\n700 root' ]] ||
  fail "the job folders are not root's alone: $(node_exec 0 stat -c '%n %a %U' /var/lib/ringlab-slurm /var/lib/ringlab-slurm/slurm-ok)"
node_exec 0 sh -c 'ls /var/lib/ringlab-slurm/slurm-ok/slurm-*.out' >/dev/null || fail "Slurm wrote the batch output elsewhere than the head's job folder"
[[ $(ls "$shared/runs/slurm-ok") == result.json ]] || fail "the shared run folder holds more than the result: $(ls "$shared/runs/slurm-ok")"
no_workers_left "run.yml with Slurm"
echo "Slurm job ok on 2 nodes; job script $script on the head"

step "Slurm: the saved job script, submitted by hand with sbatch, gives a result"
rm -f "$shared/runs/slurm-ok/result.json"
job_id=$(node_exec 0 sbatch --parsable "$script") || fail "sbatch $script failed"
for _ in $(seq 240); do
  [[ -z $(node_exec 0 squeue --noheader --jobs "$job_id" 2>/dev/null) ]] && break
  sleep 0.5
done
ended=$(node_exec 0 scontrol show job -o "$job_id" | grep -o 'JobState=[A-Z]*')
[[ $ended == JobState=COMPLETED ]] || fail "the job submitted by hand ended $ended"
python3 -c 'import json, sys; w = json.load(open(sys.argv[1]))["world"]; sys.exit(0 if w["nodes"] == 2 else f"world: {w}")' \
  "$shared/runs/slurm-ok/result.json" || fail "the job submitted by hand left no 2-node result"
no_workers_left "the job submitted by hand"
echo "job $job_id COMPLETED with a 2-node result"

step "Slurm: a job past its time limit is recorded with Slurm's state and reason (takes Slurm's minute)"
slurm_job slurm-slow 10 train '["--model", "tiny", "--num-iters", "1000000"]'
[[ $rc -ne 0 ]] || { show_log slurm-slow; fail "run.yml succeeded although the Slurm job ran past its time limit"; }
[[ $(rank_field slurm-slow 1 outcome) == *"ended TIMEOUT (reason: TimeLimit"* ]] ||
  { show_log slurm-slow; fail "outcome.json does not give Slurm's TIMEOUT and TimeLimit: $(rank_field slurm-slow 1 outcome)"; }
grep -q "Iter #" <<<"$(rank_field slurm-slow 0 log)" || fail "the timed-out job's log was not kept"
no_workers_left "timed-out Slurm job"
echo "TIMEOUT (TimeLimit) recorded, log kept, containers removed"

step "stop-workers.yml: cancels ringlab's Slurm jobs, and only those"
node_exec 0 sbatch --job-name ringlab-leftover --nodes 1 --wrap "sleep 300" >/dev/null || fail "could not submit a job"
node_exec 0 sbatch --job-name someone-else --nodes 1 --wrap "sleep 300" >/dev/null || fail "could not submit a job"
play stop-slurm ansible/stop-workers.yml
require_success stop-slurm "stop-workers.yml failed on a Slurm cluster"
# A cancelled job shows as completing for a moment while its step ends.
for _ in $(seq 40); do
  queue=$(node_exec 0 squeue --noheader --format '%j')
  [[ $queue == someone-else ]] && break
  sleep 0.25
done
[[ $queue == someone-else ]] || fail "after stop-workers.yml the queue holds '$queue' instead of the other user's job alone"
node_exec 0 scancel --name someone-else
echo "ringlab-leftover cancelled, someone-else's job left alone"

step "MPI: a job under mpirun on 2 nodes (worker_launcher_role=mpi)"
# run.yml with one job on 2 nodes under mpirun: mpi_job <name> <timeout> <job> <args as JSON>
mpi_job() {
  play "$1" ansible/run.yml -e "{\"worker_launcher_role\": \"mpi\", \"worker_timeout_seconds\": $2, \"worker_jobs\": [{\"rdzv_secret\": \"$rdzv_secret\", \"run_id\": \"$1\",
    \"nodes\": 2, \"job\": \"$3\", \"args\": $4, \"collect_dir\": \"$work/collect-$1\"}]}"
}
mpi_job mpi-ok 120 allreduce '["--max-bytes", "65536", "--iters", "2"]'
require_success mpi-ok "run.yml with worker_launcher_role=mpi failed"
for rank in 0 1; do
  [[ $(rank_field mpi-ok $rank ok) == True ]] || { show_log mpi-ok; fail "MPI job: rank $rank is not ok in outcome.json"; }
  grep -q "node $rank of 2" <<<"$(rank_field mpi-ok $rank log)" || fail "MPI job: outcome.json holds no log of rank $rank"
done
# mpirun.sh, the hostfile and mpirun's output are in root's own folder on the head; only the result is shared.
script=/var/lib/ringlab-mpi/mpi-ok/mpirun.sh
[[ $(node_exec 0 stat -c '%a %U' /var/lib/ringlab-mpi /var/lib/ringlab-mpi/mpi-ok) == $'700 root\n700 root' ]] ||
  fail "the job folders are not root's alone: $(node_exec 0 stat -c '%n %a %U' /var/lib/ringlab-mpi /var/lib/ringlab-mpi/mpi-ok)"
[[ $(node_exec 0 cat /var/lib/ringlab-mpi/mpi-ok/hostfile | wc -l) -eq 2 ]] || fail "the hostfile does not list 2 nodes"
[[ $(ls "$shared/runs/mpi-ok") == result.json ]] || fail "the shared run folder holds more than the result: $(ls "$shared/runs/mpi-ok")"
no_workers_left "run.yml with mpirun"
echo "MPI job ok on 2 nodes; $script on the head"

step "MPI: the saved mpirun.sh, run again by hand on the head, gives a result"
rm -f "$shared/runs/mpi-ok/result.json"
node_exec 0 bash "$script" >"$work/mpi-by-hand.log" 2>&1 || { tail -20 "$work/mpi-by-hand.log"; fail "bash $script failed"; }
python3 -c 'import json, sys; w = json.load(open(sys.argv[1]))["world"]; sys.exit(0 if w["nodes"] == 2 else f"world: {w}")' \
  "$shared/runs/mpi-ok/result.json" || fail "mpirun.sh run by hand left no 2-node result"
no_workers_left "mpirun.sh run by hand"
echo "mpirun.sh by hand: a 2-node result"

step "MPI: a job past its time limit is stopped with every rank's container, and no mpirun or orted is left"
mpi_job mpi-slow 10 train '["--model", "tiny", "--num-iters", "1000000"]'
[[ $rc -ne 0 ]] || { show_log mpi-slow; fail "run.yml succeeded although the mpirun job ran past its time limit"; }
[[ $(rank_field mpi-slow 0 outcome) == *"timed out after 10 s and was stopped"* ]] ||
  { show_log mpi-slow; fail "outcome.json does not say the job timed out: $(rank_field mpi-slow 0 outcome)"; }
grep -q "Iter #" <<<"$(rank_field mpi-slow 0 log)" || fail "the timed-out job's log was not kept"
no_workers_left "timed-out mpirun job"
for rank in 0 1 2; do
  left=$(node_exec "$rank" pgrep -a -f 'mpirun|orted|ringlab-mpi' || true)
  [[ -z $left ]] || fail "node $rank still runs: $left"
done
echo "timed out after 10 s, log kept, containers and Open MPI's processes gone"

step "stop-workers.yml: removes a running worker, then changes nothing"
docker run -d --name "ringlab-$testbed-worker-1" --label "ringlab.testbed=$testbed" --label ringlab.role=worker \
  --network "container:ringlab-$testbed-node-1" --entrypoint sleep "$worker_image" 300 >/dev/null
play stop1 ansible/stop-workers.yml
require_success stop1 "stop-workers.yml failed"
no_workers_left "stop-workers.yml"
play stop2 ansible/stop-workers.yml
require_success stop2 "second stop-workers.yml failed"
require_unchanged stop2 "second stop-workers.yml"
echo "worker removed; second run unchanged"

# The bad inventories are copies: the testbed's own stays as it is.
step "bad input: a missing inventory variable"
play_inventory="$work/inventory.bad.yml"
grep -v 'ringlab_shared_dir:' "$inventory" >"$play_inventory"
start=$SECONDS; play missing ansible/site.yml; took=$((SECONDS - start))
[[ $rc -ne 0 ]] || fail "site.yml accepted an inventory without ringlab_shared_dir"
grep -q "Inventory variable 'ringlab_shared_dir' is missing" "$work/missing.log" || { show_log missing; fail "the error does not name ringlab_shared_dir"; }
[[ $took -le 10 ]] || fail "a missing variable took ${took}s to fail"
echo "refused in ${took}s, naming ringlab_shared_dir"

step "bad input: an unreachable node"
# The CLI writes the workers group last: a host appended at its indentation joins it.
cp "$inventory" "$play_inventory"
printf '        %s: {ansible_host: %s, ringlab_private_ip: %s, ringlab_node_rank: 3, ringlab_node_container: ringlab-%s-node-3}\n' \
  "$testbed-node-3" "$prefix.13" "$prefix.13" "$testbed" >>"$play_inventory"
start=$SECONDS; play unreachable ansible/site.yml; took=$((SECONDS - start))
[[ $rc -ne 0 ]] || fail "site.yml succeeded with an unreachable node"
grep -qE "$testbed-node-3 +: .*unreachable=1" "$work/unreachable.log" || { show_log unreachable; fail "the recap does not show node 3 as unreachable"; }
[[ $took -le 30 ]] || fail "an unreachable node took ${took}s to fail"
grep -qE "$testbed-node-0 +: .*changed=0" "$work/unreachable.log" || { show_log unreachable; fail "the reachable nodes were changed although the run had to stop"; }
echo "failed in ${took}s with node 3 unreachable"

step "pinned host keys (as on AWS): ssh accepts the node's own key and refuses any other, even on first contact"
# The nodes' own ed25519 keys, read from inside them, pinned as ringlab pins the keys it gives AWS nodes; node 1's
# entry then swapped for a key it does not have. A control folder of this step's own: an open master connection
# would not check the host key again.
for rank in 0 1 2; do
  printf '%s.1%s %s\n' "$prefix" "$rank" "$(node_exec "$rank" cut -d' ' -f1,2 /etc/ssh/ssh_host_ed25519_key.pub)"
done >"$work/known_hosts.pinned"
ssh-keygen -q -t ed25519 -N '' -f "$work/impostor" -C impostor
awk -v prefix="$prefix" -v key="$(cut -d' ' -f1,2 "$work/impostor.pub")" \
  '$1 == prefix ".11" {print $1, key; next} {print}' "$work/known_hosts.pinned" >"$work/known_hosts.impostor"
pinned_play() {
  play_inventory="$work/inventory.pinned.yml"
  sed -e "s|ringlab_known_hosts_file: .*|ringlab_known_hosts_file: $work/known_hosts.$1|" \
    -e "s|ringlab_ssh_host_key_checking: .*|ringlab_ssh_host_key_checking: \"yes\"|" "$inventory" >"$play_inventory"
  grep -q 'ringlab_ssh_host_key_checking: "yes"' "$play_inventory" || fail "the inventory has no ringlab_ssh_host_key_checking to set"
  rm -rf "$work/cp-pinned"
  ANSIBLE_SSH_CONTROL_PATH_DIR="$work/cp-pinned" play "pinned-$1" ansible/stop-workers.yml
  play_inventory=$inventory
}
pinned_play pinned
require_success pinned-pinned "stop-workers.yml failed with every node's own key pinned"
pinned_play impostor
[[ $rc -ne 0 ]] || fail "ssh accepted node 1 although the key pinned for it is not its own"
if ! grep -qE "$testbed-node-1 +: .*unreachable=1" "$work/pinned-impostor.log" || ! grep -q "Host key verification failed" "$work/pinned-impostor.log"; then
  show_log pinned-impostor; fail "node 1 was not refused for its host key"
fi
echo "own keys accepted; a key that is not the pinned one refused (Host key verification failed)"

step "summary"
echo "3 nodes: first converge $first, second converge ${second}s (changed=0 on every node)"
