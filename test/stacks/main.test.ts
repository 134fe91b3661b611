/** The cdktf app end to end: the real `cdktf synth` and the app's answers to a missing or wrong RINGLAB_CONFIG. */
import { spawnSync, type SpawnSyncReturns } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { PUBLIC_KEY } from "./fixtures.ts";

const PROJECT_DIR = resolve(import.meta.dirname, "../..");
const TIMEOUT_MS = 120_000;

const tempDirs: string[] = [];
afterAll(() => tempDirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "ringlab-stack-"));
  tempDirs.push(dir);
  return dir;
}

function campaignFile(name: string, testbed: string): string {
  const path = join(tempDir(), name);
  writeFileSync(path, testbed);
  return path;
}

const AWS_CAMPAIGN = `testbed:
  target: aws
  name: e2e
  nodes: 3
  adminCidr: 203.0.113.7/32
  sshPublicKey: ${PUBLIC_KEY}
  ttlHours: 2
`;

function run(command: string, args: string[], env: Record<string, string | undefined>): SpawnSyncReturns<string> {
  const environment: NodeJS.ProcessEnv = { ...process.env, CHECKPOINT_DISABLE: "1", ...env };
  for (const [key, value] of Object.entries(env)) if (value === undefined) delete environment[key];
  return spawnSync(command, args, { cwd: PROJECT_DIR, env: environment, encoding: "utf8", timeout: TIMEOUT_MS });
}

/** Runs the app itself; a stray success would write to a temp dir, not the checkout. */
const runApp = (env: Record<string, string | undefined>) =>
  run("npx", ["tsx", "stacks/main.ts"], { CDKTF_OUTDIR: tempDir(), ...env });

describe("stacks/main.ts", () => {
  it("synthesizes ringlab-<name> with `cdktf synth`, outputs mapped for the outputs file", () => {
    const outDir = tempDir();
    const result = run("npx", ["cdktf", "synth", "--output", outDir], {
      RINGLAB_CONFIG: campaignFile("e2e-campaign.yaml", AWS_CAMPAIGN),
      RINGLAB_CREATED_AT: "2025-03-01T10:00:00Z",
    });
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
    // `cdktf output --outputs-file` keys its JSON by this map: stack name, then output construct id.
    expect(stack["//"].outputs).toEqual({
      "ringlab-e2e": { nodes: "nodes", sharedStorageEndpoint: "sharedStorageEndpoint", sshUser: "sshUser" },
    });
  }, TIMEOUT_MS);

  it("fails through `cdktf synth` with a clear message when RINGLAB_CONFIG is not set", () => {
    const outDir = tempDir();
    const result = run("npx", ["cdktf", "synth", "--output", outDir], { RINGLAB_CONFIG: undefined });
    expect(result.status).not.toBe(0);
    expect(result.stdout + result.stderr).toContain("RINGLAB_CONFIG is not set");
  }, TIMEOUT_MS);

  it("exits 2 without a stack trace when RINGLAB_CONFIG is not set", () => {
    const result = runApp({ RINGLAB_CONFIG: undefined });
    expect(result.status).toBe(2);
    expect(result.stderr).toContain("RINGLAB_CONFIG is not set; expected the path of an AWS campaign file");
    expect(result.stderr).not.toMatch(/^\s+at /m);
  }, TIMEOUT_MS);

  it("exits 2 naming the file when it does not exist", () => {
    const result = runApp({ RINGLAB_CONFIG: "/nonexistent/campaign.yaml" });
    expect(result.status).toBe(2);
    expect(result.stderr).toContain("/nonexistent/campaign.yaml: file not found");
    expect(result.stderr).not.toMatch(/^\s+at /m);
  }, TIMEOUT_MS);

  it("exits 2 when the testbed is not an AWS one", () => {
    const local = campaignFile("local.yaml", "testbed:\n  target: local\n  name: lab\n  nodes: 2\n");
    const result = runApp({ RINGLAB_CONFIG: local });
    expect(result.status).toBe(2);
    expect(result.stderr).toContain(`${local}: testbed.target: found "local", expected "aws"`);
    expect(result.stderr).not.toMatch(/^\s+at /m);
  }, TIMEOUT_MS);

  it("exits 2 with the schema's message for an invalid campaign, and for a bad RINGLAB_CREATED_AT", () => {
    const invalid = campaignFile("bad.yaml", AWS_CAMPAIGN.replace("nodes: 3", "nodes: 0"));
    const result = runApp({ RINGLAB_CONFIG: invalid });
    expect(result.status).toBe(2);
    expect(result.stderr).toContain("testbed.nodes: found 0");

    const badTime = runApp({ RINGLAB_CONFIG: campaignFile("ok.yaml", AWS_CAMPAIGN), RINGLAB_CREATED_AT: "yesterday" });
    expect(badTime.status).toBe(2);
    expect(badTime.stderr).toContain('RINGLAB_CREATED_AT is "yesterday"');
  }, TIMEOUT_MS);
});
