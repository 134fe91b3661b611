/** The CLI's own behaviour that needs no testbed: help, bad input, the AWS inventory command. */
import { spawn, spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { load } from "js-yaml";
import { describe, expect, it } from "vitest";

const BIN = resolve("src/bin/ringlab.mjs");
const cli = (args: string[]) =>
  spawnSync(process.execPath, [BIN, "--state-dir", mkdtempSync(join(tmpdir(), "ringlab-cli-")), ...args], {
    encoding: "utf8",
  });

/** Runs ringlab with its stdout a pipe whose reader is already gone (as in `ringlab plan x | head -1`). */
function cliIntoClosedPipe(args: string[]): Promise<{ status: number | null; stderr: string }> {
  const child = spawn(process.execPath, [BIN, "--state-dir", mkdtempSync(join(tmpdir(), "ringlab-cli-")), ...args], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  // Closing the read end before ringlab writes makes every write fail with EPIPE, without racing the reader.
  child.stdout.destroy();
  let stderr = "";
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
    stderr += chunk;
  });
  return new Promise((done) => child.on("close", (status) => done({ status, stderr })));
}

describe("ringlab CLI", () => {
  it("explains every command in --help, and exits 0", () => {
    const help = cli(["--help"]);
    expect(help.status).toBe(0);
    for (const command of [
      "campaign",
      "plan",
      "report",
      "calibrate",
      "predict",
      "up",
      "synth",
      "manifests",
      "configure",
      "run",
      "status",
      "down",
      "inventory",
      "sweep",
    ]) {
      expect(help.stdout).toMatch(new RegExp(`^  ${command} `, "m"));
    }
    expect(help.stdout).toMatch(/Exit codes: 0 ok; 1 an unexpected error .*; 2 bad input/);
  });

  it("rejects a bad campaign file with exit 2, the file, the field and what was expected, and no stack trace", () => {
    const file = join(mkdtempSync(join(tmpdir(), "ringlab-cli-")), "bad.yaml");
    writeFileSync(file, "testbed: {target: local, name: smoke, nodez: 3}\n");
    const result = cli(["plan", file]);
    expect(result.status).toBe(2);
    expect(result.stderr).toMatch(
      new RegExp(
        `error: ${file}: testbed.nodes: missing: expected a number\\n${file}: testbed.nodez: unknown key "nodez" \\(did you mean "nodes"\\?\\)`,
      ),
    );
    expect(result.stderr).not.toMatch(/ {4}at /);
  });

  it("says what to do when no testbed is up", () => {
    const result = cli(["status"]);
    expect(result.status).toBe(2);
    expect(result.stderr).toMatch(/error: no testbed is up here\nhint: create one with `ringlab up <campaign.yaml>`/);
  });

  it("refuses a CPU quota Docker would not take before looking for a testbed", () => {
    for (const cpus of ["0.001", "1.5x", "-1", "0.125"]) {
      const result = cli(["run", "--nodes", "1", "--cpus", cpus]);
      expect(result.status, cpus).toBe(2);
      expect(result.stderr, cpus).toMatch(/argument '.*' is invalid\. expected a number of cores such as 0\.5 or 2/);
    }
  });

  it("refuses a number of processes per node it cannot start before looking for a testbed", () => {
    for (const [value, message] of [
      ["0", /expected a positive whole number/],
      ["17", /at most 16 processes per node/],
    ] as const) {
      const result = cli(["run", "--nodes", "1", "--processes-per-node", value]);
      expect(result.status, value).toBe(2);
      expect(result.stderr, value).toMatch(message);
    }
  });

  it("runs with launcher slurm (mpi) only on a testbed configured as a Slurm (Open MPI) cluster, saying how to make it one", () => {
    const state = mkdtempSync(join(tmpdir(), "ringlab-cli-"));
    mkdirSync(join(state, "testbeds", "plain"), { recursive: true });
    writeFileSync(
      join(state, "testbeds", "plain", "testbed.json"),
      JSON.stringify({
        schema: "ringlab.testbed/v2",
        name: "plain",
        target: "local",
        inventory: join(state, "inventory.yml"),
        sharedDir: join(state, "shared"),
        nodes: [{ name: "plain-node-0", rank: 0, sshAddress: "10.9.0.10", privateIp: "10.9.0.10" }],
        createdAt: "2026-11-23T00:00:00.000Z",
      }),
    );
    writeFileSync(join(state, "current"), "plain\n");
    const run = (launcher: string) =>
      spawnSync(process.execPath, [BIN, "--state-dir", state, "run", "--nodes", "1", "--launcher", launcher], {
        encoding: "utf8",
      });
    const refused = run("slurm");
    expect(refused.status).toBe(2);
    expect(refused.stderr).toMatch(
      /error: --launcher slurm needs testbed plain to be a Slurm cluster\nhint: run `ringlab configure --slurm` first/,
    );
    const lost = spawnSync(
      process.execPath,
      [BIN, "--state-dir", state, "run", "--nodes", "1", "--launcher", "slurm", "--", "--fail-node=1"],
      { encoding: "utf8" },
    );
    expect(lost.status).toBe(2);
    expect(lost.stderr).toMatch(/error: --fail-node runs with --launcher ansible only/);
    const unknown = run("pbs");
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toMatch(/argument 'pbs' is invalid\. Allowed choices are ansible, slurm, mpi/);
    const mpi = run("mpi");
    expect(mpi.status).toBe(2);
    expect(mpi.stderr).toMatch(
      /error: --launcher mpi needs testbed plain to be an Open MPI cluster\nhint: run `ringlab configure --mpi` first/,
    );
    const lostUnderMpi = spawnSync(
      process.execPath,
      [BIN, "--state-dir", state, "run", "--nodes", "1", "--launcher", "mpi", "--", "--fail-node", "1"],
      { encoding: "utf8" },
    );
    expect(lostUnderMpi.stderr).toMatch(
      /error: --fail-node runs with --launcher ansible only\nhint: mpirun ends every node's process/,
    );
  });

  it("plans the strategies campaign: placements of up to 4 workers, each process under its own quota", () => {
    const result = cli(["plan", "campaigns/local-strategies.yaml"]);
    expect(result.status, result.stderr).toBe(0);
    expect(result.stdout).toMatch(
      /^\d+ +train-small-b32-n2-p2-250mbit-reduction-parameter-server-r1 +train +2×2 +250mbit +small +32$/m,
    );
    expect(result.stdout).not.toMatch(/n4-p2|n2-p4|n4-p4/);
    expect(result.stdout).toMatch(
      /^every worker process runs under a CPU quota of \d+(\.\d+)? cores \(testbed\.cpusPerNode; a node running P processes gets P × that\)$/m,
    );
  });

  it("plans the smoke campaign: its runs in order and an estimate", () => {
    const result = cli(["plan", "campaigns/local-smoke.yaml"]);
    expect(result.status).toBe(0);
    expect(result.stdout).toMatch(/^1 +allreduce-n2-1gbit-r1 +allreduce +2 +1gbit +- +-$/m);
    expect(result.stdout).toMatch(/^3 +train-small-b32-n1-r1 +train +1 +- +small +32$/m);
    expect(result.stdout).toMatch(/^10 runs on 3 local nodes; links reshaped 2 times$/m);
    expect(result.stdout).toMatch(
      /^every node's worker runs under a CPU quota of \d+(\.\d+)? cores \(testbed\.cpusPerNode\)$/m,
    );
    expect(result.stdout).toMatch(/^estimated duration: \d+ min/m);
  });

  it("ends quietly when the reader of its output goes away (`ringlab --help | head -1`)", async () => {
    // A campaign whose plan warns about nothing: stderr must stay empty.
    for (const args of [["--help"], ["plan", "campaigns/local-strategies.yaml"]]) {
      const result = await cliIntoClosedPipe(args);
      expect(result.stderr, args.join(" ")).toBe("");
      expect(result.status, args.join(" ")).toBe(0);
    }
  });

  it("synthesizes an AWS testbed's spec and stack for a hand deploy, and writes its inventory from cdktf's outputs file", () => {
    const dir = mkdtempSync(join(tmpdir(), "ringlab-cli-"));
    const campaign = join(dir, "aws.yaml");
    writeFileSync(
      campaign,
      "testbed: {target: aws, name: scale, nodes: 3, adminCidr: 203.0.113.7/32, sshPublicKeyFile: id.pub}\n",
    );
    writeFileSync(join(dir, "id.pub"), "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHx2 me@host\n");
    const synth = cli(["--state-dir", join(dir, "state"), "synth", campaign, "--out", join(dir, "out")]);
    expect(synth.status, synth.stderr).toBe(0);
    expect(synth.stdout).toBe(
      `${join(dir, "out", "spec.json")}\n${join(dir, "out", "stacks", "ringlab-scale", "cdk.tf.json")}\n`,
    );
    expect(
      JSON.parse(readFileSync(join(dir, "out", "stacks", "ringlab-scale", "cdk.tf.json"), "utf8")).resource
        .aws_instance,
    ).toBeDefined();
    rmSync(join(dir, "id.pub"));
    const result = cli([
      "inventory",
      join(dir, "out", "spec.json"),
      "--outputs",
      "test/fixtures/cdktf-outputs.json",
      "-o",
      join(dir, "inventory.yml"),
    ]);
    expect(result.status, result.stderr).toBe(0);
    const inventory = readFileSync(join(dir, "inventory.yml"), "utf8");
    expect(inventory).toMatch(/scale-node-2:\n +ansible_host: !unsafe 198\.51\.100\.12/);
    expect(inventory).toMatch(new RegExp(`ansible_ssh_private_key_file: (!unsafe )?'?${dir}/id'?\n`));
  });

  it("gives each node of a hand deploy its own SSH host key, and pins it in the known_hosts beside the inventory", () => {
    const dir = mkdtempSync(join(tmpdir(), "ringlab-cli-"));
    const campaign = join(dir, "aws.yaml");
    writeFileSync(
      campaign,
      "testbed: {target: aws, name: scale, nodes: 3, adminCidr: 203.0.113.7/32, sshPublicKeyFile: id.pub}\n",
    );
    writeFileSync(join(dir, "id.pub"), "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHx2 me@host\n");
    expect(cli(["--state-dir", join(dir, "state"), "synth", campaign, "--out", join(dir, "out")]).status).toBe(0);
    const keys = join(dir, "out", "host-keys");
    const stackFile = join(dir, "out", "stacks", "ringlab-scale", "cdk.tf.json");
    // The private halves are in the keys' folder and in the stack's user data: both the user's alone.
    expect([
      statSync(keys).mode & 0o777,
      statSync(join(keys, "node-2")).mode & 0o777,
      statSync(stackFile).mode & 0o777,
    ]).toEqual([0o700, 0o600, 0o600]);
    const instances = Object.values(JSON.parse(readFileSync(stackFile, "utf8")).resource.aws_instance) as {
      user_data: string;
    }[];
    instances.forEach((instance, rank) => {
      const config = load(instance.user_data) as {
        ssh_deletekeys: boolean;
        ssh_keys: { ed25519_private: string; ed25519_public: string };
      };
      expect(config.ssh_deletekeys).toBe(true);
      expect(config.ssh_keys.ed25519_private).toBe(readFileSync(join(keys, `node-${rank}`), "utf8"));
      expect(config.ssh_keys.ed25519_public).toBe(readFileSync(join(keys, `node-${rank}.pub`), "utf8").trim());
    });
    const result = cli([
      "inventory",
      join(dir, "out", "spec.json"),
      "--outputs",
      "test/fixtures/cdktf-outputs.json",
      "-o",
      join(dir, "inventory.yml"),
    ]);
    expect(result.status, result.stderr).toBe(0);
    const pinned = readFileSync(join(dir, "known_hosts"), "utf8").trim().split("\n");
    expect(pinned).toEqual(
      [0, 1, 2].map(
        (rank) =>
          `198.51.100.1${rank},10.78.1.1${rank} ${readFileSync(join(keys, `node-${rank}.pub`), "utf8")
            .split(" ")
            .slice(0, 2)
            .join(" ")}`,
      ),
    );
    expect(readFileSync(join(dir, "inventory.yml"), "utf8")).toMatch(
      /ringlab_ssh_host_key_checking: !unsafe '?yes'?\n/,
    );
  });

  it("refuses a bad campaign file in synth with the same message and exit code as plan", () => {
    const dir = mkdtempSync(join(tmpdir(), "ringlab-cli-"));
    const campaign = join(dir, "bad.yaml");
    writeFileSync(campaign, "testbed: {target: local, name: Bad_Name, nodes: 3}\n");
    const plan = cli(["plan", campaign]);
    const synth = cli(["--state-dir", join(dir, "state"), "synth", campaign, "--out", join(dir, "out")]);
    expect(synth.status).toBe(2);
    expect(plan.status).toBe(2);
    expect(synth.stderr).toContain(`${campaign}: testbed.name: found "Bad_Name"`);
    expect(plan.stderr.split("\n")[0]).toBe(synth.stderr.split("\n")[0]);
  });

  it("refuses `down ..` and `down ../..` with exit 2 and deletes nothing outside or inside the state folder", () => {
    const scratch = mkdtempSync(join(tmpdir(), "ringlab-cli-"));
    const state = join(scratch, "a", "st");
    mkdirSync(join(state, "testbeds", "smoke"), { recursive: true });
    writeFileSync(join(state, "testbeds", "smoke", "id_ed25519"), "key");
    writeFileSync(join(scratch, "a", "precious.txt"), "keep me");
    for (const name of ["..", "../.."]) {
      const result = cli(["--state-dir", state, "down", name]);
      expect(result.status, name).toBe(2);
      expect(result.stderr).toMatch(/testbed name "\.\.(\/\.\.)?": expected 1-24 lower-case letters/);
    }
    expect(existsSync(join(scratch, "a", "precious.txt"))).toBe(true);
    expect(existsSync(join(state, "testbeds", "smoke", "id_ed25519"))).toBe(true);
  });

  it("refuses a results folder that is a file before anything starts (exit 2)", () => {
    const dir = mkdtempSync(join(tmpdir(), "ringlab-cli-"));
    writeFileSync(join(dir, "results"), "not a folder");
    const result = cli([
      "--state-dir",
      join(dir, "state"),
      "campaign",
      "campaigns/local-smoke.yaml",
      "--results",
      join(dir, "results", "smoke"),
    ]);
    expect(result.status).toBe(2);
    expect(result.stderr).toContain(
      `error: results folder ${join(dir, "results", "smoke")}: ${join(dir, "results")} is a file, not a folder`,
    );
    expect(result.stderr).not.toMatch(/^\s+at /m);
  });

  it("refuses a results folder others can write, or one under a folder they can write, before anything starts (exit 2): campaign --results, run --out and report alike", () => {
    const dir = mkdtempSync(join(tmpdir(), "ringlab-cli-"));
    const open = join(dir, "open");
    mkdirSync(open);
    chmodSync(open, 0o777); // anyone may add files to it: forged records, or links where ringlab writes
    const state = join(dir, "state");
    for (const results of [open, join(open, "smoke")]) {
      const campaign = cli(["--state-dir", state, "campaign", "campaigns/local-smoke.yaml", "--results", results]);
      expect(campaign.status, campaign.stderr).toBe(2);
      expect(campaign.stderr).toMatch(new RegExp(`^error: results folder ${results}: .*${open}`, "m"));
      expect(campaign.stderr).toContain("hint: pick a folder only you can write with --results DIR");
      const run = cli(["--state-dir", state, "run", "--nodes", "1", "--out", results, "--", "--model", "tiny"]);
      expect(run.status, run.stderr).toBe(2);
      expect(run.stderr).toMatch(new RegExp(`^error: --out ${results}: .*${open}`, "m"));
      const report = cli(["--state-dir", state, "report", results]);
      expect(report.status, report.stderr).toBe(2);
      expect(report.stderr).toMatch(new RegExp(`^error: results folder ${results}: .*${open}`, "m"));
      expect(existsSync(join(results, "report.md"))).toBe(false);
    }
  });

  it("refuses unsafe --out, --results and worker arguments with exit 2 before anything starts", () => {
    const dir = mkdtempSync(join(tmpdir(), "ringlab-cli-"));
    const marker = join(dir, "pwned");
    const injection = `/tmp/r-{{ lookup('pipe','touch ${marker}') }}`;
    const results = cli([
      "--state-dir",
      join(dir, "state"),
      "campaign",
      "campaigns/local-smoke.yaml",
      "--results",
      injection,
    ]);
    expect(results.status).toBe(2);
    expect(results.stderr).toMatch(/option '--results <dir>' argument .* is invalid/);
    const out = cli(["--state-dir", join(dir, "state"), "run", "--nodes", "1", "--out", injection]);
    expect(out.status).toBe(2);
    const args = cli([
      "--state-dir",
      join(dir, "state"),
      "run",
      "--nodes",
      "1",
      "--",
      "--model",
      "{{ lookup('pipe','id') }}",
    ]);
    expect(args.status).toBe(2);
    expect(args.stderr).toMatch(/worker argument "\{\{ lookup/);
    // A bare ':' would have mpirun start what follows as another program, as root on a node.
    const colon = cli([
      "--state-dir",
      join(dir, "state"),
      "run",
      "--nodes",
      "2",
      "--launcher",
      "mpi",
      "--",
      "--model",
      "tiny",
      ":",
      "-np",
      "1",
      "/usr/bin/touch",
      marker,
    ]);
    expect([colon.status, colon.stderr]).toEqual([2, expect.stringMatching(/worker argument ":".*not a bare ':'/)]);
    expect(existsSync(marker)).toBe(false);
  });
});
