/**
 * The local testbed end to end, through the CLI: up, configure (twice), run the probe and training, status,
 * down; and the faults a user meets: Docker not running, a name already taken, a failure half-way through up.
 */
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { loadRecord } from "../../src/testbed/record.ts";
import { controlPathDir } from "../../src/testbed/playbook.ts";
import { docker, everythingLabeled, exited, ringlab, scratch, sleep, startRingLab, writeFile } from "./cli.ts";

const NAME = `e2e${process.pid}`;
const dir = scratch("testbed");
const state = join(dir, "state");
const campaign = writeFile(dir, "testbed.yaml", `testbed: {target: local, name: ${NAME}, nodes: 3, subnet: 10.79.0.0/24}\n`);

afterAll(async () => {
  await ringlab(state, ["down", NAME]);
});

describe("a local testbed through the CLI", { timeout: 10 * 60_000 }, () => {
  it("refuses to start, naming the fix, when the Docker engine does not answer", async () => {
    const result = await ringlab(state, ["up", campaign], { DOCKER_HOST: "unix:///tmp/ringlab-no-docker.sock" });
    expect(result.code).toBe(3);
    expect(result.stderr).toMatch(/error: Docker is installed but its engine is not reachable/);
    expect(result.stderr).toMatch(/hint: start the engine/);
    expect(everythingLabeled(NAME)).toEqual([]);
  });

  it("comes up with three nodes that answer over SSH", async () => {
    const up = await ringlab(state, ["up", campaign]);
    expect(up.code, up.stderr).toBe(0);
    const status = await ringlab(state, ["status"]);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toMatch(new RegExp(`${NAME}-node-2\\s+2\\s+10\\.79\\.0\\.12\\s+running\\s+ok`));
  });

  it("refuses a second testbed of the same name that does not match, and reuses one that does", async () => {
    const other = writeFile(dir, "other.yaml", `testbed: {target: local, name: ${NAME}, nodes: 2, subnet: 10.79.0.0/24}\n`);
    const refused = await ringlab(state, ["up", other]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(new RegExp(`a testbed named ${NAME} already exists but does not match this file`));
    const again = await ringlab(state, ["up", campaign]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toMatch(/already exists with 3 nodes: reusing it/);
    expect(docker(["ps", "-q", "--filter", `label=ringlab.testbed=${NAME}`]).trim().split("\n")).toHaveLength(3);
  });

  it("refuses to adopt a testbed of the same name brought up from another state folder, naming that folder", async () => {
    const refused = await ringlab(join(dir, "another-state"), ["up", campaign]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(`a testbed named ${NAME} already runs on this Docker engine, brought up from state folder ${state}`);
    expect(refused.stderr).toContain(`hint: remove it with \`ringlab --state-dir ${state} down ${NAME}\``);
    expect(docker(["ps", "-q", "--filter", `label=ringlab.testbed=${NAME}`]).trim().split("\n")).toHaveLength(3);
  });

  it("configures every node, and a second configure changes nothing", async () => {
    const first = await ringlab(state, ["configure"]);
    expect(first.code, first.stderr).toBe(0);
    const second = await ringlab(state, ["configure"]);
    expect(second.code, second.stderr).toBe(0);
    expect(second.stderr).toMatch(/configured 3 nodes: no changes \(already configured\)/);
  });

  it("runs the all-reduce probe on 3 nodes at 1 Gbit/s, and the shaping shows in the bus bandwidth", async () => {
    const out = join(dir, "results");
    const run = await ringlab(state, ["run", "--nodes", "3", "--bandwidth", "1gbit", "--job", "allreduce", "--out", out, "--", "--max-bytes", "32M", "--iters", "10"]);
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

  it("trains the tiny model on 2 of the 3 nodes", async () => {
    const out = join(dir, "train");
    const run = await ringlab(state, ["run", "--nodes", "2", "--job", "train", "--out", out, "--",
      "--model", "tiny", "--batch-size", "16", "--num-warmup-batches", "2", "--num-batches-per-iter", "3", "--num-iters", "3"]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/train on 2 nodes \(2 workers, gloo\)/);
    const [runDir] = readdirSync(out);
    const result = JSON.parse(readFileSync(join(out, runDir!, "result.json"), "utf8"));
    expect(result.job).toBe("train");
    expect(result.world.size).toBe(2);
    expect(Number.isFinite(result.metrics.finalLoss)).toBe(true);
    expect(result.metrics.imagesPerSecondTotal.mean).toBeGreaterThan(0);
  });

  it("trains with a parameter server on 2 nodes × 2 processes, and probes a sharded one inside a node", async () => {
    const out = join(dir, "placement");
    const train = await ringlab(state, ["run", "--nodes", "2", "--processes-per-node", "2", "--cpus", "0.25", "--job", "train", "--out", out, "--",
      "--model", "tiny", "--batch-size", "8", "--num-warmup-batches", "1", "--num-batches-per-iter", "2", "--num-iters", "2", "--reduction", "parameter-server"]);
    expect(train.code, train.stderr).toBe(0);
    expect(train.stdout).toMatch(/train on 2 nodes × 2 processes \(4 workers, gloo\)/);
    const probe = await ringlab(state, ["run", "--nodes", "1", "--processes-per-node", "2", "--job", "allreduce", "--out", out, "--",
      "--max-bytes", "1M", "--iters", "2", "--reduction", "sharded-parameter-server"]);
    expect(probe.code, probe.stderr).toBe(0);
    const results = readdirSync(out).sort().map((run) => JSON.parse(readFileSync(join(out, run, "result.json"), "utf8")));
    const [probed, trained] = [results.find((r) => r.job === "allreduce"), results.find((r) => r.job === "train")];
    expect(trained.world).toMatchObject({ size: 4, nodes: 2, procsPerNode: 2 });
    expect(new Set(trained.world.hostnames).size).toBe(2);
    expect(trained.knobs.reduction).toBe("parameter-server");
    expect(Number.isFinite(trained.metrics.finalLoss)).toBe(true);
    expect(probed.world).toMatchObject({ size: 2, nodes: 1, procsPerNode: 2 });
    expect(probed.knobs.reduction).toBe("sharded-parameter-server");
    expect(probed.metrics.rows.every((row: { wrong: number }) => row.wrong === 0)).toBe(true);
  });

  it("runs every worker under the CPU quota it is given, and stops them within seconds on SIGTERM, exiting 130", async () => {
    const child = startRingLab(state, ["run", "--nodes", "2", "--job", "train", "--cpus", "0.5", "--out", join(dir, "term"), "--",
      "--model", "tiny", "--batch-size", "8", "--num-iters", "1000000"]);
    const workers = () => docker(["ps", "-q", "--filter", "label=ringlab.run_id", "--filter", `label=ringlab.testbed=${NAME}`]).trim();
    const deadline = Date.now() + 120_000;
    while (workers().split("\n").filter(Boolean).length < 2) {
      if (Date.now() > deadline) throw new Error(`the workers never started:\n${child.output()}`);
      await sleep(500);
    }
    // What the kernel enforces, read inside each running worker: 50 ms of CPU per 100 ms period (cgroup v2's
    // cpu.max, or v1's quota and period where the engine runs on cgroup v1), and one torch thread.
    const readQuota = "cat /sys/fs/cgroup/cpu.max 2>/dev/null || echo $(cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us /sys/fs/cgroup/cpu/cpu.cfs_period_us)";
    // Read first, assert after the SIGTERM: a failed assertion must not leave the run holding the testbed.
    const seen = workers().split("\n").map((worker) => ({
      quota: docker(["exec", worker, "sh", "-c", readQuota]).trim(),
      threads: docker(["exec", worker, "printenv", "OMP_NUM_THREADS"]).trim(),
    }));
    const signalled = Date.now();
    process.kill(child.pid!, "SIGTERM");
    const { code } = await exited(child);
    expect(code, child.output()).toBe(130);
    while (workers() !== "" && Date.now() - signalled < 15_000) await sleep(250);
    expect(workers()).toBe("");
    expect(Date.now() - signalled).toBeLessThan(15_000);
    expect(seen).toEqual([{ quota: "50000 100000", threads: "1" }, { quota: "50000 100000", threads: "1" }]);
  });

  it("refuses a second command on the testbed while one holds it, naming the holder", async () => {
    const child = startRingLab(state, ["run", "--nodes", "1", "--job", "train", "--out", join(dir, "held"), "--",
      "--model", "tiny", "--batch-size", "8", "--num-iters", "1000000"]);
    const deadline = Date.now() + 60_000;
    while (!/shape links/.test(child.output())) {
      if (Date.now() > deadline) throw new Error(`the run never started:\n${child.output()}`);
      await sleep(200);
    }
    const second = await ringlab(state, ["up", campaign]);
    process.kill(child.pid!, "SIGTERM");
    await exited(child);
    expect(second.code).toBe(2);
    expect(second.stderr).toContain(`error: testbed ${NAME} is in use by \`ringlab --state-dir ${state} run --nodes 1 --job train`);
    expect(second.stderr).toContain(`(pid ${child.pid}, since `);
  });

  it("reports a run whose workers fail with exit code 5, the rank's exit code and its log", async () => {
    const out = join(dir, "bad");
    const run = await ringlab(state, ["run", "--nodes", "2", "--job", "train", "--out", out, "--", "--model", "no-such-model"]);
    expect(run.code).toBe(5);
    expect(run.stdout).toMatch(/run FAILED .*exited with code 2/);
    const [runDir] = readdirSync(out);
    expect(readFileSync(join(out, runDir!, "worker-0.log"), "utf8")).toMatch(/invalid choice: 'no-such-model'/);
    // The failed run's workers are gone (they carry their run's id as a label).
    expect(docker(["ps", "-aq", "--filter", "label=ringlab.run_id", "--filter", `label=ringlab.testbed=${NAME}`]).trim()).toBe("");
  });

  it("reports a run whose worker exits cleanly without writing a result as failed", async () => {
    const out = join(dir, "no-result");
    // --help: the worker prints its usage and exits 0 before it writes anything.
    const run = await ringlab(state, ["run", "--nodes", "1", "--out", out, "--", "--help"]);
    expect(run.code).toBe(5);
    expect(run.stdout).toMatch(/run FAILED .*: \S+-node-0 failed: Worker rank 0 on \S+ exited with code 0 but wrote no result \(\S+result\.json: file not found: /);
    const [runDir] = readdirSync(out);
    expect(readdirSync(join(out, runDir!)).sort()).toEqual(["outcome.json", "worker-0.log"]);
  });

  it("leaves a testbed alone when a campaign of the same name but another shape is refused", async () => {
    const clash = writeFile(dir, "clash.yaml", `testbed: {target: local, name: ${NAME}, nodes: 2, subnet: 10.79.0.0/24}
campaign: {matrix: {nodes: 2, model: tiny, batchSize: 8, bandwidth: 1gbit}}
`);
    const refused = await ringlab(state, ["campaign", clash, "--results", join(dir, "clash")]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/already exists but does not match this file/);
    expect(docker(["ps", "-q", "--filter", `label=ringlab.testbed=${NAME}`, "--filter", "label=ringlab.role=node"]).trim().split("\n")).toHaveLength(3);
  });

  it("refuses to remove a testbed it does not know, listing the ones it does (a campaign's name is not its testbed's)", async () => {
    const result = await ringlab(state, ["down", "local-smoke"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/no testbed named local-smoke is known/);
    expect(result.stderr).toMatch(new RegExp(`hint: known testbeds: .*${NAME}`));
    expect(docker(["ps", "-q", "--filter", `label=ringlab.testbed=${NAME}`, "--filter", "label=ringlab.role=node"]).trim().split("\n")).toHaveLength(3);
  });

  it("comes down completely, its SSH connections' folder too, and a second down finds nothing left", async () => {
    const sockets = controlPathDir(loadRecord(state, NAME)!);
    expect(existsSync(sockets), "the playbooks before share SSH connections through this folder").toBe(true);
    const down = await ringlab(state, ["down"]);
    expect(down.code, down.stderr).toBe(0);
    expect(existsSync(sockets), `${sockets} outlived the testbed`).toBe(false);
    expect(down.stderr).toMatch(new RegExp(`removed testbed ${NAME}: 3 containers, 1 networks`));
    expect(everythingLabeled(NAME)).toEqual([]);
    const again = await ringlab(state, ["down", NAME]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toMatch(new RegExp(`nothing left of testbed ${NAME}`));
  });

  it("rolls back a half-finished up: what it created is removed, what it did not create is left alone", async () => {
    // A foreign container holding node 2's name makes `up` fail after the network and two nodes exist.
    const blocker = `ringlab-${NAME}-node-2`;
    docker(["run", "-d", "--name", blocker, "ringlab/debian:bookworm", "sleep", "300"]);
    try {
      const up = await ringlab(state, ["up", campaign]);
      expect(up.code).toBe(4);
      expect(up.stderr).toMatch(/roll back: remove what was created/);
      expect(everythingLabeled(NAME)).toEqual([]);
      expect(docker(["ps", "-q", "--filter", `name=^${blocker}$`]).trim()).not.toBe("");
    } finally {
      docker(["rm", "-f", blocker]);
    }
  });
});
