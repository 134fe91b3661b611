/**
 * How long synthesizing the AWS testbed stack takes, for 1 and 10 nodes: in-process (construct tree + JSON)
 * and through the real `cdktf synth` (CLI start, tsx, provider bindings, synthesis).
 *
 *   npx tsx test/bench/synth.ts [--nodes 1,10] [--repetitions 10] [--cli-repetitions 3]
 *
 * One untimed warm-up per row. Rows are whitespace-separated; comment lines start with "#".
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { App } from "cdktf";
import { validateCampaign } from "../../src/config/schema.ts";
import { resolveTestbedSpec, writeSpec, type AwsTestbedSpec } from "../../src/testbed/spec.ts";
import { stackPropsFromSpec } from "../../stacks/from-spec.ts";
import { TestbedStack } from "../../stacks/testbed-stack.ts";

const PROJECT_DIR = resolve(import.meta.dirname, "../..");
const PUBLIC_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJ9d0nbH3kq9BenchKeyOnly ringlab-bench";

const { values: options } = parseArgs({
  options: {
    nodes: { type: "string", default: "1,10" },
    repetitions: { type: "string", default: "10" },
    "cli-repetitions": { type: "string", default: "3" },
  },
});
const nodeCounts = options.nodes.split(",").map(Number);
const repetitions = Number(options.repetitions);
const cliRepetitions = Number(options["cli-repetitions"]);

const workDir = mkdtempSync(join(tmpdir(), "ringlab-bench-synth-"));

function testbedFields(nodes: number): Record<string, unknown> {
  return {
    target: "aws",
    name: `bench-${nodes}`,
    nodes,
    adminCidr: "203.0.113.7/32",
    sshPublicKey: PUBLIC_KEY,
    sshPrivateKeyFile: "/k/bench",
  };
}

function awsSpec(nodes: number): AwsTestbedSpec {
  const result = validateCampaign({ testbed: testbedFields(nodes) });
  if (!result.ok || result.value.testbed.target === "kubernetes") throw new Error("benchmark testbed is invalid");
  const spec = resolveTestbedSpec(result.value.testbed, {
    campaign: "bench",
    testbedDir: join(workDir, "state"),
    createdAt: new Date(),
  });
  if (spec.target !== "aws") throw new Error("benchmark testbed is not aws");
  return spec;
}

function synthInProcess(spec: AwsTestbedSpec): void {
  const app = new App({ outdir: mkdtempSync(join(workDir, "out-")) });
  new TestbedStack(app, `ringlab-${spec.name}`, stackPropsFromSpec(spec));
  app.synth();
}

function synthWithCli(specFile: string): void {
  const result = spawnSync("npx", ["cdktf", "synth", "--output", mkdtempSync(join(workDir, "cli-"))], {
    cwd: PROJECT_DIR,
    env: { ...process.env, RINGLAB_SPEC: specFile, CHECKPOINT_DISABLE: "1" },
    encoding: "utf8",
  });
  if (result.status !== 0) throw new Error(`cdktf synth failed:\n${result.stdout}\n${result.stderr}`);
}

/** Milliseconds of each timed run, after one untimed warm-up. */
function time(runs: number, fn: () => void): number[] {
  fn();
  return Array.from({ length: runs }, () => {
    const start = performance.now();
    fn();
    return performance.now() - start;
  });
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

function row(mode: string, nodes: number, samples: number[]): string {
  return [
    mode.padEnd(12),
    String(nodes).padStart(5),
    String(samples.length).padStart(5),
    median(samples).toFixed(1).padStart(10),
    Math.min(...samples)
      .toFixed(1)
      .padStart(9),
  ].join(" ");
}

try {
  console.log(`# ringlab testbed stack synthesis, node ${process.version}, ${new Date().toISOString()}`);
  console.log(
    `# ${"mode".padEnd(10)} ${"nodes".padStart(5)} ${"reps".padStart(5)} ${"median_ms".padStart(10)} ${"min_ms".padStart(9)}`,
  );
  for (const nodes of nodeCounts) {
    const spec = awsSpec(nodes);
    console.log(
      row(
        "in-process",
        nodes,
        time(repetitions, () => synthInProcess(spec)),
      ),
    );
  }
  if (cliRepetitions > 0) {
    for (const nodes of nodeCounts) {
      const specFile = join(workDir, `bench-${nodes}.json`);
      writeSpec(specFile, awsSpec(nodes));
      console.log(
        row(
          "cdktf-synth",
          nodes,
          time(cliRepetitions, () => synthWithCli(specFile)),
        ),
      );
    }
  }
} finally {
  rmSync(workDir, { recursive: true, force: true });
}
