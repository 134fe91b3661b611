#!/bin/bash
# Stand-in worker: ringlab-standin-worker JOB [--OPTION VALUE ...] --output FILE
# Logs what it received and, on rank 0, writes FILE (JSON: job, run id, rendezvous environment, the
# addresses it sees). --sleep S makes it run S seconds; an unknown option exits 2, as argparse does.
set -euo pipefail
job=${1:?job missing}; shift
args=("$@")
sleep_s=0 output=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --sleep) sleep_s=$2; shift 2 ;;
    --output) output=$2; shift 2 ;;
    --max-bytes | --min-bytes | --iters | --warmup-iters | --batch-size | --model | --steps | --backend) shift 2 ;;
    *) echo "ringlab-standin-worker: error: unrecognized arguments: $1" >&2; exit 2 ;;
  esac
done
addresses=$(hostname -I | xargs)
echo "standin job=$job rank=$RINGLAB_NODE_RANK nodes=$RINGLAB_NUM_NODES head=$RINGLAB_HEAD_ADDR:$RINGLAB_RDZV_PORT"
echo "standin ifname=$RINGLAB_SOCKET_IFNAME nccl_ifname=$NCCL_SOCKET_IFNAME addresses=$addresses args=${args[*]}"
sleep "$sleep_s"
if [[ "$RINGLAB_NODE_RANK" == 0 && -n "$output" ]]; then
  printf '{"job": "%s", "run_id": "%s", "num_nodes": %s, "head_addr": "%s", "rdzv_port": %s, "socket_ifname": "%s", "addresses": "%s", "image": "%s"}\n' \
    "$job" "$RINGLAB_RUN_ID" "$RINGLAB_NUM_NODES" "$RINGLAB_HEAD_ADDR" "$RINGLAB_RDZV_PORT" "$RINGLAB_SOCKET_IFNAME" \
    "$addresses" "$RINGLAB_IMAGE" > "$output.tmp"
  mv "$output.tmp" "$output"
fi
