/**
 * Property tests of the campaign parser: whatever text arrives, parseCampaign returns a campaign or throws
 * ConfigError, and whatever it accepts passes the shared rules that keep names, paths and free text safe to
 * hand to Docker, Ansible, a shell or Terraform.
 */
import fc from "fast-check";
import { dump as dumpYaml } from "js-yaml";
import { describe, expect, it } from "vitest";
import { parseCampaign, type LoadedCampaignFile } from "../../src/config/load.ts";
import { ConfigError } from "../../src/util/errors.ts";
import { checkAmiId } from "../../src/rules/ami.ts";
import { checkIpv4Cidr, checkSshSource } from "../../src/rules/cidr.ts";
import { checkResourceName } from "../../src/rules/names.ts";
import {
  checkDockerImageReference,
  checkS3BucketName,
  checkS3Key,
  checkSafePath,
  checkTagKey,
  checkTagValue,
  checkUnixUserName,
} from "../../src/rules/safe-text.ts";
import { checkSshPublicKey } from "../../src/rules/ssh-key.ts";

const PUBLIC_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHx2Jm3ZpG5a0xV8y3Qb1ZrjQ5k6m0z2b7Vt3nq2XaBc test@ringlab";

/** Fragments that have broken templating, quoting, paths or YAML somewhere. */
const HOSTILE = [
  "{{ lookup('pipe','id') }}",
  "{{",
  "}}",
  "{% raw %}",
  "{%",
  "{#",
  // biome-ignore lint/suspicious/noTemplateCurlyInString: an interpolation the parser must refuse
  "${x}",
  ",",
  "../",
  "..",
  "/",
  "~/",
  "\n",
  "\r\n",
  "\t",
  "\0",
  "$(id)",
  "`id`",
  ";",
  "&&",
  "|",
  "'",
  '"',
  "\\",
  "*",
  "?",
  "%",
  "<",
  ">",
  " ",
  "-",
  "--privileged",
  ":",
  ": ",
  "#",
  "&a",
  "*a",
  "!!binary",
  "<<",
  "@",
  "=",
  "\u202e",
  "é",
  "🙂",
  "\u0085",
  "\ufeff",
];
const PLAUSIBLE = [
  "smoke",
  "scale-16",
  "ubuntu",
  "/tmp/r",
  "results/x",
  "ringlab/worker:cpu",
  "10.77.0.0/24",
  "203.0.113.7/32",
  "0.0.0.0/1",
  "g5.12xlarge",
  "ami-0123456789abcdef0",
  "us-east-1",
  "us-east-1a",
  "1gbit",
  "unlimited",
  "team",
  "my-state",
  "k/s.tfstate",
];

const hostileText = fc
  .array(fc.oneof(fc.constantFrom(...HOSTILE), fc.constantFrom(...PLAUSIBLE), fc.string({ maxLength: 6 })), {
    maxLength: 4,
  })
  .map((parts) => parts.join(""));
const anyValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: hostileText },
  fc.integer({ min: -5, max: 100 }),
  fc.double({ noNaN: false }),
  fc.boolean(),
  fc.constant(null),
  fc.array(hostileText, { maxLength: 3 }),
  fc.dictionary(hostileText, hostileText, { maxKeys: 2 }),
);
/** Mostly a value of the right shape, sometimes anything: a file then has a hostile field or two, or none. */
const field = (...valid: unknown[]): fc.Arbitrary<unknown> =>
  fc.oneof({ weight: 12, arbitrary: fc.constantFrom(...valid) }, { weight: 1, arbitrary: anyValue });

const common = {
  name: field("smoke", "scale-16", "a"),
  nodes: field(1, 2, 3),
  maxNodes: field(10, 16),
};
const localTestbed = fc.record(
  {
    target: fc.constant("local"),
    ...common,
    subnet: field("10.77.0.0/24", "192.168.50.0/24"),
    sharedDir: field("/data/shared", "shared", "~/x"),
    workerImage: field("ringlab/worker:cpu", "localhost:5000/w:1"),
  },
  { requiredKeys: ["target", "name", "nodes"] },
);
const awsTestbed = fc.record(
  {
    target: fc.constant("aws"),
    ...common,
    region: field("us-east-1"),
    availabilityZone: field("us-east-1a", "us-east-1c"),
    instanceType: field("g4dn.xlarge", "p4d.24xlarge"),
    ami: field("ami-0123456789abcdef0"),
    rootVolumeGiB: field(100, 8),
    sshPublicKey: field(PUBLIC_KEY),
    sshPrivateKeyFile: field("~/.ssh/ringlab", "/k/ringlab"),
    sshUser: field("ubuntu", "ec2-user"),
    adminCidr: field("203.0.113.7/32", "203.0.0.0/16"),
    allowSshFromAnywhere: field(false, true),
    sshSourceMinPrefix: field(16, 8),
    sharedStorage: field("nfs", "efs"),
    efa: field(false),
    tags: fc.oneof(
      { weight: 4, arbitrary: fc.constant({ team: "ml" }) },
      { weight: 1, arbitrary: fc.dictionary(hostileText, hostileText, { maxKeys: 2 }) },
    ),
    vpcCidr: field("10.78.0.0/16"),
    subnetCidr: field("10.78.1.0/24"),
    state: fc.oneof(
      fc.constant({ backend: "local" }),
      fc.record({ backend: field("s3"), bucket: field("my-state"), key: field("k/s.tfstate") }),
    ),
    workerImage: field("ringlab/worker:gpu"),
    workerImageTarball: field("w.tar", "/images/w.tar"),
  },
  { requiredKeys: ["target", "name", "nodes", "adminCidr", "sshPublicKey"] },
);
const campaignSection = fc.record(
  {
    matrix: fc.record({
      nodes: field(1, [1]),
      model: field("tiny", ["tiny", "small"]),
      batchSize: field(8, [8, 16]),
      bandwidth: field("unlimited", ["1gbit", "100mbit"]),
    }),
    repeats: field(1, 3),
    resultsDir: field("results/x", "/tmp/results"),
    keep: field(false),
    train: fc.record({ precision: field("fp32"), numIters: field(2) }, { requiredKeys: [] }),
  },
  { requiredKeys: ["matrix"] },
);

const campaignObject = fc
  .record(
    {
      testbed: fc.oneof(
        { weight: 4, arbitrary: localTestbed },
        { weight: 4, arbitrary: awsTestbed },
        { weight: 1, arbitrary: anyValue },
      ),
      campaign: fc.oneof({ weight: 8, arbitrary: campaignSection }, { weight: 1, arbitrary: anyValue }),
      extra: fc.oneof(
        { weight: 8, arbitrary: fc.constant({}) },
        { weight: 1, arbitrary: fc.dictionary(hostileText, anyValue, { maxKeys: 1 }) },
      ),
    },
    { requiredKeys: ["testbed"] },
  )
  .map(({ extra, ...file }) => ({ ...extra, ...file }));

/** A campaign-like document as YAML, sometimes with a hostile fragment spliced into the text. */
const campaignText = fc
  .tuple(
    campaignObject,
    fc.boolean(),
    fc.nat(3).map((n) => n === 0),
    fc.nat(),
    fc.constantFrom(...HOSTILE),
  )
  .map(([object, flow, splice, at, fragment]) => {
    const text = dumpYaml(object, { flowLevel: flow ? 1 : -1, skipInvalid: true });
    return splice ? text.slice(0, at % (text.length + 1)) + fragment + text.slice(at % (text.length + 1)) : text;
  });

function parseOrConfigError(text: string): LoadedCampaignFile | undefined {
  try {
    return parseCampaign(text, "prop.yaml", "/work/prop.yaml", { readKeys: false });
  } catch (error) {
    if (error instanceof ConfigError) return undefined;
    throw error;
  }
}

/** Every string in an accepted campaign, with its path, except the file's own text. */
function stringsOf(value: unknown, path = ""): [string, string][] {
  if (typeof value === "string") return [[path, value]];
  if (value === null || typeof value !== "object") return [];
  return Object.entries(value).flatMap(([key, inner]) => [
    ...(path === "" ? [] : [[`${path}.${key} (the key)`, key] as [string, string]]),
    ...stringsOf(inner, path === "" ? key : `${path}.${key}`),
  ]);
}

function expectSafe(problem: string | undefined, what: string): void {
  expect(problem, what).toBeUndefined();
}

function expectAcceptedCampaignSafe(campaign: LoadedCampaignFile): void {
  const tb = campaign.testbed;
  expectSafe(checkResourceName(tb.name), "testbed.name");
  expectSafe(checkDockerImageReference(tb.workerImage), "workerImage");
  if (campaign.campaign?.resultsDir !== undefined)
    expectSafe(checkSafePath(campaign.campaign.resultsDir), "resultsDir");
  if (tb.target === "local") {
    if (tb.sharedDir !== undefined) expectSafe(checkSafePath(tb.sharedDir), "sharedDir");
    expectSafe(checkIpv4Cidr(tb.subnet), "subnet");
    return;
  }
  if (tb.target !== "aws") return;
  for (const path of [tb.sshPublicKeyFile, tb.sshPrivateKeyFile, tb.workerImageTarball])
    if (path !== undefined) expectSafe(checkSafePath(path), "key or tarball path");
  expectSafe(checkUnixUserName(tb.sshUser), "sshUser");
  expectSafe(
    checkSshSource(tb.adminCidr, {
      allowSshFromAnywhere: tb.allowSshFromAnywhere,
      minPrefixLength: tb.sshSourceMinPrefix,
    }),
    "adminCidr",
  );
  if (tb.ami !== undefined) expectSafe(checkAmiId(tb.ami), "ami");
  if (tb.sshPublicKey !== undefined) expectSafe(checkSshPublicKey(tb.sshPublicKey), "sshPublicKey");
  for (const [key, value] of Object.entries(tb.tags)) {
    expectSafe(checkTagKey(key), "tag key");
    expectSafe(checkTagValue(value), "tag value");
  }
  if (tb.state.backend === "s3") {
    expectSafe(checkS3BucketName(tb.state.bucket), "state.bucket");
    expectSafe(checkS3Key(tb.state.key), "state.key");
  }
}

/** No accepted string (the public key's comment aside, checked above) carries a template or a control character. */
function expectNoTemplates(campaign: LoadedCampaignFile): void {
  const { sourceText: _text, sourceFile: _file, ...parsed } = campaign;
  for (const [path, text] of stringsOf(parsed)) {
    if (path === "testbed.sshPublicKey") continue;
    expect(text, path).not.toMatch(/\{\{|\{%|\$\{|\p{Cc}/u);
  }
}

const RUNS = { structured: 1500, raw: 1000 };

describe("parseCampaign on generated campaign files", () => {
  it("returns a campaign or throws ConfigError, and what it accepts passes the shared rules", () => {
    let accepted = 0;
    fc.assert(
      fc.property(campaignText, (text) => {
        const campaign = parseOrConfigError(text);
        if (campaign === undefined) return;
        accepted++;
        expectAcceptedCampaignSafe(campaign);
        expectNoTemplates(campaign);
      }),
      { numRuns: RUNS.structured, seed: 20261101 },
    );
    // The generator must reach the accepting path often enough for the checks above to mean something.
    expect(accepted).toBeGreaterThan(RUNS.structured / 10);
  });

  it("never throws anything but ConfigError on arbitrary text", () => {
    const rawText = fc.oneof(
      fc.string({ maxLength: 200 }),
      fc
        .array(fc.constantFrom(...HOSTILE, ...PLAUSIBLE, "testbed:", "\n  ", "- "), { maxLength: 30 })
        .map((parts) => parts.join("")),
    );
    fc.assert(
      fc.property(rawText, (text) => {
        parseOrConfigError(text);
      }),
      { numRuns: RUNS.raw, seed: 20261102 },
    );
  });
});
