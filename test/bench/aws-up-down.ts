/**
 * `ringlab up` and its rollback on the AWS path, against moto on 127.0.0.1 (no AWS account is involved): a 2-node
 * stack is deployed, the bounded SSH wait fails (moto's instances answer nothing), and the rollback destroys the
 * stack. Prints each step's time, so that deploy and destroy can be compared between ringlab versions (the step
 * names differ: `cdktf deploy` before ringlab ran terraform itself, `terraform apply` after).
 *
 *   npx tsx test/bench/aws-up-down.ts [--repo DIR] [--repetitions 2]
 *
 * --repo: the checkout whose src/ and moto helper (test/targets/aws/moto.ts, test/aws/moto.ts before the move) are
 * measured (default: this one); run it on a `git worktree` of an older commit, with its own node_modules, to compare.
 * Needs python3 with moto and the provider mirror in /opt/tf-plugins (see ../shared/ENVIRONMENT.md).
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";

// The SDK's Node-version notice is for whoever upgrades it (README), not part of what is measured.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";
const { values } = parseArgs({
  options: {
    repo: { type: "string", default: resolve(import.meta.dirname, "../..") },
    repetitions: { type: "string", default: "2" },
  },
});
const repo = resolve(values.repo);
const { up } = await import(join(repo, "src/testbed/testbed.ts"));
const { loadCampaignFile } = await import(join(repo, "src/config/load.ts"));
const motoHelper = ["test/targets/aws/moto.ts", "test/aws/moto.ts"].find((path) => existsSync(join(repo, path)));
const { startMoto } = await import(join(repo, motoHelper ?? "test/targets/aws/moto.ts"));

const work = mkdtempSync(join(tmpdir(), "ringlab-bench-aws-"));
mkdirSync(join(work, "plugin-cache"));
writeFileSync(
  join(work, "terraform.rc"),
  `plugin_cache_dir = "${work}/plugin-cache"\n` +
    `provider_installation {\n  filesystem_mirror {\n    path    = "/opt/tf-plugins"\n    include = ["registry.terraform.io/hashicorp/aws"]\n  }\n}\n`,
);
const moto = await startMoto();
Object.assign(process.env, {
  RINGLAB_TEST_AWS_ENDPOINT: moto.url,
  TF_CLI_CONFIG_FILE: join(work, "terraform.rc"),
  TERRAFORM_BINARY_NAME: "terraform",
  CHECKPOINT_DISABLE: "1",
  AWS_ACCESS_KEY_ID: "testing",
  AWS_SECRET_ACCESS_KEY: "testing",
  AWS_EC2_METADATA_DISABLED: "true",
  AWS_ENDPOINT_URL: "http://127.0.0.1:9",
  AWS_CONFIG_FILE: "/dev/null",
  AWS_SHARED_CREDENTIALS_FILE: "/dev/null",
});

/** Records every step's seconds, nested steps included, in the order they end. */
function timingReporter(steps: [string, number][]) {
  return {
    async step<T>(title: string, work: (detail: (text: string) => void) => Promise<T>): Promise<T> {
      const started = performance.now();
      try {
        return await work(() => {});
      } finally {
        steps.push([title, (performance.now() - started) / 1000]);
      }
    },
    info: () => {},
    warn: () => {},
    toolLine: () => {},
  };
}

try {
  for (let repetition = 1; repetition <= Number(values.repetitions); repetition++) {
    const name = `bench${repetition}`;
    const file = join(work, `${name}.yaml`);
    writeFileSync(
      file,
      `testbed: {target: aws, name: ${name}, nodes: 2, region: eu-west-1, instanceType: g4dn.xlarge, ami: ami-1e749f67, ` +
        `adminCidr: 203.0.113.7/32, sshPublicKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIN937XpgEQ7l3cW/d53arO8Uv8YoKTpYc42yTOnJ6Amg bench", ` +
        `sshPrivateKeyFile: /nonexistent/ringlab, ttlHours: 2, placementGroup: false}\n`,
    );
    const steps: [string, number][] = [];
    const stateDir = join(work, `state-${repetition}`);
    const ctx = {
      repoDir: repo,
      stateDir,
      reporter: timingReporter(steps),
      logFile: join(stateDir, "log"),
      signal: new AbortController().signal,
    };
    const started = performance.now();
    const error = await up(ctx, loadCampaignFile(file), { aws: { sshWaitMs: 1000 } }).then(
      () => undefined,
      (e: Error) => e,
    );
    const total = (performance.now() - started) / 1000;
    if (error === undefined || !/SSH did not answer/.test(error.message))
      throw new Error(`expected the SSH wait to fail, got: ${error?.message}`);
    console.log(`repetition ${repetition}: up, failed SSH wait and rollback ${total.toFixed(1)} s`);
    for (const [title, seconds] of steps) console.log(`  ${seconds.toFixed(1).padStart(6)} s  ${title}`);
  }
} finally {
  await moto.stop();
  rmSync(work, { recursive: true, force: true });
}
