/**
 * How busy the machine is outside the local testbed while runs execute. The nodes and workers of a local testbed
 * are containers on this machine, which other programs share; these VMs report no steal time, so a slow minute of
 * the host shows only as CPU that went elsewhere. A sampler reads the machine's counters (/proc/stat,
 * /proc/pressure/cpu) and the testbed's containers' cgroup counters twice a second; each run's share is then read off
 * the samples over the window its benchmark ran (the worker's own start and end), by interpolating the cumulative
 * counters.
 *
 * cgroup v1 and v2, with Docker's cgroupfs or systemd driver. A container is found by the label
 * ringlab.testbed=<name> when its cgroup folder first appears; its counters are read until it is gone (a worker
 * outlives its benchmark's end by the time Ansible takes to see it exit, so the window's end is covered).
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { HostLoad } from "../results/record.ts";

/** Share of the machine's CPU capacity that other work may take before a run is marked "machine busy". */
export const DEFAULT_BUSY_THRESHOLD = 0.25;
const SAMPLE_INTERVAL_MS = 500;
/** USER_HZ, the unit of /proc/stat: 100 on every Linux architecture ringlab runs on. */
const CLOCK_TICKS_PER_SECOND = 100;

/** Cumulative counters at one moment; seconds since boot (or since the counter started), never reset. */
export interface HostSample {
  /** Date.now() when read. */
  readonly atMs: number;
  readonly machineBusySeconds: number;
  readonly cores: number;
  /** /proc/pressure/cpu "some" total; undefined without PSI. */
  readonly cpuPressureSeconds: number | undefined;
  /** Per container id: CPU seconds used and seconds throttled so far. */
  readonly containers: ReadonlyMap<
    string,
    { readonly cpuSeconds: number; readonly throttledSeconds: number; readonly worker: boolean }
  >;
}

/** /proc/stat's aggregate line: busy is everything but idle and iowait; cores are the cpuN lines. */
export function parseProcStat(text: string): { busySeconds: number; cores: number } {
  const lines = text.split("\n");
  const total = lines.find((line) => line.startsWith("cpu "));
  if (total === undefined) throw new Error("/proc/stat has no aggregate cpu line");
  // user nice system idle iowait irq softirq steal guest guest_nice; guest time is already inside user and nice.
  const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = total
    .trim()
    .split(/\s+/)
    .slice(1)
    .map(Number);
  return {
    busySeconds: (user + nice + system + irq + softirq + steal) / CLOCK_TICKS_PER_SECOND,
    cores: lines.filter((line) => /^cpu\d+ /.test(line)).length,
  };
}

/** The "some" line's total (microseconds) of /proc/pressure/cpu, in seconds. */
export function parsePressureSome(text: string): number | undefined {
  const total = /^some .*\btotal=(\d+)/m.exec(text)?.[1];
  return total === undefined ? undefined : Number(total) / 1e6;
}

/** A container's cgroup counters, wherever its cgroup version and Docker's driver put them. */
interface ContainerCgroup {
  readonly cpuSeconds: () => number;
  readonly throttledSeconds: () => number;
}

function readNumberField(file: string, field: string): number {
  const match = new RegExp(`^${field} (\\d+)$`, "m").exec(readFileSync(file, "utf8"));
  return match === null ? 0 : Number(match[1]);
}

/** Folders where Docker puts a container's cgroup, by hierarchy (v2: unified; v1: cpuacct and cpu). */
function cgroupFolders(root: string, id: string): { unified: string[]; cpuacct: string[]; cpu: string[] } {
  const under = (hierarchy: string) => [
    join(root, hierarchy, "docker", id),
    join(root, hierarchy, "system.slice", `docker-${id}.scope`),
  ];
  return {
    unified: under(""),
    cpuacct: [...under("cpuacct"), ...under("cpu,cpuacct")],
    cpu: [...under("cpu"), ...under("cpu,cpuacct")],
  };
}

/** The counters of container `id` under the cgroup file system at `root`; undefined when it has no cgroup (yet). */
export function containerCgroup(root: string, id: string): ContainerCgroup | undefined {
  const folders = cgroupFolders(root, id);
  const v2 = folders.unified.find(
    (dir) => existsSync(join(dir, "cpu.stat")) && !existsSync(join(dir, "cpuacct.usage")),
  );
  if (v2 !== undefined) {
    const stat = join(v2, "cpu.stat");
    return {
      cpuSeconds: () => readNumberField(stat, "usage_usec") / 1e6,
      throttledSeconds: () => readNumberField(stat, "throttled_usec") / 1e6,
    };
  }
  const usage = folders.cpuacct.map((dir) => join(dir, "cpuacct.usage")).find(existsSync);
  if (usage === undefined) return undefined;
  const throttle = folders.cpu.map((dir) => join(dir, "cpu.stat")).find(existsSync);
  return {
    cpuSeconds: () => Number(readFileSync(usage, "utf8").trim()) / 1e9,
    throttledSeconds: () => (throttle === undefined ? 0 : readNumberField(throttle, "throttled_time") / 1e9),
  };
}

/** The folders whose entries change when Docker starts or removes a container. */
function containerParents(root: string): string[] {
  return ["", "cpuacct", "cpu,cpuacct"]
    .flatMap((hierarchy) => [join(root, hierarchy, "docker"), join(root, hierarchy, "system.slice")])
    .filter(existsSync);
}

export interface HostLoadSources {
  /** Where /proc is. @default "/proc" */
  readonly procRoot?: string;
  /** Where the cgroup file systems are mounted. @default "/sys/fs/cgroup" */
  readonly cgroupRoot?: string;
  /** The testbed's containers now: full ids, which are workers (label ringlab.role=worker), which are running. */
  readonly testbedContainers: () => Promise<
    ReadonlyMap<string, { readonly worker: boolean; readonly running: boolean }>
  >;
  readonly now?: () => number;
  /**
   * Told once when a running container of the testbed has no cgroup where the sampler looks (rootless Docker, a custom
   * cgroup parent, ringlab itself in a container): its CPU would count as the machine's, so no run gets a hostLoad.
   */
  readonly onBlind?: (message: string) => void;
}

/**
 * Samples the counters until stopped. Reading a sample touches a few small files; the testbed's containers are
 * looked up again (one `docker ps`) only when a container's cgroup folder appears or goes.
 */
export class HostLoadSampler {
  private readonly samples: HostSample[] = [];
  private readonly procRoot: string;
  private readonly cgroupRoot: string;
  private readonly now: () => number;
  private known = new Map<string, { cgroup: ContainerCgroup; worker: boolean }>();
  /** A running container of the testbed had no cgroup here: the testbed's CPU cannot be told from the machine's. */
  private blind = false;
  private parentEntries = "";
  private timer: NodeJS.Timeout | undefined;
  private sampling: Promise<void> = Promise.resolve();

  constructor(private readonly sources: HostLoadSources) {
    this.procRoot = sources.procRoot ?? "/proc";
    this.cgroupRoot = sources.cgroupRoot ?? "/sys/fs/cgroup";
    this.now = sources.now ?? Date.now;
  }

  /** Whether this machine has what the sampler reads (Linux's /proc/stat). */
  available(): boolean {
    return existsSync(join(this.procRoot, "stat"));
  }

  /**
   * Starts sampling. A failing read (or `docker ps`) costs a sample, never the campaign: the runs measure without it.
   */
  async start(intervalMs = SAMPLE_INTERVAL_MS): Promise<void> {
    await this.sample().catch(() => {});
    this.timer = setInterval(() => {
      // One sample at a time; a slow `docker ps` delays the next, never overlaps it.
      this.sampling = this.sampling.then(() => this.sample()).catch(() => {});
    }, intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    await this.sampling;
  }

  /** Looks the testbed's containers up again if one came or went, then reads every counter once. */
  async sample(): Promise<void> {
    const entries = containerParents(this.cgroupRoot)
      .map((dir) => readdirSync(dir).join(","))
      .join(";");
    if (entries !== this.parentEntries) {
      this.parentEntries = entries;
      await this.refreshContainers();
    }
    this.readCounters();
  }

  /** Reads every counter of the containers known now, and keeps the sample. */
  readCounters(): void {
    const stat = parseProcStat(readFileSync(join(this.procRoot, "stat"), "utf8"));
    const pressureFile = join(this.procRoot, "pressure", "cpu");
    const containers = new Map<string, { cpuSeconds: number; throttledSeconds: number; worker: boolean }>();
    for (const [id, { cgroup, worker }] of this.known) {
      try {
        containers.set(id, { cpuSeconds: cgroup.cpuSeconds(), throttledSeconds: cgroup.throttledSeconds(), worker });
      } catch {
        // Removed between the listing and the read: its last sample stands.
      }
    }
    this.samples.push({
      atMs: this.now(),
      machineBusySeconds: stat.busySeconds,
      cores: stat.cores,
      cpuPressureSeconds: existsSync(pressureFile) ? parsePressureSome(readFileSync(pressureFile, "utf8")) : undefined,
      containers,
    });
  }

  private async refreshContainers(): Promise<void> {
    const listed = await this.sources.testbedContainers();
    const known = new Map<string, { cgroup: ContainerCgroup; worker: boolean }>();
    for (const [id, { worker, running }] of listed) {
      const cgroup = this.known.get(id)?.cgroup ?? containerCgroup(this.cgroupRoot, id);
      if (cgroup !== undefined) known.set(id, { cgroup, worker });
      else if (running && !this.blind) {
        this.blind = true;
        this.sources.onBlind?.(
          `container ${id.slice(0, 12)} of the testbed has no cgroup under ${this.cgroupRoot} ` +
            "(rootless Docker, a custom cgroup parent, or ringlab in a container?): runs get no hostLoad, and none is marked busy",
        );
      }
    }
    this.known = known;
  }

  /**
   * The machine's load over [startMs, endMs], which has ended; undefined when the samples do not cover it. Reads the
   * counters once more first, so that the window's end is covered without waiting for the next sample.
   */
  loadOver(startMs: number, endMs: number, busyThreshold = DEFAULT_BUSY_THRESHOLD): HostLoad | undefined {
    if (this.blind) return undefined;
    try {
      this.readCounters();
    } catch {
      // The samples taken so far may still cover the window.
    }
    // Samples older than any window still to come are not needed: a campaign's runs come in order.
    const keepFrom = this.samples.findIndex((sample) => sample.atMs >= startMs - 60_000);
    if (keepFrom > 1) this.samples.splice(0, keepFrom - 1);
    return hostLoadOver(this.samples, startMs, endMs, busyThreshold);
  }
}

/** A cumulative counter at time t, linearly between the samples around it; undefined outside them. */
function counterAt(
  samples: readonly HostSample[],
  t: number,
  read: (sample: HostSample) => number | undefined,
): number | undefined {
  const after = samples.findIndex((sample) => sample.atMs >= t);
  if (after === -1) return undefined;
  const next = samples[after]!;
  const nextValue = read(next);
  if (after === 0) return next.atMs === t ? nextValue : undefined;
  const previous = samples[after - 1]!;
  const previousValue = read(previous);
  if (previousValue === undefined || nextValue === undefined) return undefined;
  return previousValue + (nextValue - previousValue) * ((t - previous.atMs) / (next.atMs - previous.atMs));
}

/** The load over a window, from cumulative samples. */
export function hostLoadOver(
  samples: readonly HostSample[],
  startMs: number,
  endMs: number,
  busyThreshold: number,
): HostLoad | undefined {
  if (!(endMs > startMs)) return undefined;
  const delta = (read: (sample: HostSample) => number | undefined) => {
    const start = counterAt(samples, startMs, read);
    const end = counterAt(samples, endMs, read);
    return start === undefined || end === undefined ? undefined : end - start;
  };
  const machineCpuSeconds = delta((sample) => sample.machineBusySeconds);
  if (machineCpuSeconds === undefined) return undefined;
  const ids = new Set(samples.flatMap((sample) => [...sample.containers.keys()]));
  let testbedCpuSeconds = 0;
  let workersThrottledSeconds = 0;
  for (const id of ids) {
    const seen = samples.filter((sample) => sample.containers.has(id));
    const first = seen[0]!;
    const last = seen[seen.length - 1]!;
    // Before its first sample the container had not started (its cgroup's counters start at 0); after its last it
    // was gone. A container is found within a sample of its start, long before a worker's benchmark begins.
    const at = (t: number, read: (c: { cpuSeconds: number; throttledSeconds: number }) => number) =>
      t < first.atMs
        ? 0
        : t >= last.atMs
          ? read(last.containers.get(id)!)
          : counterAt(seen, t, (sample) => read(sample.containers.get(id)!))!;
    const cpu = (c: { cpuSeconds: number }) => c.cpuSeconds;
    testbedCpuSeconds += Math.max(0, at(endMs, cpu) - at(startMs, cpu));
    if (first.containers.get(id)!.worker) {
      const throttled = (c: { throttledSeconds: number }) => c.throttledSeconds;
      workersThrottledSeconds += Math.max(0, at(endMs, throttled) - at(startMs, throttled));
    }
  }
  const seconds = (endMs - startMs) / 1000;
  const cores = samples[samples.length - 1]!.cores;
  const outsideShare = Math.max(0, machineCpuSeconds - testbedCpuSeconds) / (cores * seconds);
  const pressure = delta((sample) => sample.cpuPressureSeconds);
  const round = (value: number) => Math.round(value * 1000) / 1000;
  return {
    seconds: round(seconds),
    cores,
    machineCpuSeconds: round(machineCpuSeconds),
    testbedCpuSeconds: round(testbedCpuSeconds),
    outsideShare: round(outsideShare),
    ...(pressure === undefined ? {} : { cpuPressureShare: round(Math.min(1, pressure / seconds)) }),
    workersThrottledSeconds: round(workersThrottledSeconds),
    busy: outsideShare > busyThreshold,
    busyThreshold,
  };
}
