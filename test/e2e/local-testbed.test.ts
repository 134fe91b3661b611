/**
 * The local testbed end to end, through the CLI, on one testbed: up, configure, the Ansible converge-twice check
 * (test/ansible/idempotence.sh), the probe and training, status, the campaign scenarios (failed runs, placements,
 * a dataset with recovery, a lost node, Slurm) on the testbed kept, down; and the faults a user meets: Docker not
 * running, a name already taken, a failure half-way through up.
 *
 * The tests share the testbed (bringing one up and configuring it takes minutes) but not each other's leftovers: each
 * first brings the testbed to the state it needs (upTestbed, configuredTestbed: up with its three nodes running,
 * configured for every launcher), read from Docker and the testbed's record, not from which tests ran before, and
 * stops what it started even when it fails. So one failure is one failure, and any test runs alone (`-t`).
 */
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { configuredLaunchers, loadRecord } from "../../src/testbed/record.ts";
import { nodeContainerName } from "../../src/rules/names.ts";
import { controlPathDir } from "../../src/testbed/playbook.ts";
import {
  connectsAs,
  docker,
  linkLocalAddress,
  everythingLabeled,
  firewallRules,
  exited,
  freeSubnet,
  ringlab,
  runScript,
  runsJsonl,
  scratch,
  sleep,
  startRingLab,
  writeFile,
  type CliResult,
  type CommandLinesSeen,
  watchCommandLines,
} from "./cli.ts";

const NAME = `e2e${process.pid}`;
const SUBNET = freeSubnet();
const dir = scratch("testbed");
const state = join(dir, "state");
const campaign = writeFile(
  dir,
  "testbed.yaml",
  `testbed: {target: local, name: ${NAME}, nodes: 3, subnet: ${SUBNET}}\n`,
);

afterAll(async () => {
  await ringlab(state, ["down", NAME]);
});

/** The shared testbed's node containers that run. */
function runningNodes(): string[] {
  return docker(["ps", "-q", "--filter", `label=ringlab.testbed=${NAME}`, "--filter", "label=ringlab.role=node"])
    .split("\n")
    .filter(Boolean);
}

/**
 * The shared testbed up with its three nodes running: as it is, or, where it is missing or a test that failed left it
 * short of a node, a fresh one (not yet configured).
 */
async function upTestbed(): Promise<void> {
  if (loadRecord(state, NAME) !== undefined && runningNodes().length === 3) return;
  await ringlab(state, ["down", NAME]);
  const up = await ringlab(state, ["up", campaign]);
  if (up.code !== 0) throw new Error(`the shared testbed did not come up (exit ${up.code}):\n${up.stderr}`);
}

/** The shared testbed up and configured for every launcher (its record says so), as the runs and campaigns need. */
async function configuredTestbed(): Promise<void> {
  await upTestbed();
  const record = loadRecord(state, NAME)!;
  if (
    record.configured !== undefined &&
    ["slurm", "mpi"].every((l) => configuredLaunchers(record).includes(l as never))
  )
    return;
  const configure = await ringlab(state, ["configure", "--slurm", "--mpi"]);
  if (configure.code !== 0)
    throw new Error(`the shared testbed was not configured (exit ${configure.code}):\n${configure.stderr}`);
}

/**
 * Runs `steps` while a started `ringlab` runs; where they fail, stops it (SIGTERM) and waits for it before the failure
 * is reported, so that it does not hold the testbed for the tests after.
 */
async function stoppedIfItFails<T>(child: ReturnType<typeof startRingLab>, steps: () => Promise<T>): Promise<T> {
  try {
    return await steps();
  } catch (error) {
    if (child.exitCode === null && child.signalCode === null) {
      const ended = exited(child);
      process.kill(child.pid!, "SIGTERM");
      await ended;
    }
    throw error;
  }
}

// The campaigns below run on this testbed, kept (they need a testbed, not a new one each): it was configured above,
// so they find it configured from the same playbooks, inventory and worker image, and skip site.yml.
const TESTBED_LINE = `testbed: {target: local, name: ${NAME}, nodes: 3, subnet: ${SUBNET}}`;
const NOT_CONFIGURED_AGAIN = new RegExp(
  `testbed ${NAME}: configured at \\S+ from the same playbooks, inventory and worker image; not configuring again`,
);

/**
 * Runs a campaign on this testbed, kept afterwards; returns the CLI result, the results folder and the scratch folder.
 */
async function keptCampaign(name: string, campaign: string): Promise<{ run: CliResult; out: string; work: string }> {
  const work = scratch(name);
  const file = writeFile(work, `${name}.yaml`, `${TESTBED_LINE}\ncampaign:\n  keep: true\n${campaign}`);
  const out = join(work, "results");
  return { run: await ringlab(state, ["campaign", file, "--results", out]), out, work };
}

/**
 * The runs' rendezvous secrets were seen (in the environment of the jobs' processes, which root may read) and on no
 * command line of this machine, which every user may read with `ps` (#67: Ansible's `environment:` put them there).
 */
function expectNoSecretOnACommandLine(seen: CommandLinesSeen): void {
  expect(seen.secrets.size, "no process was seen with a rendezvous secret in its environment").toBeGreaterThan(0);
  expect(seen.leaks).toEqual([]);
}

/** Records of a campaign's runs.jsonl, by run id. */
function byRunId(out: string): Map<string, any> {
  return new Map(runsJsonl(out).map((record) => [record.runId, record]));
}

describe("a local testbed through the CLI", { timeout: 15 * 60_000 }, () => {
  it("refuses to start, naming the fix, when the Docker engine does not answer", async () => {
    // A testbed of its own name: the shared one may be up already.
    const name = `${NAME}-nd`;
    const file = writeFile(
      dir,
      "no-docker.yaml",
      `testbed: {target: local, name: ${name}, nodes: 3, subnet: ${SUBNET}}\n`,
    );
    const result = await ringlab(state, ["up", file], { DOCKER_HOST: "unix:///tmp/ringlab-no-docker.sock" });
    expect(result.code).toBe(3);
    expect(result.stderr).toMatch(/error: Docker is installed but its engine is not reachable/);
    expect(result.stderr).toMatch(/hint: start the engine/);
    expect(everythingLabeled(name)).toEqual([]);
  });

  it("comes up with three nodes that answer over SSH", async () => {
    const up = await ringlab(state, ["up", campaign]);
    expect(up.code, up.stderr).toBe(0);
    const status = await ringlab(state, ["status"]);
    expect(status.code, status.stderr).toBe(0);
    const node2 = `${SUBNET.split(".").slice(0, 3).join("\\.")}\\.12`;
    expect(status.stdout).toMatch(new RegExp(`${NAME}-node-2\\s+2\\s+${node2}\\s+running\\s+ok`));
  });

  it("keeps the machine's other users off the testbed's ports, and lets root and the Docker group through (#49)", async () => {
    await upTestbed();
    const node0 = loadRecord(state, NAME)!.nodes[0]!.privateIp;
    expect(connectsAs(0, node0, 22), "root reaches node 0's sshd").toBe(true);
    expect(connectsAs(65534, node0, 22), "nobody, not in the Docker group, reached node 0's sshd").toBe(false);
    expect(firewallRules(NAME).join("\n")).toMatch(
      new RegExp(
        `-A OUTPUT -d ${SUBNET.replace(/\./g, "\\.")} -m comment --comment "ringlab testbed ${NAME}" -j RINGLAB-`,
      ),
    );
  });

  it("keeps the machine's other users off the nodes over IPv6 too: a node has no IPv6 address, link-local included (#67)", async () => {
    await upTestbed();
    const node0 = loadRecord(state, NAME)!.nodes[0]!;
    const container = nodeContainerName(NAME, 0);
    // Docker gives a container on a bridge a link-local address, which iptables (IPv4) does not filter.
    expect(connectsAs(65534, linkLocalAddress(container, `ringlab-${NAME}`), 22), "nobody reached sshd over IPv6").toBe(
      false,
    );
    expect(docker(["exec", container, "ip", "-6", "-o", "addr"])).toBe("");
    // ringlab's own setting, whatever the engine does by default (Debian's 20.10 here turns IPv6 off itself; engines
    // with IPv6 on, and those before 26.0 elsewhere, leave containers a link-local address uid 65534 reached).
    expect(docker(["exec", container, "cat", "/proc/sys/net/ipv6/conf/all/disable_ipv6"]).trim()).toBe("1");
    expect(connectsAs(0, node0.privateIp, 22), "root still reaches node 0's sshd over IPv4").toBe(true);
  });

  it("refuses a second testbed of the same name that does not match, and reuses one that does", async () => {
    await upTestbed();
    const other = writeFile(
      dir,
      "other.yaml",
      `testbed: {target: local, name: ${NAME}, nodes: 2, subnet: ${SUBNET}}\n`,
    );
    const refused = await ringlab(state, ["up", other]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(new RegExp(`a testbed named ${NAME} already exists but does not match this file`));
    const again = await ringlab(state, ["up", campaign]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toMatch(/already exists with 3 nodes: reusing it/);
    expect(
      docker(["ps", "-q", "--filter", `label=ringlab.testbed=${NAME}`])
        .trim()
        .split("\n"),
    ).toHaveLength(3);
  });

  it("refuses to adopt a testbed of the same name brought up from another state folder, naming that folder", async () => {
    await upTestbed();
    const refused = await ringlab(join(dir, "another-state"), ["up", campaign]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(
      `a testbed named ${NAME} already runs on this Docker engine, brought up from state folder ${state}`,
    );
    expect(refused.stderr).toContain(`hint: remove it with \`ringlab --state-dir ${state} down ${NAME}\``);
    expect(
      docker(["ps", "-q", "--filter", `label=ringlab.testbed=${NAME}`])
        .trim()
        .split("\n"),
    ).toHaveLength(3);
  });

  it("configures every node, as a Slurm cluster and for mpirun too", async () => {
    await upTestbed();
    const first = await ringlab(state, ["configure", "--slurm", "--mpi"]);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stderr).toMatch(/configured 3 nodes: [1-9]\d* changes/);
  });

  it("changes nothing when configured again, and the playbooks pass their checks (test/ansible/idempotence.sh on this testbed)", async () => {
    await configuredTestbed();
    const script = await runScript("test/ansible/idempotence.sh", {
      RINGLAB_IDEMPOTENCE_STATE_DIR: state,
      RINGLAB_IDEMPOTENCE_TESTBED: NAME,
    });
    expect(script.code, script.output.split("\n").slice(-60).join("\n")).toBe(0);
    expect(script.output).toMatch(/^PASS: test\/ansible\/idempotence.sh$/m);
    // It leaves the testbed as it found it: up, unshaped, no workers.
    expect(
      docker(["ps", "-q", "--filter", `label=ringlab.testbed=${NAME}`, "--filter", "label=ringlab.role=node"])
        .trim()
        .split("\n"),
    ).toHaveLength(3);
    expect(
      docker([
        "ps",
        "-aq",
        "--filter",
        `label=ringlab.testbed=${NAME}`,
        "--filter",
        "label=ringlab.role=worker",
      ]).trim(),
    ).toBe("");
  });

  it("runs the all-reduce probe on 3 nodes at 1 Gbit/s, and the shaping shows in the bus bandwidth", async () => {
    await configuredTestbed();
    const out = join(dir, "results");
    const run = await ringlab(state, [
      "run",
      "--nodes",
      "3",
      "--bandwidth",
      "1gbit",
      "--job",
      "allreduce",
      "--out",
      out,
      "--",
      "--max-bytes",
      "32M",
      "--iters",
      "10",
    ]);
    expect(run.code, run.stderr).toBe(0);
    const [runDir] = readdirSync(out);
    const result = JSON.parse(readFileSync(join(out, runDir!, "result.json"), "utf8"));
    expect(result.world).toMatchObject({ size: 3, nodes: 3, backend: "gloo" });
    expect(result.world.hostnames.sort()).toEqual([0, 1, 2].map((rank) => `${NAME}-node-${rank}`));
    const largest = result.metrics.rows.at(-1);
    expect(largest.sizeBytes).toBe(32 * 1024 * 1024);
    expect(largest.wrong).toBe(0);
    // Above 1 Gbit/s would mean the tc limit does not apply to the workers; far below, that something else limits.
    expect(largest.busbwGbps).toBeGreaterThan(0.7);
    expect(largest.busbwGbps).toBeLessThan(1.02);
    expect(run.stdout).toMatch(/32 MiB .* %/);
    for (const rank of [0, 1, 2]) expect(existsSync(join(out, runDir!, `worker-${rank}.log`))).toBe(true);
  });

  it("trains with a parameter server on 2 nodes × 2 processes, and probes a sharded one inside a node", async () => {
    await configuredTestbed();
    const out = join(dir, "placement");
    const train = await ringlab(state, [
      "run",
      "--nodes",
      "2",
      "--processes-per-node",
      "2",
      "--cpus",
      "0.25",
      "--job",
      "train",
      "--out",
      out,
      "--",
      "--model",
      "tiny",
      "--batch-size",
      "8",
      "--num-warmup-batches",
      "1",
      "--num-batches-per-iter",
      "2",
      "--num-iters",
      "2",
      "--reduction",
      "parameter-server",
    ]);
    expect(train.code, train.stderr).toBe(0);
    expect(train.stdout).toMatch(/train on 2 nodes × 2 processes \(4 workers, gloo\)/);
    const probe = await ringlab(state, [
      "run",
      "--nodes",
      "1",
      "--processes-per-node",
      "2",
      "--job",
      "allreduce",
      "--out",
      out,
      "--",
      "--max-bytes",
      "1M",
      "--iters",
      "2",
      "--reduction",
      "sharded-parameter-server",
    ]);
    expect(probe.code, probe.stderr).toBe(0);
    const results = readdirSync(out)
      .sort()
      .map((run) => JSON.parse(readFileSync(join(out, run, "result.json"), "utf8")));
    const [probed, trained] = [results.find((r) => r.job === "allreduce"), results.find((r) => r.job === "train")];
    expect(trained.world).toMatchObject({ size: 4, nodes: 2, procsPerNode: 2 });
    expect(new Set(trained.world.hostnames).size).toBe(2);
    expect(trained.knobs.reduction).toBe("parameter-server");
    expect(Number.isFinite(trained.metrics.finalLoss)).toBe(true);
    expect(trained.metrics.imagesPerSecondTotal.mean).toBeGreaterThan(0);
    expect(probed.world).toMatchObject({ size: 2, nodes: 1, procsPerNode: 2 });
    expect(probed.knobs.reduction).toBe("sharded-parameter-server");
    expect(probed.metrics.rows.every((row: { wrong: number }) => row.wrong === 0)).toBe(true);
  });

  it("runs every worker under the CPU quota it is given, and stops them within seconds on SIGTERM, exiting 130", async () => {
    await configuredTestbed();
    const child = startRingLab(state, [
      "run",
      "--nodes",
      "2",
      "--job",
      "train",
      "--cpus",
      "0.5",
      "--out",
      join(dir, "term"),
      "--",
      "--model",
      "tiny",
      "--batch-size",
      "8",
      "--num-iters",
      "1000000",
    ]);
    const workers = () =>
      docker(["ps", "-q", "--filter", "label=ringlab.run_id", "--filter", `label=ringlab.testbed=${NAME}`]).trim();
    // What the kernel enforces, read inside each running worker: 5 ms of CPU per 10 ms period, not Docker's --cpus
    // period of 100 ms, after which a worker that waited runs faster (cgroup v2's cpu.max, or v1's quota and period
    // where the engine runs on cgroup v1), and one torch thread.
    const readQuota =
      "cat /sys/fs/cgroup/cpu.max 2>/dev/null || echo $(cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us /sys/fs/cgroup/cpu/cpu.cfs_period_us)";
    // Read first, assert after the SIGTERM: a failed assertion must not leave the run holding the testbed.
    const seen = await stoppedIfItFails(child, async () => {
      const deadline = Date.now() + 120_000;
      while (workers().split("\n").filter(Boolean).length < 2) {
        if (Date.now() > deadline) throw new Error(`the workers never started:\n${child.output()}`);
        await sleep(500);
      }
      return workers()
        .split("\n")
        .map((worker) => ({
          quota: docker(["exec", worker, "sh", "-c", readQuota]).trim(),
          threads: docker(["exec", worker, "printenv", "OMP_NUM_THREADS"]).trim(),
        }));
    });
    const signalled = Date.now();
    process.kill(child.pid!, "SIGTERM");
    const { code } = await exited(child);
    expect(code, child.output()).toBe(130);
    while (workers() !== "" && Date.now() - signalled < 15_000) await sleep(250);
    expect(workers()).toBe("");
    expect(Date.now() - signalled).toBeLessThan(15_000);
    expect(seen).toEqual([
      { quota: "5000 10000", threads: "1" },
      { quota: "5000 10000", threads: "1" },
    ]);
  });

  it("refuses a second command on the testbed while one holds it, naming the holder", async () => {
    await configuredTestbed();
    const child = startRingLab(state, [
      "run",
      "--nodes",
      "1",
      "--job",
      "train",
      "--out",
      join(dir, "held"),
      "--",
      "--model",
      "tiny",
      "--batch-size",
      "8",
      "--num-iters",
      "1000000",
    ]);
    const second = await stoppedIfItFails(child, async () => {
      const deadline = Date.now() + 60_000;
      while (!/shape links/.test(child.output())) {
        if (Date.now() > deadline) throw new Error(`the run never started:\n${child.output()}`);
        await sleep(200);
      }
      return ringlab(state, ["up", campaign]);
    });
    const ended = exited(child);
    process.kill(child.pid!, "SIGTERM");
    await ended;
    expect(second.code).toBe(2);
    expect(second.stderr).toContain(
      `error: testbed ${NAME} is in use by \`ringlab --state-dir ${state} run --nodes 1 --job train`,
    );
    expect(second.stderr).toContain(`(pid ${child.pid}, since `);
  });

  it("reports a run whose workers fail with exit code 5, the rank's exit code and its log", async () => {
    await configuredTestbed();
    const out = join(dir, "bad");
    const run = await ringlab(state, [
      "run",
      "--nodes",
      "2",
      "--job",
      "train",
      "--out",
      out,
      "--",
      "--model",
      "no-such-model",
    ]);
    expect(run.code).toBe(5);
    expect(run.stdout).toMatch(/run FAILED .*exited with code 2/);
    const [runDir] = readdirSync(out);
    expect(readFileSync(join(out, runDir!, "worker-0.log"), "utf8")).toMatch(/invalid choice: 'no-such-model'/);
    // The failed run's workers are gone (they carry their run's id as a label).
    expect(
      docker(["ps", "-aq", "--filter", "label=ringlab.run_id", "--filter", `label=ringlab.testbed=${NAME}`]).trim(),
    ).toBe("");
  });

  it("reports a run whose worker exits cleanly without writing a result as failed", async () => {
    await configuredTestbed();
    const out = join(dir, "no-result");
    // --help: the worker prints its usage and exits 0 before it writes anything.
    const run = await ringlab(state, ["run", "--nodes", "1", "--out", out, "--", "--help"]);
    expect(run.code).toBe(5);
    expect(run.stdout).toMatch(
      /run FAILED .*: \S+-node-0 failed: Worker rank 0 on \S+ exited with code 0 but wrote no result \(\S+result\.json: file not found: /,
    );
    const [runDir] = readdirSync(out);
    expect(readdirSync(join(out, runDir!)).sort()).toEqual(["outcome.json", "worker-0.log"]);
  });

  it("records a failed run with its error and logs, goes on with the rest, and exits 5", async () => {
    await configuredTestbed();
    // The run that times out comes first: the one after it must still run. The limit is for both, and the quick run
    // takes 8-14 s here (worker start and rendezvous), more on a busy machine: 30 s, not 15, so that it never times
    // out.
    const { run, out } = await keptCampaign(
      "failing",
      `
  matrix: {nodes: [2], model: tiny, batchSize: 8, bandwidth: 1gbit, numIters: [1000000, 2]}
  train: {numWarmupBatches: 1, numBatchesPerIter: 2}
  probe: {enabled: false}
  runTimeoutSeconds: 30
`,
    );
    expect(run.code, run.stderr).toBe(5);
    // Configured above from the same playbooks, inventory and worker image: not converged again.
    expect(run.stderr).toMatch(NOT_CONFIGURED_AGAIN);
    expect(run.stderr).not.toMatch(/configure 3 nodes/);
    expect(run.stderr).toMatch(/campaign finished: 1 ok, 1 failed/);
    const runs = byRunId(out);
    expect([...runs.keys()]).toEqual([
      "train-tiny-b8-n2-1gbit-numiters-1000000-r1",
      "train-tiny-b8-n2-1gbit-numiters-2-r1",
    ]);
    const slow = runs.get("train-tiny-b8-n2-1gbit-numiters-1000000-r1");
    expect(slow.status).toBe("failed");
    expect(slow.error).toMatch(/timed out after 30 s and was stopped/);
    expect(existsSync(join(out, slow.logsDir, "worker-1.log"))).toBe(true);
    expect(runs.get("train-tiny-b8-n2-1gbit-numiters-2-r1").status).toBe("ok");
    expect(readFileSync(join(out, "report.md"), "utf8")).toMatch(/train-tiny-b8-n2-1gbit-numiters-1000000-r1/);
    // Kept: no worker of the timed-out run is left on it.
    expect(
      docker([
        "ps",
        "-aq",
        "--filter",
        `label=ringlab.testbed=${NAME}`,
        "--filter",
        "label=ringlab.role=worker",
      ]).trim(),
    ).toBe("");
  });

  it("runs a parameter server on 1 node × 2 and 2 nodes × 1, records the placement, and the report compares them", async () => {
    await configuredTestbed();
    const { run, out } = await keptCampaign(
      "placement",
      `
  matrix: {nodes: [1, 2], processesPerNode: [1, 2], model: tiny, batchSize: 8, bandwidth: 1gbit, reduction: parameter-server}
  maxWorkers: 2
  train: {numWarmupBatches: 1, numBatchesPerIter: 2, numIters: 2}
  probe: {maxBytes: 1048576, iters: 2}
`,
    );
    expect(run.code, run.stderr).toBe(0);
    const runs = byRunId(out);
    expect([...runs.keys()]).toEqual([
      "allreduce-n1-p2-parameter-server-r1",
      "allreduce-n2-1gbit-parameter-server-r1",
      "train-tiny-b8-n1-reduction-parameter-server-r1",
      "train-tiny-b8-n1-p2-reduction-parameter-server-r1",
      "train-tiny-b8-n2-1gbit-reduction-parameter-server-r1",
    ]);
    const inOneNode = runs.get("train-tiny-b8-n1-p2-reduction-parameter-server-r1");
    expect(inOneNode.params).toMatchObject({
      nodes: 1,
      processesPerNode: 2,
      bandwidth: null,
      knobs: { reduction: "parameter-server" },
    });
    expect(inOneNode.result.world).toMatchObject({ size: 2, nodes: 1, procsPerNode: 2 });
    expect(inOneNode.result.knobs.reduction).toBe("parameter-server");
    expect(
      runs
        .get("allreduce-n2-1gbit-parameter-server-r1")
        .result.metrics.rows.every((row: { wrong: number }) => row.wrong === 0),
    ).toBe(true);
    expect(readFileSync(join(out, "report.md"), "utf8")).toMatch(
      /^- Placements, tiny · batch 8 · 1gbit · 2 workers: .* was fastest/m,
    );
  });

  it("writes the dataset once, trains to a held-out accuracy, restarts the killed rank from its checkpoint, goes on without a lost node and reports time to train", async () => {
    await configuredTestbed();
    const dataCampaign = `
  matrix: {nodes: [1, 2], model: small, batchSize: 16, bandwidth: 1gbit}
  dataset: {name: shapes, classes: 4, imagesPerClass: 40, imageSize: 32}
  train: {data: dataset, epochs: 2, learningRate: 0.02, momentum: 0.9, loaderWorkers: 1, checkpointEvery: 2, maxRestarts: 1, failAtStep: 3, failRank: 0}
  probe: {enabled: false}
`;
    const { run, out, work } = await keptCampaign("data", dataCampaign);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toMatch(/dataset shapes: 4 classes x 40 images of 32 px on the shared storage/);
    const records = runsJsonl(out);
    expect(records.map((r) => [r.runId, r.status])).toEqual([
      ["train-small-b16-n1-r1", "ok"],
      ["train-small-b16-n2-1gbit-r1", "ok"],
    ]);
    for (const record of records) {
      const metrics = record.result.metrics;
      // Killed after step 3, resumed from the checkpoint of step 2: one step redone.
      expect([metrics.restarts, metrics.stepsRedone, metrics.recovery[0].resumedFromStep]).toEqual([1, 1, 2]);
      expect(metrics.epochs).toHaveLength(2);
      expect(metrics.data).toMatchObject({ kind: "folder", classes: 4, trainImages: 128, valImages: 32 });
      expect(metrics.timeToTrainSeconds).toBeGreaterThan(0);
      expect(readFileSync(join(out, record.logsDir, "worker-0.log"), "utf8")).toMatch(
        /fault injection: killing this process after step 3/,
      );
    }
    const report = readFileSync(join(out, "report.md"), "utf8");
    expect(report).toMatch(/^## Real data and time to train$/m);
    expect(report).toMatch(
      /^\| train-small-b16-n2-1gbit-r1 \| small · batch 16 · 2 nodes × 1 · 1gbit \| [0-9.]+ \| n\/a \| [0-9.]+% \| [0-9.]+ s \| 2 \| [0-9.]+% \| 1 \| 1 \| [0-9.]+ s \|$/m,
    );
    // The 2-node run again (the same run id; the testbed was kept, so its folder on the shared storage is still
    // there), now losing node 1 after step 3: node 1's worker container is killed, and node 0 goes on alone
    // (minNodes 1) from the checkpoint of step 2 -- this run's own, never the finished run's of the last campaign.
    const second = await keptCampaign(
      "data-node-loss",
      dataCampaign.replace("nodes: [1, 2]", "nodes: [2]").replace("failRank: 0", "failNode: 1, minNodes: 1"),
    );
    expect(second.run.code, second.run.stderr).toBe(0);
    const [lost] = runsJsonl(second.out);
    expect([
      lost.runId,
      lost.status,
      lost.result.metrics.restarts,
      lost.result.metrics.recovery[0].resumedFromStep,
    ]).toEqual(["train-small-b16-n2-1gbit-r1", "ok", 1, 2]);
    expect([
      lost.result.metrics.nodesAtStart,
      lost.result.world.nodes,
      lost.result.metrics.recovery[0].worldSizeAfter,
    ]).toEqual([2, 1, 1]);
    expect(lost.result.metrics.recovery[0].recoverySeconds).toBeLessThan(30);
    expect(readFileSync(join(second.out, lost.logsDir, "worker-1.log"), "utf8")).toMatch(
      /fault injection: node 1 is lost after step 3/,
    );
    expect(readFileSync(join(second.out, "report.md"), "utf8")).toMatch(
      /\| 1 \(lost 1 of 2 nodes, went on with 1\) \| 1 \| [0-9.]+ s \|$/m,
    );
    // The dataset is there once: writing it again changes nothing.
    const again = await ringlab(state, ["dataset", join(work, "data.yaml")]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toMatch(/dataset shapes: already at .*\/datasets\/shapes, unchanged/);
  });

  it("recreates a lost node container, reconfigures it, and the later runs succeed; the record says so", async () => {
    await configuredTestbed();
    const work = scratch("lost");
    const file = writeFile(
      work,
      "lost.yaml",
      `${TESTBED_LINE}
campaign:
  keep: true
  matrix: {nodes: [2, 3], model: tiny, batchSize: 8, bandwidth: 1gbit}
  train: {numWarmupBatches: 1, numBatchesPerIter: 2, numIters: 2}
  probe: {enabled: false}
`,
    );
    const out = join(work, "results");
    const child = startRingLab(state, ["campaign", file, "--results", out]);
    // Run 1 uses nodes 0 and 1; node 2 dies under it, and run 2 (3 nodes) needs it back.
    const { code } = await stoppedIfItFails(child, async () => {
      const deadline = Date.now() + 5 * 60_000;
      while (!/run 1\/2: /.test(child.output())) {
        if (Date.now() > deadline) throw new Error(`run 1 never started:\n${child.output()}`);
        await sleep(200);
      }
      docker(["kill", `ringlab-${NAME}-node-2`]);
      return exited(child);
    });
    expect(code, child.output()).toBe(0);
    expect(child.output()).toMatch(new RegExp(`recreate lost node ${NAME}-node-2`));
    const runs = byRunId(out);
    expect([...runs.values()].map((r) => r.status)).toEqual(["ok", "ok"]);
    expect(runs.get("train-tiny-b8-n3-1gbit-r1").nodeRecovery).toMatchObject({ recreated: [`${NAME}-node-2`] });
  });

  it("runs a Slurm campaign as one sbatch job per run whose script it keeps, and status shows Slurm's nodes", async () => {
    await configuredTestbed();
    const watch = watchCommandLines();
    const { run, out, work } = await keptCampaign(
      "slurm",
      `
  matrix: {nodes: [1, 2], model: tiny, batchSize: 8, bandwidth: 1gbit}
  train: {numWarmupBatches: 1, numBatchesPerIter: 2, numIters: 2}
  probe: {maxBytes: 4194304, iters: 3}
  # Large enough that the probe's line cannot fall with one stalled small message (CI once saw that at 1 MiB × 2):
  # the calibration below needs its link.
  launcher: slurm
`,
    );
    expect(run.code, run.stderr).toBe(0);
    expectNoSecretOnACommandLine(watch.stop());
    // A Slurm cluster since its first configure (the node recreated above became a Slurm node when it was configured
    // again): not converged again.
    expect(run.stderr).toMatch(NOT_CONFIGURED_AGAIN);
    const records = runsJsonl(out);
    expect(records.map((r) => [r.runId, r.status, r.params.launcher])).toEqual([
      ["allreduce-n2-1gbit-r1", "ok", "slurm"],
      ["train-tiny-b8-n1-r1", "ok", "slurm"],
      ["train-tiny-b8-n2-1gbit-r1", "ok", "slurm"],
    ]);
    const twoNodes = join(out, records[2].logsDir);
    expect(readdirSync(twoNodes).sort()).toEqual([
      "job.sbatch",
      "outcome.json",
      "result.json",
      "slurm.out",
      "worker-0.log",
      "worker-1.log",
    ]);
    const script = readFileSync(join(twoNodes, "job.sbatch"), "utf8");
    expect(script).toMatch(/^#SBATCH --nodes=2$/m);
    expect(script).toMatch(/^#SBATCH --job-name=ringlab-train-tiny-b8-n2-1gbit-r1$/m);
    expect(script).toMatch(
      /ringlab-slurm worker --run-id train-tiny-b8-n2-1gbit-r1 --cpus [0-9.]+ \\\n {2}train --model tiny /,
    );
    expect(records[2].result.world).toMatchObject({ size: 2, nodes: 2 });

    const status = await ringlab(state, ["status"]);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toMatch(/^Slurm \(launcher slurm\):$/m);
    for (const rank of [0, 1, 2])
      expect(status.stdout).toMatch(new RegExp(`^${NAME}-node-${rank} ringlab\\* idle `, "m"));
    // `up` on a testbed still running reuses it, and it stays a Slurm cluster.
    const again = await ringlab(state, ["up", join(work, "slurm.yaml")]);
    expect(again.stderr).toMatch(new RegExp(`testbed ${NAME} already exists with 3 nodes: reusing it`));
    expect((await ringlab(state, ["status"])).stdout).toMatch(new RegExp(`^${NAME}-node-0 ringlab\\* idle `, "m"));

    // Calibrated from its own real records, the campaign run again (nothing left to run) saves no predictions: made
    // now, they would come after the runs and from their own measurements, so it says so and points to `plan`, and
    // the report claims nothing (a file of this test's own: later campaigns of the state folder do not read it).
    const calibration = join(work, "calibration.json");
    const calibrated = await ringlab(state, ["calibrate", out, "--out", calibration]);
    expect(calibrated.code, calibrated.stderr).toBe(0);
    expect(calibrated.stdout, calibrated.stderr).toMatch(
      /^compute tiny batch 8 fp32 at [\d.]+ cores: t_c [\d.]+ ± [\d.]+ s \(measured in /m,
    );
    expect(calibrated.stdout, calibrated.stderr).toMatch(/^link 1gbit, 2 nodes × 1, ring: /m);
    const rerun = await ringlab(state, [
      "campaign",
      join(work, "slurm.yaml"),
      "--results",
      out,
      "--calibration",
      calibration,
    ]);
    expect(rerun.code, rerun.stderr).toBe(0);
    expect(rerun.stderr).toMatch(
      /warning: predictions not saved: 3 of the campaign's 3 runs are done already in .*, so predictions made now would not come before them; `ringlab plan .*slurm\.yaml --calibration .*calibration\.json` prints them without running anything/,
    );
    expect(rerun.stderr).not.toMatch(/before they ran/);
    expect(existsSync(join(out, "predictions.json"))).toBe(false);
    expect(readFileSync(join(out, "report.md"), "utf8")).not.toMatch(/^## Predict/m);
  });

  it("runs a campaign under mpirun, one mpirun per run whose script it keeps, the probe through Open MPI too, and leaves no container behind", async () => {
    await configuredTestbed();
    const watch = watchCommandLines();
    const { run, out } = await keptCampaign(
      "mpi",
      `
  matrix: {nodes: [1, 2], model: tiny, batchSize: 8, bandwidth: 1gbit}
  train: {numWarmupBatches: 1, numBatchesPerIter: 2, numIters: 2}
  probe: {maxBytes: 33554432, iters: 10, library: [torch, mpi], reference: iperf3}
  launcher: mpi
`,
    );
    expect(run.code, run.stderr).toBe(0);
    expectNoSecretOnACommandLine(watch.stop());
    // Configured for mpirun since its first configure: not converged again.
    expect(run.stderr).toMatch(NOT_CONFIGURED_AGAIN);
    const records = runsJsonl(out);
    expect(records.map((r) => [r.runId, r.status, r.params.launcher])).toEqual([
      ["allreduce-n2-1gbit-r1", "ok", "mpi"],
      ["allreduce-n2-1gbit-mpi-r1", "ok", "mpi"],
      ["train-tiny-b8-n1-r1", "ok", "mpi"],
      ["train-tiny-b8-n2-1gbit-r1", "ok", "mpi"],
    ]);
    // The second probe summed through Open MPI in the worker containers, on the same shaped link: right sums, and no
    // faster than the link (under the CPU quota its polling progress engine is slower: test/bench/README.md).
    const viaMpi = records[1].result.metrics;
    expect([viaMpi.library, viaMpi.libraryVersion]).toEqual(["mpi", expect.stringMatching(/^Open MPI v4\./)]);
    expect(viaMpi.rows.map((row: { wrong: number }) => row.wrong)).toEqual(viaMpi.rows.map(() => 0));
    expect(viaMpi.rows.at(-1).busbwGbps).toBeLessThan(1.02);
    // iperf3's one TCP stream on the same 1 Gbit/s link, just before torch.distributed's probe: the link's rate.
    expect(records[0].result.metrics.referenceGbps).toBeGreaterThan(0.85);
    expect(records[0].result.metrics.referenceGbps).toBeLessThan(1.02);
    expect(readFileSync(join(out, "report.md"), "utf8")).toMatch(
      /^1gbit, 2 nodes: torch\.distributed \(gloo\) moves its bytes at .*; Open MPI moves its bytes at .* iperf3's one TCP stream on the same link just before: 0\.\d+ Gbit\/s/m,
    );
    records.splice(1, 1);
    const twoNodes = join(out, records[2].logsDir);
    expect(readdirSync(twoNodes).sort()).toEqual([
      "hostfile",
      "mpirun.out",
      "mpirun.sh",
      "outcome.json",
      "result.json",
      "worker-0.log",
      "worker-1.log",
    ]);
    const script = readFileSync(join(twoNodes, "mpirun.sh"), "utf8");
    expect(script).toMatch(/^exec mpirun --allow-run-as-root /m);
    expect(script).toMatch(/-np 2 --map-by ppr:1:node /);
    expect(script).toMatch(/ringlab-mpi worker --run-id train-tiny-b8-n2-1gbit-r1 /);
    expect(readFileSync(join(twoNodes, "worker-1.log"), "utf8")).toMatch(/node 1 of 2/);
    expect(records[2].result.world).toMatchObject({ size: 2, nodes: 2 });
    // The shaping applies under mpirun too: at the largest size, 16 MiB (past tc's burst, which lets small messages
    // through faster; sizes go up 4x from 4 KiB), the probe's bus bandwidth is the 1 Gbit/s link's, as in the Ansible
    // launcher's probe above.
    const largest = records[0].result.metrics.rows.at(-1);
    expect(largest.sizeBytes).toBe(16 * 1024 * 1024);
    expect(largest.busbwGbps).toBeGreaterThan(0.7);
    expect(largest.busbwGbps).toBeLessThan(1.02);
    expect(
      docker([
        "ps",
        "-aq",
        "--filter",
        `label=ringlab.testbed=${NAME}`,
        "--filter",
        "label=ringlab.role=worker",
      ]).trim(),
    ).toBe("");
  });

  it("leaves a testbed alone when a campaign of the same name but another shape is refused", async () => {
    await upTestbed();
    const clash = writeFile(
      dir,
      "clash.yaml",
      `testbed: {target: local, name: ${NAME}, nodes: 2, subnet: ${SUBNET}}
campaign: {matrix: {nodes: 2, model: tiny, batchSize: 8, bandwidth: 1gbit}}
`,
    );
    const refused = await ringlab(state, ["campaign", clash, "--results", join(dir, "clash")]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/already exists but does not match this file/);
    expect(
      docker(["ps", "-q", "--filter", `label=ringlab.testbed=${NAME}`, "--filter", "label=ringlab.role=node"])
        .trim()
        .split("\n"),
    ).toHaveLength(3);
  });

  it("refuses to remove a testbed it does not know, listing the ones it does (a campaign's name is not its testbed's)", async () => {
    await upTestbed();
    const result = await ringlab(state, ["down", "local-smoke"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/no testbed named local-smoke is known/);
    expect(result.stderr).toMatch(new RegExp(`hint: known testbeds: .*${NAME}`));
    expect(
      docker(["ps", "-q", "--filter", `label=ringlab.testbed=${NAME}`, "--filter", "label=ringlab.role=node"])
        .trim()
        .split("\n"),
    ).toHaveLength(3);
  });

  it("comes down completely, its SSH connections' folder too, and a second down finds nothing left", async () => {
    await configuredTestbed();
    const sockets = controlPathDir(loadRecord(state, NAME)!);
    expect(existsSync(sockets), "the playbooks before share SSH connections through this folder").toBe(true);
    const down = await ringlab(state, ["down"]);
    expect(down.code, down.stderr).toBe(0);
    expect(existsSync(sockets), `${sockets} outlived the testbed`).toBe(false);
    expect(down.stderr).toMatch(new RegExp(`removed testbed ${NAME}: 3 containers, 1 networks`));
    expect(everythingLabeled(NAME)).toEqual([]);
    expect(firewallRules(NAME), "the host firewall's rules outlived the testbed").toEqual([]);
    const again = await ringlab(state, ["down", NAME]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toMatch(new RegExp(`nothing left of testbed ${NAME}`));
  });

  it("rolls back a half-finished up: what it created is removed, what it did not create is left alone", async () => {
    // A testbed of its own, on a subnet no other uses: the shared one may be up.
    const name = `${NAME}-rb`;
    const file = writeFile(
      dir,
      "rollback.yaml",
      `testbed: {target: local, name: ${name}, nodes: 3, subnet: ${freeSubnet()}}\n`,
    );
    // A foreign container holding node 2's name makes `up` fail after the network and two nodes exist.
    const blocker = `ringlab-${name}-node-2`;
    docker(["run", "-d", "--name", blocker, "ringlab/debian:bookworm", "sleep", "300"]);
    try {
      const up = await ringlab(state, ["up", file]);
      expect(up.code).toBe(4);
      expect(up.stderr).toMatch(/roll back: remove what was created/);
      expect(everythingLabeled(name)).toEqual([]);
      expect(firewallRules(name), "the rollback left the host firewall's rules").toEqual([]);
      expect(docker(["ps", "-q", "--filter", `name=^${blocker}$`]).trim()).not.toBe("");
    } finally {
      docker(["rm", "-f", blocker]);
    }
  });
});
