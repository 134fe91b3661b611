import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { estimateRunSeconds } from "../../src/campaign/estimate.ts";
import { planCampaign, remainingRuns, reshapeCount } from "../../src/campaign/plan.ts";
import { configurationKey } from "../../src/results/configuration.ts";
import { loadCampaignFile, loadKubernetesCampaignFile, parseCampaign } from "../../src/config/load.ts";
import { ConfigError } from "../../src/util/errors.ts";

const file = (campaign: string, testbedNodes = 4) =>
  parseCampaign(`testbed: {target: local, name: t, nodes: ${testbedNodes}}\ncampaign:\n${campaign}`, "c.yaml");

const smoke = file(`
  matrix: {nodes: [1, 2, 3], model: tiny, batchSize: 32, bandwidth: [1gbit, 10gbit]}
  train: {numIters: 3}
  probe: {maxBytes: 1048576}
`);

describe("the campaign files shipped in campaigns/", () => {
  for (const name of readdirSync("campaigns").filter((entry) => entry.endsWith(".yaml"))) {
    it(`${name} is valid and plans at least one run per node count it names`, () => {
      // Planning needs no SSH key (`ringlab plan` works before one exists). A Kubernetes campaign is `ringlab
      // manifests`'.
      const file = `campaigns/${name}`;
      const parsed = /^\s+target: kubernetes$/m.test(readFileSync(file, "utf8"))
        ? loadKubernetesCampaignFile(file)
        : loadCampaignFile(file, { readKeys: false });
      if (parsed.campaign === undefined) return;
      const plan = planCampaign(parsed, name);
      expect(new Set(plan.runs.map((run) => run.nodes))).toEqual(new Set(parsed.campaign.matrix.nodes));
    });
  }
});

describe("expanding the matrix", () => {
  it("makes one run per combination and a probe per node count and bandwidth, the single-node baseline beside the points of every bandwidth", () => {
    expect(planCampaign(smoke, "smoke").runs.map((run) => run.id)).toEqual([
      "allreduce-n2-1gbit-r1",
      "allreduce-n3-1gbit-r1",
      "train-tiny-b32-n1-r1",
      "train-tiny-b32-n2-1gbit-r1",
      "train-tiny-b32-n3-1gbit-r1",
      "allreduce-n2-10gbit-r1",
      "allreduce-n3-10gbit-r1",
      "train-tiny-b32-n1-r2",
      "train-tiny-b32-n2-10gbit-r1",
      "train-tiny-b32-n3-10gbit-r1",
    ]);
    // The baseline's repeats are its own count; it shapes no link.
    const baselines = planCampaign(smoke, "smoke").runs.filter((run) => run.nodes === 1);
    expect(baselines.map((run) => [run.configuration, run.repeat, run.bandwidth])).toEqual([
      ["train-tiny-b32-n1", 1, null],
      ["train-tiny-b32-n1", 2, null],
    ]);
  });

  it("counts the seed experiment: 10 node counts x 2 models x 3 batch sizes x 2 bandwidths", () => {
    const seed = file(
      `
  matrix: {nodes: [1,2,3,4,5,6,7,8,9,10], model: [resnet101, inception_v3], batchSize: [32, 64, 96], bandwidth: [1gbit, 10gbit]}
  probe: {enabled: false}
`,
      10,
    );
    const plan = planCampaign(seed, "seed");
    // 6 single-node baselines beside each bandwidth's 9 x 6 multi-node runs.
    expect(plan.runs).toHaveLength(2 * (6 + 9 * 6));
    expect(plan.nodesToProvision).toBe(10);
    expect(plan.largestRunNodes).toBe(10);
    expect(reshapeCount(plan.runs)).toBe(2);
  });

  it("passes the model, batch size and knobs to the worker as flags", () => {
    const plan = planCampaign(
      file(`
  matrix: {nodes: 2, model: resnet50, batchSize: 64, bandwidth: 1gbit, fp16Allreduce: [false, true]}
  train: {bucketCapMb: 64, numIters: 5}
  probe: {enabled: false}
`),
      "k",
    );
    expect(plan.runs.map((run) => [run.id, run.workerArgs.join(" ")])).toEqual([
      [
        "train-resnet50-b64-n2-1gbit-fp16allreduce-false-r1",
        "--model resnet50 --batch-size 64 --num-iters 5 --bucket-cap-mb 64 --timeout-seconds 120",
      ],
      [
        "train-resnet50-b64-n2-1gbit-fp16allreduce-true-r1",
        "--model resnet50 --batch-size 64 --num-iters 5 --bucket-cap-mb 64 --fp16-allreduce --timeout-seconds 120",
      ],
    ]);
  });

  it("probes every reduction the training runs use, ring under the ids it always had", () => {
    const plan = planCampaign(
      file(`
  matrix: {nodes: [1, 2], model: tiny, batchSize: 8, bandwidth: 1gbit, reduction: [ring, parameter-server]}
`),
      "s",
    );
    expect(plan.runs.map((run) => run.id)).toEqual([
      "allreduce-n2-1gbit-r1",
      "allreduce-n2-1gbit-parameter-server-r1",
      "train-tiny-b8-n1-reduction-ring-r1",
      "train-tiny-b8-n1-reduction-parameter-server-r1",
      "train-tiny-b8-n2-1gbit-reduction-ring-r1",
      "train-tiny-b8-n2-1gbit-reduction-parameter-server-r1",
    ]);
    const byId = new Map(plan.runs.map((run) => [run.id, run]));
    expect(byId.get("allreduce-n2-1gbit-r1")!.workerArgs).not.toContain("--reduction");
    expect(byId.get("allreduce-n2-1gbit-parameter-server-r1")!.workerArgs.join(" ")).toContain(
      "--iters 5 --reduction parameter-server --timeout-seconds",
    );
    expect(byId.get("allreduce-n2-1gbit-parameter-server-r1")!.knobs).toEqual({ reduction: "parameter-server" });
    expect(byId.get("train-tiny-b8-n2-1gbit-reduction-parameter-server-r1")!.workerArgs.join(" ")).toContain(
      "--reduction parameter-server",
    );
    // A reduction fixed for the whole campaign is probed alone.
    const fixed = planCampaign(
      file(`
  matrix: {nodes: 2, model: tiny, batchSize: 8, bandwidth: 1gbit}
  train: {reduction: sharded-parameter-server}
`),
      "f",
    );
    expect(fixed.runs.map((run) => run.id)).toEqual([
      "allreduce-n2-1gbit-sharded-parameter-server-r1",
      "train-tiny-b8-n2-1gbit-r1",
    ]);
  });

  it("probes the ring's link for PowerSGD and local SGD, which are ring all-reduces of fewer bytes, and passes their knobs", () => {
    const plan = planCampaign(
      file(`
  matrix: {nodes: [1, 2], model: tiny, batchSize: 8, bandwidth: 1gbit, reduction: [ring, powersgd, local-sgd]}
  train: {powersgdRank: 4, localSgdPeriod: 8}
`),
      "r",
    );
    expect(plan.runs.filter((run) => run.job === "allreduce").map((run) => run.id)).toEqual(["allreduce-n2-1gbit-r1"]);
    const powersgd = plan.runs.find((run) => run.id === "train-tiny-b8-n2-1gbit-reduction-powersgd-r1")!;
    expect(powersgd.workerArgs.join(" ")).toMatch(
      /--reduction powersgd .*--powersgd-rank 4|--powersgd-rank 4 .*--reduction powersgd/,
    );
    // A strategy's knob fixed for the campaign reaches that strategy's runs only: the ring's keep their fingerprint.
    const ring = plan.runs.find((run) => run.id === "train-tiny-b8-n2-1gbit-reduction-ring-r1")!;
    expect(ring.workerArgs.join(" ")).not.toMatch(/--powersgd-rank|--local-sgd-period/);
    expect(ring.knobs).toEqual({ reduction: "ring" });
    // As an axis, it varies its own strategy's runs and leaves one ring configuration, not one per rank.
    const ranks = planCampaign(
      file(`
  matrix: {nodes: 2, model: tiny, batchSize: 8, bandwidth: 1gbit, reduction: [ring, powersgd], powersgdRank: [1, 4]}
`),
      "k",
    );
    expect(ranks.runs.filter((run) => run.job === "train").map((run) => run.id)).toEqual([
      "train-tiny-b8-n2-1gbit-reduction-ring-r1",
      "train-tiny-b8-n2-1gbit-reduction-powersgd-powersgdrank-1-r1",
      "train-tiny-b8-n2-1gbit-reduction-powersgd-powersgdrank-4-r1",
    ]);
  });

  it("probes each library of probe.library, Open MPI with the ring only, torch under the ids it always had", () => {
    const plan = planCampaign(
      file(`
  matrix: {nodes: [1, 2], model: tiny, batchSize: 8, bandwidth: 1gbit, reduction: [ring, parameter-server]}
  probe: {library: [torch, mpi]}
  launcher: mpi
`),
      "l",
    );
    const probes = plan.runs.filter((run) => run.job === "allreduce");
    expect(probes.map((run) => [run.id, run.knobs])).toEqual([
      ["allreduce-n2-1gbit-r1", {}],
      ["allreduce-n2-1gbit-parameter-server-r1", { reduction: "parameter-server" }],
      ["allreduce-n2-1gbit-mpi-r1", { library: "mpi" }],
    ]);
    expect(probes[2]!.workerArgs.join(" ")).toContain("--iters 5 --library mpi --timeout-seconds");
    expect(probes[0]!.workerArgs).not.toContain("--library");
    // iperf3's reference once per link and node count, with torch.distributed's ring probe.
    const withReference = planCampaign(
      file(`
  matrix: {nodes: [1, 2], model: tiny, batchSize: 8, bandwidth: 1gbit, reduction: [ring, parameter-server]}
  probe: {library: [torch, mpi], reference: iperf3}
  launcher: mpi
`),
      "i",
    );
    expect(
      withReference.runs
        .filter((run) => run.workerArgs.includes("--reference"))
        .map((run) => [run.id, run.workerArgs[run.workerArgs.indexOf("--reference") + 1]]),
    ).toEqual([["allreduce-n2-1gbit-r1", "iperf3"]]);
  });

  it("probes each collective of probe.collective through torch.distributed's ring, the all-reduce under the ids it always had", () => {
    const plan = planCampaign(
      file(`
  matrix: {nodes: [1, 2], model: tiny, batchSize: 8, bandwidth: 1gbit, reduction: [ring, parameter-server]}
  probe: {collective: [all-reduce, all-gather, reduce-scatter, sendrecv], library: [torch, mpi], reference: iperf3}
  launcher: mpi
`),
      "c",
    );
    const probes = plan.runs.filter((run) => run.job === "allreduce");
    expect(probes.map((run) => [run.id, run.knobs])).toEqual([
      ["allreduce-n2-1gbit-r1", {}],
      ["allreduce-n2-1gbit-parameter-server-r1", { reduction: "parameter-server" }],
      ["allreduce-n2-1gbit-all-gather-r1", { collective: "all-gather" }],
      ["allreduce-n2-1gbit-reduce-scatter-r1", { collective: "reduce-scatter" }],
      ["allreduce-n2-1gbit-sendrecv-r1", { collective: "sendrecv" }],
      ["allreduce-n2-1gbit-mpi-r1", { library: "mpi" }],
    ]);
    expect(probes[2]!.workerArgs.join(" ")).toMatch(/--iters 5 --collective all-gather --timeout-seconds/);
    expect(
      probes.filter((run) => run.workerArgs.includes("--collective")).map((run) => run.workerArgs.join(" ")),
    ).not.toContainEqual(expect.stringMatching(/--reduction|--library|--reference/));
    expect(probes[0]!.workerArgs).not.toContain("--collective");
    // Without the all-reduce: only the collectives asked for.
    const only = planCampaign(
      file(`
  matrix: {nodes: [1, 2], model: tiny, batchSize: 8, bandwidth: 1gbit}
  probe: {collective: [all-gather]}
`),
      "o",
    );
    expect(only.runs.filter((run) => run.job === "allreduce").map((run) => run.id)).toEqual([
      "allreduce-n2-1gbit-all-gather-r1",
    ]);
  });

  it("places N nodes × P processes, probing one node's processes once and keeping ids of one process as they were", () => {
    const plan = planCampaign(
      file(`
  matrix: {nodes: [1, 2], processesPerNode: [2, 1], model: tiny, batchSize: 8, bandwidth: 1gbit}
`),
      "p",
    );
    expect(plan.runs.map((run) => [run.id, run.processesPerNode])).toEqual([
      ["allreduce-n1-p2-r1", 2],
      ["allreduce-n2-1gbit-r1", 1],
      ["allreduce-n2-p2-1gbit-r1", 2],
      ["train-tiny-b8-n1-r1", 1],
      ["train-tiny-b8-n1-p2-r1", 2],
      ["train-tiny-b8-n2-1gbit-r1", 1],
      ["train-tiny-b8-n2-p2-1gbit-r1", 2],
    ]);
    expect(plan.runs.find((run) => run.id === "train-tiny-b8-n1-p2-r1")!.bandwidth).toBeNull();
    expect(plan.largestRunWorkers).toBe(4);
    // Without the axis the worker picks (one per GPU on GPU nodes), and fingerprints stay those of older campaigns.
    const plain = planCampaign(
      file("  matrix: {nodes: 2, model: tiny, batchSize: 8, bandwidth: 1gbit}\n  probe: {enabled: false}\n"),
      "q",
    );
    expect(plain.runs[0]!.processesPerNode).toBeUndefined();
    const explicit = planCampaign(
      file(
        "  matrix: {nodes: 2, processesPerNode: 1, model: tiny, batchSize: 8, bandwidth: 1gbit}\n  probe: {enabled: false}\n",
      ),
      "q",
    );
    expect(explicit.runs[0]!.id).toBe(plain.runs[0]!.id);
    expect(explicit.runs[0]!.fingerprint).not.toBe(plain.runs[0]!.fingerprint);
  });

  it("runs a bandwidth group in rounds (baseline, 2 nodes, 3 nodes, baseline, ...), so drift spreads over all configurations", () => {
    const plan = planCampaign(
      file(`
  matrix: {nodes: [1, 2, 3], model: tiny, batchSize: 8, bandwidth: [1gbit, 3gbit]}
  repeats: 2
  probe: {enabled: false}
`),
      "r",
    );
    expect(plan.runs.map((run) => run.id)).toEqual([
      "train-tiny-b8-n1-r1",
      "train-tiny-b8-n2-1gbit-r1",
      "train-tiny-b8-n3-1gbit-r1",
      "train-tiny-b8-n1-r2",
      "train-tiny-b8-n2-1gbit-r2",
      "train-tiny-b8-n3-1gbit-r2",
      "train-tiny-b8-n1-r3",
      "train-tiny-b8-n2-3gbit-r1",
      "train-tiny-b8-n3-3gbit-r1",
      "train-tiny-b8-n1-r4",
      "train-tiny-b8-n2-3gbit-r2",
      "train-tiny-b8-n3-3gbit-r2",
    ]);
    expect(plan.runs.map((run) => run.round)).toEqual([1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2]);
    expect(plan.runs.every((run) => !run.conditional)).toBe(true);
    // Single-node runs alone: one group, whatever the bandwidths.
    const alone = planCampaign(
      file("  matrix: {nodes: 1, model: tiny, batchSize: 8, bandwidth: [1gbit, 3gbit]}\n  repeats: 2\n"),
      "a",
    );
    expect(alone.runs.map((run) => run.id)).toEqual(["train-tiny-b8-n1-r1", "train-tiny-b8-n1-r2"]);
  });

  it("with repeatUntil plans every round up to maxRepeats, those past minRepeats conditional and without probes", () => {
    const plan = planCampaign(
      file(`
  matrix: {nodes: [1, 2], model: tiny, batchSize: 8, bandwidth: 1gbit}
  repeatUntil: {halfWidth: 0.03, minRepeats: 2, maxRepeats: 4}
`),
      "u",
    );
    expect(plan.repeatUntil).toEqual({ halfWidth: 0.03, minRepeats: 2, maxRepeats: 4 });
    expect(plan.runs.map((run) => `${run.id}${run.conditional ? "?" : ""}`)).toEqual([
      "allreduce-n2-1gbit-r1",
      "train-tiny-b8-n1-r1",
      "train-tiny-b8-n2-1gbit-r1",
      "allreduce-n2-1gbit-r2",
      "train-tiny-b8-n1-r2",
      "train-tiny-b8-n2-1gbit-r2",
      "train-tiny-b8-n1-r3?",
      "train-tiny-b8-n2-1gbit-r3?",
      "train-tiny-b8-n1-r4?",
      "train-tiny-b8-n2-1gbit-r4?",
    ]);
  });

  it("leaves out the combinations matrix.exclude names, and only those, and refuses an entry that leaves out nothing", () => {
    const layouts = (exclude: string) =>
      file(
        `
  matrix: {nodes: [1, 2, 3], model: gpt-mini, batchSize: 6, bandwidth: [300mbit, 1gbit], parallelism: [ddp, pipeline], pipelineSchedule: [gpipe, 1f1b],
    microBatches: [2, 3]${exclude}}
  probe: {enabled: false}
`,
        3,
      );
    const ids = (exclude: string) => planCampaign(layouts(exclude), "layouts").runs.map((run) => run.id);
    const all = ids("");
    const kept = ids(", exclude: [{nodes: 3, pipelineSchedule: 1f1b, microBatches: 2}]");
    // 1F1B x2 on 3 nodes at both rates, nothing else: not on 1 or 2 nodes, not GPipe, not ddp (which has no
    // micro-batches).
    expect(all.filter((id) => !kept.includes(id))).toEqual([
      "train-gpt-mini-b6-n3-300mbit-parallelism-pipeline-microbatches-2-pipelineschedule-1f1b-r1",
      "train-gpt-mini-b6-n3-1gbit-parallelism-pipeline-microbatches-2-pipelineschedule-1f1b-r1",
    ]);
    expect(kept.filter((id) => !all.includes(id))).toEqual([]);
    // Entries are alternatives: a run matching any one is left out.
    expect(
      all.length -
        ids(", exclude: [{nodes: 3, pipelineSchedule: 1f1b, microBatches: 2}, {bandwidth: 300mbit, parallelism: ddp}]")
          .length,
    ).toBe(2 + 2);
    // A single-node run has no link rate: this entry matches no run, and would otherwise leave the 1-node runs in
    // unnoticed.
    expect(() => planCampaign(layouts(", exclude: [{nodes: 1, bandwidth: 300mbit}]"), "layouts")).toThrow(
      'campaign.matrix.exclude entry 1 ({"nodes":1,"bandwidth":"300mbit"}) leaves out no training run',
    );
  });

  it("gives ids that are unique and the same on every planning", () => {
    const first = planCampaign(smoke, "smoke").runs;
    expect(new Set(first.map((run) => run.id)).size).toBe(first.length);
    expect(planCampaign(smoke, "smoke").runs).toEqual(first);
  });
});

describe("validating the campaign section", () => {
  const problems = (text: string) => {
    try {
      file(text, 3);
    } catch (error) {
      return (error as ConfigError).problems.map((p) => `${p.path}: ${p.message}`);
    }
    return [];
  };

  it("refuses a precision target of 0 or above 0.5, maxRepeats below minRepeats, and repeats beside repeatUntil, naming the field", () => {
    const matrix = "  matrix: {nodes: [1, 2], model: tiny, batchSize: 8, bandwidth: 1gbit}\n";
    expect(problems(`${matrix}  repeatUntil: {halfWidth: 0}\n`)).toEqual([
      "campaign.repeatUntil.halfWidth: found 0, expected a number more than 0",
    ]);
    expect(problems(`${matrix}  repeatUntil: {halfWidth: 0.6}\n`)).toEqual([
      "campaign.repeatUntil.halfWidth: found 0.6, expected a number at most 0.5",
    ]);
    expect(problems(`${matrix}  repeatUntil: {halfWidth: 0.03, minRepeats: 4, maxRepeats: 3}\n`)).toEqual([
      "campaign.repeatUntil.maxRepeats: found 3, expected at least minRepeats (4)",
    ]);
    expect(problems(`${matrix}  repeatUntil: {halfWidth: 0.03, minRepeats: 1}\n`)).toEqual([
      "campaign.repeatUntil.minRepeats: found 1, expected a number at least 2",
    ]);
    expect(problems(`${matrix}  repeats: 3\n  repeatUntil: {halfWidth: 0.03}\n`)).toEqual([
      "campaign.repeatUntil: set either repeats (a fixed count) or repeatUntil (repeat until the interval is narrow), not both",
    ]);
    expect(problems(`${matrix}  repeatUntil: {halfWidth: 0.03}\n`)).toEqual([]);
  });

  it("refuses a node count above the testbed's", () => {
    expect(problems("  matrix: {nodes: [1, 4], model: tiny, batchSize: 8, bandwidth: 1gbit}\n")).toEqual([
      "campaign.matrix.nodes: found 4, expected at most testbed.nodes (3); raise testbed.nodes or drop that node count",
    ]);
  });

  it("refuses an unknown model, a bad bandwidth and an unknown knob, naming each", () => {
    expect(problems("  matrix: {nodes: 2, model: vgg16, batchSize: 8, bandwidth: 1gigabit, bucketCapMB: 4}\n")).toEqual(
      [
        expect.stringMatching(/^campaign\.matrix\.model: found "vgg16", expected "tiny", "small", "resnet50"/),
        expect.stringMatching(/^campaign\.matrix\.bandwidth: .*expected a tc rate such as "1gbit"/),
        expect.stringMatching(
          /^campaign\.matrix\.bucketCapMB: unknown key "bucketCapMB" \(did you mean "bucketCapMb"\?\)/,
        ),
      ],
    );
  });

  it("refuses a matrix.exclude entry whose axis the matrix does not vary, whose value it does not have, or that is empty", () => {
    const matrix = (exclude: string) =>
      `  matrix: {nodes: [1, 2], model: tiny, batchSize: 8, bandwidth: 1gbit, reduction: [ring, powersgd], exclude: ${exclude}}\n  train: {bucketCapMb: 4}\n`;
    expect(problems(matrix("[{nodes: 2, reduction: powersgd}]"))).toEqual([]);
    expect(problems(matrix("[{bucketCapMb: 4}, {nodes: 3}, {bandwidth: 10gbit}, {}]"))).toEqual([
      "campaign.matrix.exclude.3: an empty entry would leave out every run: name at least one axis and its value",
    ]);
    expect(problems(matrix("[{bucketCapMb: 4}, {nodes: 3}, {bandwidth: 10gbit}]"))).toEqual([
      "campaign.matrix.exclude.0.bucketCapMb: bucketCapMb is not one of the matrix's axes, so excluding it leaves out nothing; make it an axis or drop it here",
      "campaign.matrix.exclude.1.nodes: found 3, expected one of the matrix's nodes: 1, 2",
      'campaign.matrix.exclude.2.bandwidth: found "10gbit", expected one of the matrix\'s bandwidth: "1gbit"',
    ]);
  });

  it("refuses Horovod on the local testbed, whose CPU image lacks it", () => {
    expect(
      problems("  matrix: {nodes: 2, model: tiny, batchSize: 8, bandwidth: 1gbit, engine: [ddp, horovod]}\n"),
    ).toEqual([
      "campaign: engine horovod needs Horovod, which the local testbed's CPU worker image does not have (use ddp)",
    ]);
  });

  it("refuses a parameter server with Horovod, which always uses its own all-reduce", () => {
    expect(
      problems(
        "  matrix: {nodes: 2, model: tiny, batchSize: 8, bandwidth: 1gbit, reduction: [ring, parameter-server]}\n  train: {engine: horovod}\n",
      ),
    ).toEqual([
      "campaign: engine horovod needs Horovod, which the local testbed's CPU worker image does not have (use ddp)",
      "campaign.train.reduction: reduction parameter-server with engine horovod: Horovod always uses its own all-reduce; the other reductions are DDP communication hooks",
    ]);
  });

  it("refuses amp on the CPU-only local testbed and a knob set twice", () => {
    expect(
      problems(
        "  matrix: {nodes: 2, model: tiny, batchSize: 8, bandwidth: 1gbit, precision: [fp32, amp]}\n  train: {precision: fp32}\n",
      ),
    ).toEqual([
      "campaign.train.precision: precision is also a matrix axis; set it in one place",
      "campaign: precision amp needs a GPU; the local testbed runs on CPU (use fp32)",
    ]);
  });
});

describe("a run's configuration key: what it measures, not how long", () => {
  const keys = (campaign: string, cpusPerNode?: number) =>
    Object.fromEntries(
      planCampaign(file(campaign), "c").runs.map((run) => [
        run.id,
        configurationKey({ ...run, ...(cpusPerNode === undefined ? {} : { cpusPerNode }) }),
      ]),
    );
  const base = keys(`
  matrix: {nodes: [1, 2], model: tiny, batchSize: 32, bandwidth: 1gbit}
  train: {numIters: 3}
  probe: {maxBytes: 1048576}
`);

  it("is the same for other iteration counts, warm-ups and probe iterations, and for a knob set to the worker's default", () => {
    const longer = keys(`
  matrix: {nodes: [1, 2], model: tiny, batchSize: 32, bandwidth: 1gbit}
  train: {numIters: 7, numWarmupBatches: 4, numBatchesPerIter: 2, precision: fp32}
  probe: {maxBytes: 1048576, iters: 50, warmupIters: 9}
`);
    expect(Object.keys(longer)).toEqual(Object.keys(base));
    expect(longer).toEqual(base);
    // Its fingerprint does change: a resumed campaign reruns such runs.
    const fingerprints = (campaign: string) => planCampaign(file(campaign), "c").runs.map((run) => run.fingerprint);
    expect(
      fingerprints("  matrix: {nodes: [1], model: tiny, batchSize: 32, bandwidth: 1gbit}\n  train: {numIters: 7}\n"),
    ).not.toEqual(
      fingerprints("  matrix: {nodes: [1], model: tiny, batchSize: 32, bandwidth: 1gbit}\n  train: {numIters: 3}\n"),
    );
  });

  it("differs with the batch, a knob, the link rate, the CPU quota and the probe's message sizes", () => {
    const values = Object.values(base);
    expect(new Set(values).size).toBe(values.length);
    const changed = (campaign: string, which: (runId: string) => boolean, cpusPerNode?: number) =>
      Object.entries(keys(`  matrix: {nodes: [1, 2], model: tiny, ${campaign}`, cpusPerNode))
        .filter(([runId]) => which(runId))
        .map(([, key]) => key);
    const train = (runId: string) => runId.startsWith("train-");
    const multiNode = (runId: string) => !runId.includes("-n1-");
    const every = () => true;
    for (const [keysOf, count] of [
      [changed("batchSize: 16, bandwidth: 1gbit}\n  probe: {maxBytes: 1048576}\n", train), 2],
      [
        changed("batchSize: 32, bandwidth: 1gbit}\n  train: {optimizer: adamw}\n  probe: {maxBytes: 2097152}\n", every),
        3,
      ],
      [changed("batchSize: 32, bandwidth: 3gbit}\n  probe: {maxBytes: 1048576}\n", multiNode), 2],
      [changed("batchSize: 32, bandwidth: 1gbit}\n  probe: {maxBytes: 1048576}\n", every, 0.5), 3],
    ] as const) {
      expect(keysOf).toHaveLength(count);
      expect(keysOf.filter((key) => values.includes(key))).toEqual([]);
    }
  });
});

describe("resuming", () => {
  const plan = planCampaign(smoke, "smoke");
  const ok = (id: string) =>
    [id, { status: "ok", fingerprint: plan.runs.find((r) => r.id === id)!.fingerprint }] as const;

  it("skips runs that finished and keeps the rest in order", () => {
    const finished = new Map([ok("allreduce-n2-1gbit-r1"), ok("allreduce-n3-1gbit-r1")]);
    expect(remainingRuns(plan, finished).map((run) => run.id)).toEqual(plan.runs.slice(2).map((run) => run.id));
  });

  it("does again a finished run only when asked (--rerun-flagged: redo picks its record), in the plan's order", () => {
    const finished = new Map([ok("allreduce-n2-1gbit-r1"), ok("allreduce-n3-1gbit-r1")]);
    const disturbed = finished.get("allreduce-n2-1gbit-r1")!;
    expect(remainingRuns(plan, finished).map((run) => run.id)).not.toContain("allreduce-n2-1gbit-r1");
    expect(
      remainingRuns(plan, finished, { redo: (record) => record === disturbed })
        .map((run) => run.id)
        .slice(0, 2),
    ).toEqual(["allreduce-n2-1gbit-r1", "train-tiny-b32-n1-r1"]);
  });

  it("reruns failed runs and runs whose parameters changed since", () => {
    const changed = planCampaign(
      file(`
  matrix: {nodes: [1, 2, 3], model: tiny, batchSize: 32, bandwidth: [1gbit, 10gbit]}
  train: {numIters: 4}
  probe: {maxBytes: 1048576}
`),
      "smoke",
    );
    const finished = new Map<string, { status: string; fingerprint: string }>([
      ok("train-tiny-b32-n1-r1"),
      ["allreduce-n2-1gbit-r1", { status: "failed", fingerprint: plan.runs[0]!.fingerprint }],
    ]);
    expect(remainingRuns(plan, finished).map((run) => run.id)).toContain("allreduce-n2-1gbit-r1");
    expect(remainingRuns(changed, finished).map((run) => run.id)).toContain("train-tiny-b32-n1-r1");
  });
});

describe("real data and time to train", () => {
  const timeToTrain = (train: string, extra = "") =>
    file(`
  matrix: {nodes: [1, 2], model: small, batchSize: 16, bandwidth: 1gbit}
  dataset: {name: shapes, classes: 4}
  train: {${train}}
${extra}`);

  it("points the worker at the dataset by name, and carries the dataset for the campaign to write", () => {
    const plan = planCampaign(timeToTrain("data: dataset, epochs: 3, checkpointEvery: 5, maxRestarts: 1"), "c");
    expect(plan.runs.find((run) => run.job === "train")!.workerArgs).toEqual([
      "--model",
      "small",
      "--batch-size",
      "16",
      "--data",
      "dataset:shapes",
      "--epochs",
      "3",
      "--checkpoint-every",
      "5",
      "--max-restarts",
      "1",
      "--timeout-seconds",
      "120",
    ]);
    expect(plan.dataset).toMatchObject({
      name: "shapes",
      classes: 4,
      imagesPerClass: 100,
      imageSize: 32,
      heldOut: 0.2,
      seed: 0,
      generate: true,
    });
  });

  it("estimates time to train from the epochs over the dataset, not from the benchmark's iterations", () => {
    const seconds = (epochs: number, imagesPerClass: number) => {
      const parsed = file(`
  matrix: {nodes: [1], model: small, batchSize: 16, bandwidth: 1gbit}
  dataset: {name: shapes, classes: 4, imagesPerClass: ${imagesPerClass}}
  train: {data: dataset, epochs: ${epochs}}
`);
      return estimateRunSeconds(planCampaign(parsed, "c").runs[0]!, parsed, { localCores: 2 });
    };
    const perEpoch = seconds(2, 100) - seconds(1, 100);
    expect(perEpoch).toBeGreaterThan(0);
    expect(seconds(3, 100) - seconds(2, 100)).toBeCloseTo(perEpoch, 6);
    expect(seconds(1, 200) - seconds(1, 100)).toBeCloseTo(perEpoch, 1); // twice the images: twice the steps (20 -> 40)
  });

  it("compares synthetic with real data as a matrix axis, and needs no dataset without it", () => {
    const plan = planCampaign(
      file(`
  matrix: {nodes: [1], model: tiny, batchSize: 16, bandwidth: 1gbit, data: [synthetic, dataset]}
  dataset: {name: shapes}
`),
      "c",
    );
    expect(plan.runs.map((run) => run.id)).toEqual([
      "train-tiny-b16-n1-data-synthetic-r1",
      "train-tiny-b16-n1-data-dataset-r1",
    ]);
    expect(plan.runs.map((run) => run.workerArgs.slice(4, 6))).toEqual([
      ["--data", "synthetic"],
      ["--data", "dataset:shapes"],
    ]);
    expect(planCampaign(smoke, "c").dataset).toBeUndefined();
  });

  it.each([
    ["data: dataset", "", "", "campaign.dataset: data: dataset needs a campaign.dataset section"],
    ["epochs: 2", "", "  dataset: {name: shapes}", "campaign.train.epochs: epochs trains over the dataset"],
    [
      "data: dataset, checkpointEvery: 5",
      "",
      "  dataset: {name: shapes}",
      "campaign.train.checkpointEvery: checkpointEvery needs epochs (time to train)",
    ],
    [
      "data: dataset, epochs: 1, failAtStep: 3, failRank: 1",
      "",
      "  dataset: {name: shapes}",
      "campaign.train.failRank: found 1, but the smallest run has 1 rank (0 to 0)",
    ],
    ["data: dataset", "", "  dataset: {name: ../../etc}", "campaign.dataset.name: "],
    [
      "data: dataset, epochs: 1, failAtStep: 3",
      "",
      "  dataset: {name: shapes}",
      "campaign.train.failAtStep: a killed rank recovers only with checkpointEvery and maxRestarts",
    ],
    [
      "data: dataset, epochs: 1, failAtStep: 3, checkpointEvery: 2, maxRestarts: 0",
      "",
      "  dataset: {name: shapes}",
      "campaign.train.failAtStep: a killed rank recovers only",
    ],
    [
      "data: dataset, epochs: 1, engine: horovod",
      "",
      "  dataset: {name: shapes}",
      "campaign.train.epochs: epochs 1 with engine horovod: time to train runs with engine ddp only",
    ],
    ["data: dataset", "", "  dataset: {name: shapes, heldOut: 0}", "campaign.dataset.heldOut: "],
    [
      "data: dataset",
      "",
      "  dataset: {name: shapes, imagesPerClass: 2}",
      "campaign.dataset.heldOut: holds out no image per class",
    ],
  ])("refuses %s %s%s", (train, _unused, extra, message) => {
    const text = `testbed: {target: local, name: t, nodes: 2}\ncampaign:\n  matrix: {nodes: [1, 2], model: small, batchSize: 16, bandwidth: 1gbit}\n  train: {${train}}\n${extra}\n`;
    expect(() => parseCampaign(text, "c.yaml")).toThrow(ConfigError);
    expect(() => parseCampaign(text, "c.yaml")).toThrow(message);
  });

  const LOSS = "data: dataset, epochs: 2, checkpointEvery: 2, maxRestarts: 1, failAtStep: 3";
  const nodeLossCampaign = (train: string, nodes: string, launcher = "ansible") =>
    `testbed: {target: local, name: t, nodes: 3}\ncampaign:\n  matrix: {nodes: ${nodes}, model: small, batchSize: 16, bandwidth: 1gbit}\n  train: {${train}}\n  dataset: {name: shapes}\n  launcher: ${launcher}\n`;

  it.each([
    [
      `${LOSS}, failNode: 1`,
      "[2, 3]",
      "campaign.train.minNodes: a lost node does not come back: set minNodes below the smallest run's 2 nodes",
    ],
    [`${LOSS}, failNode: 1, minNodes: 2`, "[2, 3]", "campaign.train.minNodes: a lost node does not come back"],
    [
      `${LOSS}, failNode: 2, minNodes: 1`,
      "[2, 3]",
      "campaign.train.failNode: found 2, but the smallest run has 2 nodes (0 to 1; node 0 holds the rendezvous",
    ],
    [`${LOSS}, failNode: 0, minNodes: 1`, "[2, 3]", "campaign.train.failNode: "],
    [
      `${LOSS}, failNode: 1, failRank: 1, minNodes: 1`,
      "[2, 3]",
      "campaign.train.failNode: failNode and failRank exclude each other: set one",
    ],
    [`${LOSS}, minNodes: 3`, "[2, 3]", "campaign.train.minNodes: found 3, but the smallest run has 2 nodes"],
    ["data: dataset, minNodes: 1", "[2, 3]", "campaign.train.minNodes: minNodes needs epochs (time to train)"],
    [
      "data: dataset, epochs: 2, minNodes: 1",
      "[2, 3]",
      "campaign.train.minNodes: the nodes left after a loss go on only by restarting from a checkpoint",
    ],
    [
      "data: dataset, epochs: 2, checkpointEvery: 2, maxRestarts: 1, failNode: 1, minNodes: 1",
      "[2, 3]",
      "campaign.train.failNode: failNode needs failAtStep",
    ],
    ["failRank: 1", "[2, 3]", "campaign.train.failRank: failRank needs failAtStep"],
  ])("refuses a node loss that cannot go on: %s on nodes %s", (train, nodes, message) => {
    expect(() => parseCampaign(nodeLossCampaign(train, nodes), "c.yaml")).toThrow(message);
  });

  it("refuses node loss under the slurm and mpi launchers, and plans it as worker arguments under ansible", () => {
    expect(() => parseCampaign(nodeLossCampaign(`${LOSS}, failNode: 2, minNodes: 2`, "3", "slurm"), "c.yaml")).toThrow(
      "node loss runs with launcher ansible only",
    );
    expect(() => parseCampaign(nodeLossCampaign(`${LOSS}, failNode: 2, minNodes: 2`, "3", "mpi"), "c.yaml")).toThrow(
      "node loss runs with launcher ansible only (mpirun ends every node's process when one exits with an error)",
    );
    const plan = planCampaign(parseCampaign(nodeLossCampaign(`${LOSS}, failNode: 2, minNodes: 2`, "3"), "c.yaml"), "c");
    const args = plan.runs.find((run) => run.job === "train")!.workerArgs;
    expect(args.slice(args.indexOf("--fail-node"), args.indexOf("--fail-node") + 2)).toEqual(["--fail-node", "2"]);
    expect(args.slice(args.indexOf("--min-nodes"), args.indexOf("--min-nodes") + 2)).toEqual(["--min-nodes", "2"]);
  });
});
