import { chmodSync, mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadCampaignFile, MAX_CAMPAIGN_FILE_BYTES, MAX_YAML_ALIASES, parseCampaign } from "../../src/config/load.ts";
import { DEFAULTS } from "../../src/config/schema.ts";
import { ConfigError } from "../../src/util/errors.ts";

const PUBLIC_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHx2Jm3ZpG5a0xV8y3Qb1ZrjQ5k6m0z2b7Vt3nq2XaBc test@ringlab";

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), "ringlab-config-"));
}

/** The problems a campaign text produces, as "path: message" lines. */
function problemsOf(text: string): string[] {
  try {
    parseCampaign(text, "campaign.yaml", join(tempDir(), "campaign.yaml"));
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as ConfigError).problems.map((p) => `${p.path}: ${p.message}`);
  }
  throw new Error("expected the campaign to be rejected");
}

const awsText = (extra: string) => `
testbed:
  target: aws
  name: scale
  nodes: 4
  adminCidr: 203.0.113.7/32
  sshPublicKey: "${PUBLIC_KEY}"
${extra}`;

describe("loading a good campaign file", () => {
  it("applies the documented defaults to a minimal local testbed", () => {
    const campaign = parseCampaign("testbed: {target: local, name: smoke, nodes: 3}\n", "c.yaml");
    expect(campaign.testbed).toEqual({
      target: "local",
      name: "smoke",
      nodes: 3,
      maxNodes: 10,
      subnet: DEFAULTS.local.subnet,
      workerImage: DEFAULTS.local.workerImage,
    });
  });

  it("applies the documented defaults to a minimal aws testbed", () => {
    const tb = parseCampaign(awsText(""), "c.yaml").testbed;
    expect(tb).toMatchObject({
      target: "aws",
      region: "us-east-1",
      instanceType: "g4dn.xlarge",
      rootVolumeGiB: 100,
      sshUser: "ubuntu",
      sharedStorage: "nfs",
      spot: false,
      efa: false,
      ttlHours: 8,
      tags: {},
      state: { backend: "local" },
      allowSshFromAnywhere: false,
      sshPublicKey: PUBLIC_KEY,
    });
    expect(tb).not.toHaveProperty("ami");
  });

  it("reads the public key file relative to the campaign file and derives the private key path", () => {
    const dir = tempDir();
    writeFileSync(join(dir, "id_ring.pub"), `${PUBLIC_KEY}\n`);
    const file = join(dir, "aws.yaml");
    writeFileSync(file, awsText("").replace(/sshPublicKey: .*/, "sshPublicKeyFile: id_ring.pub"));
    const campaign = loadCampaignFile(file);
    expect(campaign.testbed).toMatchObject({
      sshPublicKey: PUBLIC_KEY,
      sshPublicKeyFile: join(dir, "id_ring.pub"),
      sshPrivateKeyFile: join(dir, "id_ring"),
    });
    expect(campaign.sourceFile).toBe(file);
  });

  it("accepts EFA on an instance type that has it, an S3 state backend and user tags", () => {
    const tb = parseCampaign(
      awsText(`  instanceType: p4d.24xlarge
  efa: true
  tags: {team: vision}
  state: {backend: s3, bucket: my-state, key: ringlab/scale.tfstate, region: eu-west-1}`),
      "c.yaml",
    ).testbed;
    expect(tb).toMatchObject({ efa: true, tags: { team: "vision" }, state: { backend: "s3", bucket: "my-state" } });
  });

  it("allows SSH from anywhere only when the file says so explicitly", () => {
    const tb = parseCampaign(
      awsText("  allowSshFromAnywhere: true").replace("203.0.113.7/32", "0.0.0.0/0"),
      "c.yaml",
    ).testbed;
    expect(tb).toMatchObject({ adminCidr: "0.0.0.0/0" });
  });
});

describe("rejecting a bad campaign file", () => {
  it("names the file in every message", () => {
    expect(() => parseCampaign("testbed: {target: local, name: smoke}\n", "campaigns/x.yaml")).toThrowError(
      /^campaigns\/x\.yaml: testbed\.nodes: missing: expected a number/,
    );
  });

  it("reports a missing file with its path", () => {
    expect(() => loadCampaignFile("/nonexistent/campaign.yaml")).toThrowError(
      /\/nonexistent\/campaign\.yaml: file not found/,
    );
  });

  it("reports YAML syntax errors with line and column", () => {
    expect(problemsOf("testbed:\n  target: local\n   name: x\n")).toEqual([
      expect.stringMatching(/^: not valid YAML at line 3, column \d+/),
    ]);
  });

  it("flags an unknown key with a suggestion for the likely typo", () => {
    expect(problemsOf("testbed: {target: local, name: smoke, nodes: 3, subnett: 10.1.0.0/24}\n")).toEqual([
      expect.stringMatching(/^testbed\.subnett: unknown key "subnett" \(did you mean "subnet"\?\)/),
    ]);
  });

  it("suggests the known keys of every section, the S3 state and the train knobs included", () => {
    expect(problemsOf(awsText("  state: {backend: s3, bucket: my-state, key: k, regon: eu-west-1}"))).toEqual([
      'testbed.state.regon: unknown key "regon" (did you mean "region"?); expected one of backend, bucket, key, region',
    ]);
    expect(
      problemsOf(`testbed: {target: local, name: s, nodes: 1}\ncampaign:
  matrix: {nodes: 1, model: tiny, batchSize: 8, bandwidth: unlimited}
  train: {numIter: 2}
  probe: {iter: 2}\n`),
    ).toEqual([
      expect.stringMatching(
        /^campaign\.train\.numIter: unknown key "numIter" \(did you mean "numIters"\?\); expected one of numWarmupBatches, /,
      ),
      expect.stringMatching(
        /^campaign\.probe\.iter: unknown key "iter" \(did you mean "iters"\?\); expected one of enabled, minBytes, /,
      ),
    ]);
  });

  it("flags keys that belong to the other target", () => {
    expect(problemsOf("testbed: {target: local, name: smoke, nodes: 3, region: us-east-1}\n")).toEqual([
      expect.stringMatching(/^testbed\.region: unknown key "region"; expected one of target, name, nodes/),
    ]);
  });

  it("says what was found and what is expected for a wrong type", () => {
    expect(problemsOf('testbed: {target: local, name: smoke, nodes: "three"}\n')).toEqual([
      'testbed.nodes: found "three", expected a number',
    ]);
    expect(problemsOf("testbed: {target: local, name: smoke, nodes: 2.5}\n")).toEqual([
      "testbed.nodes: found 2.5, expected an integer",
    ]);
  });

  it("takes launcher ansible by default, slurm or mpi when asked, and nothing else", () => {
    const campaign = (extra: string) => `testbed: {target: local, name: s, nodes: 2}
campaign:
  matrix: {nodes: [1, 2], model: tiny, batchSize: 8, bandwidth: unlimited}
${extra}`;
    const launcherOf = (extra: string) =>
      parseCampaign(campaign(extra), "c.yaml", join(tempDir(), "c.yaml")).campaign?.launcher;
    expect(launcherOf("")).toBe("ansible");
    expect(launcherOf("  launcher: slurm\n")).toBe("slurm");
    expect(launcherOf("  launcher: mpi\n")).toBe("mpi");
    expect(problemsOf(campaign('  launcher: "slurm; rm -rf /"\n'))).toEqual([
      'campaign.launcher: found "slurm; rm -rf /", expected "ansible", "slurm" or "mpi"',
    ]);
  });

  it("refuses a language model's shape the worker would refuse, naming the knob, before anything starts", () => {
    const with_ = (model: string, train: string, matrix = "") => `testbed: {target: local, name: s, nodes: 2}
campaign:
  matrix: {nodes: [1, 2], model: ${model}, batchSize: 8, bandwidth: 1gbit${matrix}}
  train: {${train}}
`;
    expect(() => parseCampaign(with_("llama-nano", "kvHeads: 4, sequenceLength: 512"), "c.yaml")).not.toThrow();
    expect(problemsOf(with_("llama-nano", "kvHeads: 3"))).toEqual([
      "campaign.train.kvHeads: kvHeads 3 must divide heads 4 (each key and value head serves as many query heads)",
    ]);
    // A matrix value too: the sequence past llama-nano's 512 positions, and past gpt-nano's 128 learned ones.
    expect(problemsOf(with_("[llama-nano, gpt-nano]", "", ", sequenceLength: [128, 1024]"))).toEqual([
      "campaign.train.sequenceLength: sequenceLength 1024 is more than llama-nano's 512 positions (its trained context): set it to 512 or less",
      "campaign.train.sequenceLength: sequenceLength 1024 is more than gpt-nano's 128 learned positions: set it to 128 or less",
    ]);
    expect(problemsOf(with_("gpt-nano", "kvHeads: 2"))).toEqual([
      expect.stringMatching(/^campaign\.train\.kvHeads: kvHeads with gpt-nano: a gpt2 model gives every query head/),
    ]);
    // The layout's refusal is registry.json's (layouts.pipeline.refusesTiedEmbeddings), and so are the ones that work.
    expect(problemsOf(with_("llama-micro", "parallelism: pipeline"))).toEqual([
      "campaign.train.parallelism: parallelism pipeline with llama-micro: its head is its token embedding's matrix (tied), which a pipeline's first and last stages would each hold; use an untied model, or ddp, fsdp or tensor",
    ]);
    expect(() => parseCampaign(with_("llama-micro", "parallelism: tensor"), "c.yaml")).not.toThrow();
  });

  it("reads a campaign file's activationCheckpointing true and false, from before the modes, as full and none", () => {
    const file = (value: string) =>
      parseCampaign(
        `testbed: {target: local, name: s, nodes: 2}
campaign:
  matrix: {nodes: [1, 2], model: llama-nano, batchSize: 8, bandwidth: 1gbit, activationCheckpointing: ${value}}
`,
        "c.yaml",
      ).campaign!.matrix.activationCheckpointing;
    expect(file("[true, false]")).toEqual(["full", "none"]);
    expect(file("[none, selective, full]")).toEqual(["none", "selective", "full"]);
    expect(
      problemsOf(`testbed: {target: local, name: s, nodes: 2}
campaign:
  matrix: {nodes: [1, 2], model: llama-nano, batchSize: 8, bandwidth: 1gbit}
  train: {activationCheckpointing: some}
`),
    ).toEqual([
      expect.stringMatching(
        /^campaign\.train\.activationCheckpointing: found "some", expected "none", "selective" or "full"/,
      ),
    ]);
  });

  it("keeps PowerSGD's and local SGD's knobs to their reduction, and refuses fp16 and checkpoints with them, naming the field", () => {
    const with_ = (train: string, matrix = "") => `testbed: {target: local, name: s, nodes: 2}
campaign:
  matrix: {nodes: [1, 2], model: tiny, batchSize: 8, bandwidth: 1gbit${matrix}}
  train: {${train}}
`;
    expect(() =>
      parseCampaign(with_("reduction: powersgd, powersgdRank: 4, powersgdStartIter: 10"), "c.yaml"),
    ).not.toThrow();
    expect(() => parseCampaign(with_("localSgdPeriod: 8", ", reduction: [ring, local-sgd]"), "c.yaml")).not.toThrow();
    expect(problemsOf(with_("powersgdRank: 4"))).toEqual([
      "campaign.train.powersgdRank: powersgdRank belongs to reduction powersgd: set reduction to powersgd (in train or the matrix)",
    ]);
    expect(problemsOf(with_("reduction: powersgd, localSgdPeriod: 2"))).toEqual([
      "campaign.train.localSgdPeriod: localSgdPeriod belongs to reduction local-sgd: set reduction to local-sgd (in train or the matrix)",
    ]);
    expect(problemsOf(with_("reduction: local-sgd, fp16Allreduce: true"))).toEqual([
      expect.stringMatching(
        /^campaign\.train\.fp16Allreduce: fp16Allreduce with reduction local-sgd: the strategy sends its own numbers/,
      ),
    ]);
    expect(problemsOf(with_("reduction: powersgd, powersgdRank: 0"))).toEqual([
      expect.stringMatching(/^campaign\.train\.powersgdRank: found 0, expected .*at least 1/),
    ]);
    expect(
      problemsOf(
        with_("reduction: powersgd, data: dataset, epochs: 2, checkpointEvery: 5").replace(
          "campaign:\n",
          "campaign:\n  dataset: {name: shapes}\n",
        ),
      ),
    ).toEqual([
      expect.stringMatching(
        /^campaign\.train\.checkpointEvery: checkpointEvery 5 with reduction powersgd: the strategy keeps state of its own .* that checkpoints do not hold yet$/,
      ),
    ]);
    // Timed steps must come after the strategy's plain all-reduce steps: the untimed batches must cover them.
    expect(problemsOf(with_("reduction: powersgd, powersgdStartIter: 12"))).toEqual([
      "campaign.train.powersgdStartIter: powersgdStartIter 12 outlasts the untimed batches (numWarmupBatches 10): timed steps would still send the whole gradient; raise numWarmupBatches to 12 or more",
    ]);
    expect(() =>
      parseCampaign(with_("reduction: local-sgd, localSgdWarmup: 12, numWarmupBatches: 12"), "c.yaml"),
    ).not.toThrow();
    expect(problemsOf(with_("reduction: local-sgd, engine: horovod"))).toEqual([
      expect.stringMatching(/^campaign: engine horovod needs Horovod/),
      "campaign.train.reduction: reduction local-sgd with engine horovod: Horovod always uses its own all-reduce; the other reductions are DDP communication hooks",
    ]);
  });

  it("takes the asynchronous parameter server with its staleness bound, and refuses amp with it (a skipped step stalls the others)", () => {
    const local = (train: string) => `testbed: {target: local, name: s, nodes: 2}
campaign:
  matrix: {nodes: [1, 2], model: tiny, batchSize: 8, bandwidth: 1gbit}
  train: {${train}}
`;
    expect(() => parseCampaign(local("reduction: async-parameter-server, asyncStaleness: 0"), "c.yaml")).not.toThrow();
    expect(problemsOf(local("asyncStaleness: 2"))).toEqual([
      "campaign.train.asyncStaleness: asyncStaleness belongs to reduction async-parameter-server: set reduction to async-parameter-server (in train or the matrix)",
    ]);
    expect(problemsOf(local("reduction: async-parameter-server, fp16Allreduce: true"))).toEqual([
      expect.stringMatching(
        /^campaign\.train\.fp16Allreduce: fp16Allreduce with reduction async-parameter-server: the strategy sends its own numbers/,
      ),
    ]);
    const aws = awsText(`campaign:
  matrix: {nodes: [1, 2], model: resnet50, batchSize: 32, bandwidth: 1gbit, precision: [fp32, amp]}
  train: {reduction: async-parameter-server}
`);
    expect(problemsOf(aws)).toEqual([
      expect.stringMatching(
        /^campaign\.train\.precision: precision amp with reduction async-parameter-server: amp's gradient scaler skips/,
      ),
    ]);
  });

  it("refuses AdamW with the asynchronous parameter server, whose server steps momentum SGD itself and never the workers' optimizer", () => {
    const text = `testbed: {target: local, name: s, nodes: 2}
campaign:
  matrix: {nodes: [1, 2], model: gpt-nano, batchSize: 4, bandwidth: 1gbit, reduction: [ring, async-parameter-server]}
  train: {optimizer: adamw}
`;
    expect(problemsOf(text)).toEqual([
      expect.stringMatching(
        /^campaign\.train\.optimizer: optimizer adamw with reduction async-parameter-server: the asynchronous server steps .*momentum SGD/,
      ),
    ]);
    expect(() => parseCampaign(text.replace("optimizer: adamw", "optimizer: sgd"), "c.yaml")).not.toThrow();
  });

  it("writes a text corpus for the language models and images for the image models, one kind a campaign", () => {
    const campaign = (models: string, kind: string) => `testbed: {target: local, name: s, nodes: 2}
campaign:
  matrix: {nodes: [1, 2], model: [${models}], batchSize: 4, bandwidth: 1gbit}
  train: {data: dataset}
  dataset: {name: corpus${kind}}
`;
    expect(
      parseCampaign(campaign("gpt-mini", ", kind: text"), "c.yaml", join(tempDir(), "c.yaml")).campaign?.dataset,
    ).toMatchObject({ name: "corpus", kind: "text" });
    expect(parseCampaign(campaign("tiny", ""), "c.yaml", join(tempDir(), "c.yaml")).campaign?.dataset?.kind).toBe(
      "images",
    );
    expect(problemsOf(campaign("gpt-mini, tiny", ", kind: text"))).toEqual([
      "campaign.dataset.kind: found text, but tiny reads images: a campaign's dataset serves models of one kind (image models: kind images; language models: kind text); put the others in a campaign of their own",
    ]);
    expect(problemsOf(campaign("gpt-mini", ""))).toEqual([
      "campaign.dataset.kind: found images, but gpt-mini reads text: a campaign's dataset serves models of one kind (image models: kind images; language models: kind text); put the others in a campaign of their own",
    ]);
  });

  it("sums the probe through Open MPI only where mpirun starts one rank per node in the CPU image, saying what to change", () => {
    const local = (extra: string, matrix = "") => `testbed: {target: local, name: s, nodes: 2}
campaign:
  matrix: {nodes: [1, 2], model: tiny, batchSize: 8, bandwidth: 1gbit${matrix}}
  probe: {library: [torch, mpi]}
${extra}`;
    expect(
      parseCampaign(local("  launcher: mpi\n"), "c.yaml", join(tempDir(), "c.yaml")).campaign?.probe.library,
    ).toEqual(["torch", "mpi"]);
    expect(problemsOf(local(""))).toEqual([
      "campaign.probe.library: library mpi sums through Open MPI in processes that mpirun starts: set campaign.launcher to mpi (found ansible)",
    ]);
    expect(problemsOf(local("  launcher: mpi\n", ", processesPerNode: [1, 2]"))).toEqual([
      "campaign.probe.library: library mpi runs one process per node (mpirun's ranks are the nodes): set matrix.processesPerNode to 1 (found 1, 2)",
    ]);
    expect(problemsOf(local("  launcher: mpi\n").replace("library: [torch, mpi]", "library: [gloo]"))).toEqual([
      'campaign.probe.library.0: found "gloo", expected "torch" or "mpi"',
    ]);
    // Another collective than the all-reduce is torch.distributed's: not through Open MPI alone.
    expect(
      problemsOf(
        local("  launcher: mpi\n").replace(
          "library: [torch, mpi]",
          "library: [mpi], collective: [all-reduce, all-gather]",
        ),
      ),
    ).toEqual([
      "campaign.probe.collective: all-gather runs through torch.distributed only (Open MPI's probe is its all-reduce): add torch to probe.library",
    ]);
    expect(problemsOf(local("").replace("library: [torch, mpi]", "collective: [all-to-all]"))).toEqual([
      'campaign.probe.collective.0: found "all-to-all", expected "all-reduce", "all-gather", "reduce-scatter" or "sendrecv"',
    ]);
  });

  it("rejects an unknown target", () => {
    expect(problemsOf("testbed: {target: gcp, name: smoke, nodes: 3}\n")).toEqual([
      'testbed.target: found "gcp", expected "local", "aws" or "kubernetes"',
    ]);
  });

  it("rejects node counts out of range", () => {
    expect(problemsOf("testbed: {target: local, name: smoke, nodes: 0}\n")).toEqual([
      "testbed.nodes: found 0, expected a number at least 1",
    ]);
    expect(problemsOf("testbed: {target: local, name: smoke, nodes: 11}\n")).toEqual([
      expect.stringMatching(/^testbed\.nodes: found 11, expected at most maxNodes \(10\)/),
    ]);
    expect(() =>
      parseCampaign("testbed: {target: local, name: smoke, nodes: 11, maxNodes: 16}\n", "c.yaml"),
    ).not.toThrow();
  });

  it("rejects a name that cannot name cloud resources", () => {
    expect(problemsOf("testbed: {target: local, name: My_Bed, nodes: 1}\n")).toEqual([
      expect.stringMatching(/^testbed\.name: found "My_Bed", expected 1-24 lower-case letters/),
    ]);
  });

  it("rejects a malformed CIDR", () => {
    expect(problemsOf(awsText("").replace("203.0.113.7/32", "203.0.113.7/33"))).toEqual([
      'testbed.adminCidr: found "203.0.113.7/33", expected an IPv4 CIDR such as 203.0.113.7/32',
    ]);
    expect(problemsOf("testbed: {target: local, name: s, nodes: 1, subnet: 10.77.0.0}\n")).toEqual([
      expect.stringMatching(/^testbed\.subnet: found "10\.77\.0\.0", expected/),
    ]);
  });

  it("refuses SSH open to the world unless allowed explicitly", () => {
    expect(problemsOf(awsText("").replace("203.0.113.7/32", "0.0.0.0/0"))).toEqual([
      expect.stringMatching(/^testbed\.adminCidr: 0\.0\.0\.0\/0 opens SSH to the whole internet/),
    ]);
  });

  it("refuses SSH sources wider than /16 (half the internet as 0.0.0.0/1 too) unless allowed or the limit is lowered", () => {
    expect(problemsOf(awsText("").replace("203.0.113.7/32", "0.0.0.0/1"))).toEqual([
      expect.stringMatching(/^testbed\.adminCidr: 0\.0\.0\.0\/1 opens SSH to 2147483648 addresses, wider than \/16/),
    ]);
    expect(problemsOf(awsText("").replace("203.0.113.7/32", "203.0.0.0/15"))).toHaveLength(1);
    expect(parseCampaign(awsText("").replace("203.0.113.7/32", "203.0.0.0/16"), "c.yaml").testbed).toMatchObject({
      sshSourceMinPrefix: 16,
    });
    expect(() =>
      parseCampaign(awsText("  sshSourceMinPrefix: 12").replace("203.0.113.7/32", "203.0.0.0/15"), "c.yaml"),
    ).not.toThrow();
    expect(() =>
      parseCampaign(awsText("  allowSshFromAnywhere: true").replace("203.0.113.7/32", "0.0.0.0/1"), "c.yaml"),
    ).not.toThrow();
    expect(problemsOf(awsText("  sshSourceMinPrefix: 33"))).toEqual([
      "testbed.sshSourceMinPrefix: found 33, expected a number at most 32",
    ]);
  });

  it("refuses SSH from anywhere through a lowered sshSourceMinPrefix: never below /8 without allowSshFromAnywhere", () => {
    expect(problemsOf(awsText("  sshSourceMinPrefix: 0").replace("203.0.113.7/32", "0.0.0.0/0"))).toEqual([
      "testbed.sshSourceMinPrefix: found 0, expected a number at least 8",
    ]);
    expect(problemsOf(awsText("  sshSourceMinPrefix: 8").replace("203.0.113.7/32", "10.0.0.0/7"))).toEqual([
      expect.stringMatching(/^testbed\.adminCidr: 10\.0\.0\.0\/7 opens SSH to 33554432 addresses, wider than \/8/),
    ]);
    expect(() =>
      parseCampaign(awsText("  sshSourceMinPrefix: 8").replace("203.0.113.7/32", "10.0.0.0/8"), "c.yaml"),
    ).not.toThrow();
    expect(() =>
      parseCampaign(awsText("  allowSshFromAnywhere: true").replace("203.0.113.7/32", "0.0.0.0/0"), "c.yaml"),
    ).not.toThrow();
  });

  it("refuses a shared directory that others can write or that is not the caller's, naming its owner, mode and the fix", () => {
    const dir = tempDir();
    const shared = join(dir, "shared");
    mkdirSync(shared);
    chmodSync(shared, 0o777);
    expect(problemsOf(`testbed: {target: local, name: s, nodes: 1, sharedDir: ${shared}}\n`)).toEqual([
      expect.stringMatching(
        new RegExp(
          `^testbed\\.sharedDir: ${shared} \\(owner uid \\d+, mode 0777\\) can be written by other users.*chmod go-w ${shared}`,
        ),
      ),
    ]);
    chmodSync(shared, 0o755);
    expect(
      parseCampaign(`testbed: {target: local, name: s, nodes: 1, sharedDir: ${shared}}\n`, "c.yaml").testbed,
    ).toMatchObject({ sharedDir: shared });
  });

  it("refuses a shared directory in a system folder, also reached through a symbolic link, before anything starts", () => {
    expect(problemsOf("testbed: {target: local, name: s, nodes: 1, sharedDir: /etc/ringlab}\n")).toEqual([
      'testbed.sharedDir: found "/etc/ringlab", expected a folder of its own for the nodes\' shared files, such as ' +
        "/data/ringlab-shared or ~/ringlab-shared, not inside the system folder /etc",
    ]);
    expect(problemsOf("testbed: {target: local, name: s, nodes: 1, sharedDir: /}\n")).toEqual([
      expect.stringMatching(/not \/ itself/),
    ]);
    const dir = tempDir();
    symlinkSync("/usr", join(dir, "looks-harmless"));
    const text = "testbed: {target: local, name: s, nodes: 1, sharedDir: looks-harmless/share/ringlab}\n";
    expect(() => parseCampaign(text, "campaign.yaml", join(dir, "campaign.yaml"))).toThrow(
      /inside the system folder \/usr/,
    );
    const own = parseCampaign(
      text.replace("looks-harmless/share", "data"),
      "campaign.yaml",
      join(dir, "campaign.yaml"),
    );
    expect(own.testbed).toMatchObject({ sharedDir: join(dir, "data/ringlab") });
  });

  it("refuses Ansible templates, commas and shell syntax in paths, images and user names", () => {
    expect(
      problemsOf(`testbed: {target: local, name: s, nodes: 1}\ncampaign:
  matrix: {nodes: 1, model: tiny, batchSize: 8, bandwidth: unlimited}
  resultsDir: "/tmp/r-{{ lookup('pipe','id') }}"\n`),
    ).toEqual([expect.stringMatching(/^campaign\.resultsDir: found "\/tmp\/r-\{\{ .*expected a path without/)]);
    expect(
      problemsOf(`testbed: {target: local, name: s, nodes: 1, sharedDir: "/tmp/r-{{ lookup('pipe','id') }}"}\n`),
    ).toEqual([expect.stringMatching(/^testbed\.sharedDir: found .*expected a path without/)]);
    expect(problemsOf("testbed: {target: local, name: s, nodes: 1, sharedDir: '/data/a,readonly'}\n")).toEqual([
      expect.stringMatching(/^testbed\.sharedDir: found "\/data\/a,readonly", expected a path without .*\(found ","\)/),
    ]);
    expect(problemsOf("testbed: {target: local, name: s, nodes: 1, workerImage: 'ringlab/worker:{{x}}'}\n")).toEqual([
      expect.stringMatching(
        /^testbed\.workerImage: found "ringlab\/worker:\{\{x\}\}", expected a Docker image reference/,
      ),
    ]);
    expect(problemsOf(awsText('  sshUser: "ubuntu{{x}}"'))).toEqual([
      expect.stringMatching(/^testbed\.sshUser: found "ubuntu\{\{x\}\}", expected a user name/),
    ]);
    expect(
      problemsOf(
        awsText(
          "  workerImageTarball: 'w.tar; rm -rf ~'\n  tags: {'{{x}}': y}\n  state: {backend: s3, bucket: 'b{{x}}', key: '../k'}",
        ),
      ),
    ).toEqual([
      expect.stringMatching(/^testbed\.tags\.\{\{x\}\}: found "\{\{x\}\}", expected a tag key/),
      expect.stringMatching(/^testbed\.state\.bucket: found "b\{\{x\}\}", expected an S3 bucket name/),
      expect.stringMatching(/^testbed\.state\.key: found "\.\.\/k", expected an S3 key/),
      expect.stringMatching(/^testbed\.workerImageTarball: found "w\.tar; rm -rf ~", expected a path .*\(found ";"\)/),
    ]);
  });

  it("refuses a subnet outside the VPC and a VPC size AWS refuses", () => {
    expect(problemsOf(awsText("  subnetCidr: 10.79.1.0/24"))).toEqual([
      'testbed.subnetCidr: found "10.79.1.0/24", expected a range inside vpcCidr 10.78.0.0/16',
    ]);
    expect(problemsOf(awsText("  vpcCidr: 10.0.0.0/8"))).toEqual([
      expect.stringMatching(
        /^testbed\.vpcCidr: found "10\.0\.0\.0\/8", expected a prefix length between \/16 and \/28/,
      ),
    ]);
  });

  it("asks to rename a file whose name cannot name the campaign", () => {
    const text = "testbed: {target: local, name: s, nodes: 1}\n";
    expect(() => parseCampaign(text, "My Campaign.yaml")).toThrowError(
      /^My Campaign\.yaml: the file name gives the campaign its name .*found "My Campaign", expected 1-64 lower-case letters.*; rename the file$/,
    );
    expect(() => parseCampaign(text, "campaigns/scale-16.yaml")).not.toThrow();
  });

  it("refuses files over 1 MB before reading them, and text over 1 MB", () => {
    const file = join(tempDir(), "big.yaml");
    writeFileSync(file, `# ${"x".repeat(MAX_CAMPAIGN_FILE_BYTES)}\n`);
    expect(() => loadCampaignFile(file)).toThrowError(
      /big\.yaml: the file is \d+ bytes; expected a campaign file of at most 1048576 bytes/,
    );
    expect(problemsOf(`# ${"x".repeat(MAX_CAMPAIGN_FILE_BYTES)}\n`)).toEqual([
      expect.stringMatching(/^: the file is \d+ bytes/),
    ]);
  });

  it("refuses YAML that expands aliases beyond a small limit (billion laughs)", () => {
    const levels = ["a: &a [x, x, x, x, x, x, x, x, x]"];
    for (let level = 1; level < 9; level++)
      levels.push(
        `${"abcdefghi"[level]}: &${"abcdefghi"[level]} [${Array(9)
          .fill(`*${"abcdefghi"[level - 1]}`)
          .join(", ")}]`,
      );
    expect(problemsOf(`${levels.join("\n")}\ntestbed: {target: local, name: s, nodes: 1}\n`)).toEqual([
      expect.stringMatching(
        new RegExp(
          `^: not valid YAML at line \\d+, column \\d+: aliases exceeded maxAliases \\(${MAX_YAML_ALIASES}\\)`,
        ),
      ),
    ]);
    const fewAliases = "defaults: &n 2\ntestbed: {target: local, name: s, nodes: *n}\n";
    expect(problemsOf(fewAliases)).toEqual([expect.stringMatching(/^defaults: unknown key/)]);
  });

  it("reports a missing key file with its resolved path", () => {
    const dir = tempDir();
    const file = join(dir, "aws.yaml");
    writeFileSync(file, awsText("").replace(/sshPublicKey: .*/, "sshPublicKeyFile: missing.pub"));
    expect(() => loadCampaignFile(file)).toThrowError(
      `${file}: testbed.sshPublicKeyFile: cannot read ${join(dir, "missing.pub")}; expected an OpenSSH public key file`,
    );
  });

  it("rejects key text that is not a public key", () => {
    expect(problemsOf(awsText("").replace(PUBLIC_KEY, "-----BEGIN OPENSSH PRIVATE KEY-----"))).toEqual([
      expect.stringMatching(/^testbed\.sshPublicKey: expected an OpenSSH public key/),
    ]);
  });

  it("requires a key for aws", () => {
    expect(problemsOf(awsText("").replace(/ {2}sshPublicKey: .*\n/, ""))).toEqual([
      expect.stringMatching(/^testbed\.sshPublicKeyFile: missing: expected sshPublicKeyFile/),
    ]);
  });

  it("rejects EFA on an instance type without it", () => {
    expect(problemsOf(awsText("  efa: true"))).toEqual([
      expect.stringMatching(/^testbed\.efa: instance type g4dn\.xlarge has no EFA/),
    ]);
  });

  it("rejects an availability zone outside the region", () => {
    expect(problemsOf(awsText("  region: eu-west-1\n  availabilityZone: us-east-1a"))).toEqual([
      expect.stringMatching(/^testbed\.availabilityZone: found "us-east-1a", expected a zone of region eu-west-1/),
    ]);
  });

  it("rejects an unknown state backend and wrong tag values", () => {
    expect(problemsOf(awsText("  tags: {team: 7}\n  state: {backend: gcs}"))).toEqual([
      "testbed.tags.team: found 7, expected text",
      'testbed.state.backend: found "gcs", expected "local" or "s3"',
    ]);
  });

  it("reports a matrix axis out of range instead of failing inside a cross-field rule", () => {
    expect(
      problemsOf(
        "testbed: {target: local, name: s, nodes: 1}\ncampaign: {matrix: {nodes: 0, model: tiny, batchSize: 8, bandwidth: unlimited}}\n",
      ),
    ).toEqual([expect.stringMatching(/^campaign\.matrix\.nodes: found 0, expected/)]);
  });

  it("lists every problem at once rather than stopping at the first", () => {
    expect(problemsOf("testbed: {target: local, name: X, nodes: 0, colour: red}\n")).toHaveLength(3);
  });
});
