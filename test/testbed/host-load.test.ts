import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  containerCgroup,
  HostLoadSampler,
  hostLoadOver,
  parsePressureSome,
  parseProcStat,
  type HostSample,
} from "../../src/testbed/host-load.ts";

const ID = "a".repeat(64);

/** /proc/stat of a 2-core machine whose busy jiffies (user + system + softirq) sum to `busy`. */
function procStat(busy: number, idle = 1000): string {
  return `cpu  ${busy - 20} 0 10 ${idle} 5 0 10 0 0 0\ncpu0 1 0 0 1 0 0 0 0 0 0\ncpu1 1 0 0 1 0 0 0 0 0 0\nintr 1\n`;
}

function sample(
  atMs: number,
  machineBusySeconds: number,
  containers: Record<string, [cpu: number, throttled: number, worker: boolean]>,
  pressure?: number,
): HostSample {
  return {
    atMs,
    machineBusySeconds,
    cores: 2,
    cpuPressureSeconds: pressure,
    containers: new Map(
      Object.entries(containers).map(([id, [cpuSeconds, throttledSeconds, worker]]) => [
        id,
        { cpuSeconds, throttledSeconds, worker },
      ]),
    ),
  };
}

describe("the machine's counters", () => {
  it("reads /proc/stat's busy time (all but idle and iowait) in seconds and counts the cores", () => {
    expect(parseProcStat(procStat(250))).toEqual({ busySeconds: 2.5, cores: 2 });
    expect(
      parsePressureSome(
        "some avg10=0.61 avg60=9.19 avg300=17.96 total=135698032\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
      ),
    ).toBeCloseTo(135.698032);
  });

  it("finds a container's counters under cgroup v2 (cgroupfs and systemd drivers) and v1 (cpuacct and cpu)", () => {
    const v2 = mkdtempSync(join(tmpdir(), "ringlab-cg2-"));
    mkdirSync(join(v2, "system.slice", `docker-${ID}.scope`), { recursive: true });
    writeFileSync(
      join(v2, "system.slice", `docker-${ID}.scope`, "cpu.stat"),
      "usage_usec 2500000\nuser_usec 2000000\nnr_throttled 3\nthrottled_usec 400000\n",
    );
    const counters = containerCgroup(v2, ID)!;
    expect([counters.cpuSeconds(), counters.throttledSeconds()]).toEqual([2.5, 0.4]);

    const v1 = mkdtempSync(join(tmpdir(), "ringlab-cg1-"));
    mkdirSync(join(v1, "cpuacct", "docker", ID), { recursive: true });
    mkdirSync(join(v1, "cpu", "docker", ID), { recursive: true });
    writeFileSync(join(v1, "cpuacct", "docker", ID, "cpuacct.usage"), "1500000000\n");
    writeFileSync(
      join(v1, "cpu", "docker", ID, "cpu.stat"),
      "nr_periods 10\nnr_throttled 2\nthrottled_time 250000000\n",
    );
    const old = containerCgroup(v1, ID)!;
    expect([old.cpuSeconds(), old.throttledSeconds()]).toEqual([1.5, 0.25]);
    expect(containerCgroup(v1, "b".repeat(64))).toBeUndefined();
  });
});

describe("a run's host load from the samples", () => {
  it("is the machine's busy time less the testbed's containers' over the window, as a share of its capacity", () => {
    // 10 s window on 2 cores: the machine was busy 14 CPU-seconds, the testbed's containers 9 of them.
    const samples = [
      sample(0, 100, { node: [50, 0, false], worker: [0, 0, true] }, 10),
      sample(10_000, 114, { node: [51, 0, false], worker: [8, 2, true] }, 13),
    ];
    const load = hostLoadOver(samples, 0, 10_000, 0.2)!;
    expect(load).toEqual({
      seconds: 10,
      cores: 2,
      machineCpuSeconds: 14,
      testbedCpuSeconds: 9,
      outsideShare: 0.25,
      cpuPressureShare: 0.3,
      workersThrottledSeconds: 2,
      busy: true,
      busyThreshold: 0.2,
    });
    expect(hostLoadOver(samples, 0, 10_000, 0.3)!.busy).toBe(false);
  });

  it("interpolates between samples, counts a container from its start and until it was removed, and needs samples around the window", () => {
    const samples = [
      sample(0, 0, {}),
      sample(1_000, 1, { w: [0.5, 0, true] }),
      sample(3_000, 4, { w: [2.5, 0, true] }),
      sample(4_000, 5, {}),
    ];
    // Window 0.5 .. 3.5 s: the machine 4 CPU-s (0.5 → 4.5); the worker from 0 (not started) to its last 2.5.
    const load = hostLoadOver(samples, 500, 3_500, 0.25)!;
    expect(load.machineCpuSeconds).toBe(4);
    expect(load.testbedCpuSeconds).toBe(2.5);
    expect(load.outsideShare).toBe(0.25);
    expect(hostLoadOver(samples, 500, 5_000, 0.25)).toBeUndefined();
    expect(hostLoadOver(samples, -1, 2_000, 0.25)).toBeUndefined();
  });

  it("gives no load, and says so once, when a running container of the testbed has no cgroup where it looks", async () => {
    const root = mkdtempSync(join(tmpdir(), "ringlab-cg-none-"));
    const told: string[] = [];
    const sampler = new HostLoadSampler({
      cgroupRoot: root,
      testbedContainers: async () =>
        new Map([
          [ID, { worker: true, running: true }],
          ["c".repeat(64), { worker: false, running: false }],
        ]),
      onBlind: (message) => told.push(message),
    });
    mkdirSync(join(root, "docker"));
    await sampler.sample();
    mkdirSync(join(root, "docker", "d".repeat(64)));
    await sampler.sample();
    await new Promise((resolve) => setTimeout(resolve, 20));
    await sampler.sample();
    expect(sampler.loadOver(Date.now() - 15, Date.now() - 5)).toBeUndefined();
    expect(told).toHaveLength(1);
    expect(told[0]).toMatch(
      /^container aaaaaaaaaaaa of the testbed has no cgroup under .*: runs get no hostLoad, and none is marked busy$/,
    );
  });

  it("sees a CPU-bound program beside the (empty) testbed on this very machine", async () => {
    const sampler = new HostLoadSampler({ testbedContainers: async () => new Map() });
    await sampler.start(100);
    const burner = spawn(process.execPath, ["-e", "const end = Date.now() + 2500; while (Date.now() < end) {}"]);
    const started = Date.now() + 300;
    await new Promise((resolve) => burner.once("exit", resolve));
    const load = sampler.loadOver(started, Date.now() - 200)!;
    await sampler.stop();
    // One busy core of the machine's cores (as /proc/stat counts them), less the burner's own start and end.
    expect(load.outsideShare).toBeGreaterThan(0.8 / load.cores);
    expect(load.testbedCpuSeconds).toBe(0);
  });
});
