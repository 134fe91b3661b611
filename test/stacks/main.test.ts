/**
 * The cdktf app end to end: the real `cdktf synth` from a stored spec, and the app's answers to a missing or wrong
 * spec.
 */
import { spawnSync, type SpawnSyncReturns } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Testing } from "cdktf";
import { afterAll, describe, expect, it } from "vitest";
import { parseCampaign } from "../../src/config/load.ts";
import { resolveTestbedSpec, writeSpec } from "../../src/testbed/spec.ts";
import { stackPropsFromSpec } from "../../stacks/from-spec.ts";
import { TestbedStack } from "../../stacks/testbed-stack.ts";
import { PUBLIC_KEY } from "./fixtures.ts";

const PROJECT_DIR = resolve(import.meta.dirname, "../..");
const TIMEOUT_MS = 120_000;

const tempDirs: string[] = [];
afterAll(() => {
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "ringlab-stack-"));
  tempDirs.push(dir);
  return dir;
}

const AWS_CAMPAIGN = `testbed:
  target: aws
  name: e2e
  nodes: 3
  adminCidr: 203.0.113.7/32
  sshPublicKey: ${PUBLIC_KEY}
  sshPrivateKeyFile: /k/ringlab
  ttlHours: 2
`;

/** The spec `ringlab up` would store for `text`, written to a file; returns the file. */
function specFile(text: string, campaign = "e2e-campaign"): string {
  const spec = resolveTestbedSpec(parseCampaign(text, `/c/${campaign}.yaml`).testbed, {
    campaign,
    testbedDir: "/state/testbeds/e2e",
    createdAt: new Date("2025-03-01T10:00:00Z"),
  });
  const file = join(tempDir(), "spec.json");
  writeSpec(file, spec);
  return file;
}

/** The JSON without cdktf's "//" metadata blocks, which name the synthesizer's paths. */
function withoutMetadata(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutMetadata);
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([key]) => key !== "//")
      .map(([key, item]) => [key, withoutMetadata(item)]),
  );
}

function run(command: string, args: string[], env: Record<string, string | undefined>): SpawnSyncReturns<string> {
  const environment: NodeJS.ProcessEnv = { ...process.env, CHECKPOINT_DISABLE: "1", ...env };
  for (const [key, value] of Object.entries(env)) if (value === undefined) delete environment[key];
  return spawnSync(command, args, { cwd: PROJECT_DIR, env: environment, encoding: "utf8", timeout: TIMEOUT_MS });
}

/** Runs the app itself; a stray success would write to a temp dir, not the checkout. */
const runApp = (env: Record<string, string | undefined>) =>
  run("npx", ["tsx", "stacks/main.ts"], { CDKTF_OUTDIR: tempDir(), ...env });

describe("stacks/main.ts", () => {
  it(
    "synthesizes ringlab-<name> from the spec with `cdktf synth`, the same stack as from the campaign file in process",
    () => {
      const outDir = tempDir();
      const file = specFile(AWS_CAMPAIGN);
      const result = run("npx", ["cdktf", "synth", "--output", outDir], { RINGLAB_SPEC: file });
      expect(result.status, result.stdout + result.stderr).toBe(0);
      const stackFile = join(outDir, "stacks", "ringlab-e2e", "cdk.tf.json");
      expect(existsSync(stackFile)).toBe(true);
      const stack = JSON.parse(readFileSync(stackFile, "utf8"));
      expect(Object.keys(stack.resource.aws_instance)).toHaveLength(3);
      expect(stack.provider.aws[0].default_tags[0].tags).toEqual({
        "ringlab:testbed": "e2e",
        "ringlab:campaign": "e2e-campaign",
        "ringlab:expires-at": "2025-03-01T12:00:00Z",
      });
      expect(stack.terraform.backend).toEqual({ local: { path: "/state/testbeds/e2e/terraform.tfstate" } });
      // `cdktf output --outputs-file` keys its JSON by this map: stack name, then output construct id.
      expect(stack["//"].outputs).toEqual({
        "ringlab-e2e": { nodes: "nodes", sharedStorageEndpoint: "sharedStorageEndpoint", sshUser: "sshUser" },
      });
      const spec = JSON.parse(readFileSync(file, "utf8"));
      const inProcess = JSON.parse(
        Testing.synth(new TestbedStack(Testing.app(), "ringlab-e2e", stackPropsFromSpec(spec))),
      );
      for (const part of ["resource", "data", "output", "provider"])
        expect(withoutMetadata(stack[part]), part).toEqual(withoutMetadata(inProcess[part]));
    },
    TIMEOUT_MS,
  );

  it(
    "fails through `cdktf synth` with a clear message when RINGLAB_SPEC is not set",
    () => {
      const result = run("npx", ["cdktf", "synth", "--output", tempDir()], {
        RINGLAB_SPEC: undefined,
        RINGLAB_CONFIG: undefined,
      });
      expect(result.status).not.toBe(0);
      expect(result.stdout + result.stderr).toContain("RINGLAB_SPEC is not set");
    },
    TIMEOUT_MS,
  );

  it(
    "exits 2 without a stack trace when RINGLAB_SPEC is not set or names no file",
    () => {
      const unset = runApp({ RINGLAB_SPEC: undefined });
      expect(unset.status).toBe(2);
      expect(unset.stderr).toContain("RINGLAB_SPEC is not set; expected the path of a testbed spec");
      expect(unset.stderr).not.toMatch(/^\s+at /m);
      const missing = runApp({ RINGLAB_SPEC: "/nonexistent/spec.json" });
      expect(missing.status).toBe(2);
      expect(missing.stderr).toContain("cannot read the testbed spec /nonexistent/spec.json: no such file");
      expect(missing.stderr).not.toMatch(/^\s+at /m);
    },
    TIMEOUT_MS,
  );

  it(
    "exits 2 for a local testbed's spec and for a spec of another shape",
    () => {
      const local = specFile("testbed:\n  target: local\n  name: lab\n  nodes: 2\n");
      const result = runApp({ RINGLAB_SPEC: local });
      expect(result.status).toBe(2);
      expect(result.stderr).toContain(`${local}: target is "local", expected "aws"`);
      const bad = join(tempDir(), "bad.json");
      writeFileSync(bad, JSON.stringify({ ...JSON.parse(readFileSync(specFile(AWS_CAMPAIGN), "utf8")), nodes: 0 }));
      const invalid = runApp({ RINGLAB_SPEC: bad });
      expect(invalid.status).toBe(2);
      expect(invalid.stderr).toContain(`${bad}: nodes:`);
      expect(invalid.stderr).not.toMatch(/^\s+at /m);
    },
    TIMEOUT_MS,
  );
});
