#!/usr/bin/env python3
"""Every process's CPU time per half second, the busiest first: what took the machine's CPU while a campaign ran.

  python3 test/bench/proc-cpu.py /tmp/proc-cpu.log &   # then the campaign; stop it with kill afterwards

Each line: the UTC time, then up to 8 `name:pid=seconds` of CPU (user + system, from /proc/<pid>/stat) that each
process used since the line before, 0.1 s or more; a new process (`name*`) counts all its time. Put a run's slow
steps (its result's stepSeconds, from provenance.startedAt) beside the lines of that time (test/bench/README.md, "The
CPU quota's period")."""

import os
import sys
import time

TICKS = os.sysconf("SC_CLK_TCK")
INTERVAL = 0.5
SHOWN = 0.1


def cpu_by_process():
    seen = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as handle:
                stat = handle.read()
        except OSError:
            continue  # ended between the listing and the read
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()
        # A process is its pid and start time: a kernel worker renames itself with every work item it takes.
        seen[pid] = (name, fields[19], (int(fields[11]) + int(fields[12])) / TICKS)
    return seen


def main(path):
    before = cpu_by_process()
    with open(path, "w", encoding="utf-8") as out:
        while True:
            time.sleep(INTERVAL)
            now = cpu_by_process()
            rows = []
            for pid, (name, started, seconds) in now.items():
                earlier = before.get(pid)
                used, label = (
                    (seconds - earlier[2], name) if earlier and earlier[1] == started else (seconds, name + "*")
                )
                if used >= SHOWN:
                    rows.append((used, label, pid))
            rows.sort(reverse=True)
            stamp = time.strftime("%H:%M:%S", time.gmtime()) + f".{int(time.time() * 10) % 10}"
            out.write(" ".join([stamp, *(f"{label}:{pid}={used:.2f}" for used, label, pid in rows[:8])]) + "\n")
            out.flush()
            before = now


if __name__ == "__main__":
    main(sys.argv[1])
