/**
 * `ringlab calibrate` and `ringlab plan --calibration` as a user runs them: the real CLI on results written to disk.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { planCampaign } from "../../../src/campaign/plan.ts";
import { loadCampaignFile } from "../../../src/config/load.ts";
import { parseCalibration } from "../../../src/predict/calibration.ts";
import { isPrediction, predictRun } from "../../../src/predict/predict.ts";
import { recordFileName } from "../../../src/results/paths.ts";
import { trainRecord, probeRecord } from "../../report/fixtures/records.ts";

const BIN = resolve("src/bin/ringlab.mjs");

/**
 * A results folder as a campaign leaves it: the smoke's configuration measured at 0.5 cores per worker, in 10 ms CPU
 * periods (`period: null`: none recorded, as before 2026-11-26, in Docker's 100 ms).
 */
function resultsOf(dir: string, { name = "earlier", period = 10 as number | null, torch = "2.13.0+cpu" } = {}): string {
  const results = join(dir, "results", name);
  mkdirSync(join(results, "runs"), { recursive: true });
  const atQuota = <T extends { params: object }>(record: T): T => ({
    ...record,
    params: { ...record.params, cpusPerNode: 0.5, ...(period === null ? {} : { cpuPeriodMs: period }) },
  });
  const records = [
    trainRecord({ model: "small", batchSize: 32, nodes: 1, repeat: 1, throughput: 100 }),
    trainRecord({ model: "small", batchSize: 32, nodes: 1, repeat: 2, throughput: 104 }),
    probeRecord({
      nodes: 2,
      bandwidth: "1gbit",
      busbw: [
        [1048576, 0.9],
        [16777216, 0.95],
      ],
    }),
  ]
    .map(atQuota)
    .map((record) => ({
      ...record,
      result: { ...record.result!, provenance: { ...record.result!.provenance, torch } },
    }));
  for (const record of records)
    writeFileSync(join(results, "runs", recordFileName(record.runId, 1)), JSON.stringify(record));
  return results;
}

function cli(state: string, args: string[]) {
  // A curve over 1024 node counts names its sources at every point: more than spawnSync's 1 MiB.
  return spawnSync(process.execPath, [BIN, "--state-dir", state, ...args], {
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
  });
}

describe("ringlab calibrate, then plan", () => {
  it("keeps what a campaign measured in the state folder, and plan predicts every training run it can from it, naming its sources", () => {
    const dir = mkdtempSync(join(tmpdir(), "ringlab-calibrate-"));
    const state = join(dir, "state");
    const made = cli(state, ["calibrate", resultsOf(dir)]);
    expect(made.status, made.stderr).toBe(0);
    expect(made.stdout).toMatch(
      /^compute small batch 32 fp32 at 0.5 cores: t_c 0.314 ± [\d.]+ s \(measured in .*results\/earlier on 2025-05-01\)$/m,
    );
    expect(made.stdout).toMatch(/^link 1gbit, 2 nodes × 1, ring: α [\d.]+ ms, β as [\d.]+ Gbit\/s/m);
    expect(JSON.parse(readFileSync(join(state, "calibration.json"), "utf8")).schema).toBe("ringlab.calibration/v3");

    // The smoke campaign at 0.5 cores: 1gbit probed for 2 nodes (3 derived from it); 3gbit never, and faster than any
    // probe.
    const plan = cli(state, ["plan", "campaigns/local-smoke.yaml", "--format", "json"]);
    expect(plan.status, plan.stderr).toBe(0);
    const json = JSON.parse(plan.stdout) as {
      predictions: {
        runId: string;
        scalingEfficiency?: { value: number };
        sources?: { link: string };
        missing?: string;
      }[];
    };
    const byRun = new Map(json.predictions.map((prediction) => [prediction.runId, prediction]));
    // The efficiency the calibration in the state folder gives at 0.5 cores, as predict.ts has it: t_c 0.314 s over a
    // step that adds the 2-node ring's all-reduce of the gradient at the probe's α and β (no shaped run measured φ).
    const saved = parseCalibration(JSON.parse(readFileSync(join(state, "calibration.json"), "utf8")));
    if ("problem" in saved) throw new Error(saved.problem);
    const smoke = planCampaign(loadCampaignFile("campaigns/local-smoke.yaml", { readKeys: false }), "local-smoke");
    const expected = predictRun(smoke.runs.find((run) => run.id === "train-small-b32-n2-1gbit-r1")!, {
      calibration: saved.calibration,
      cpusPerNode: 0.5,
    });
    if (!isPrediction(expected)) throw new Error("the calibration predicts the run");
    expect(byRun.get("train-small-b32-n2-1gbit-r1")!.scalingEfficiency!.value).toBeCloseTo(
      expected.scalingEfficiency.value,
      12,
    );
    expect(expected.scalingEfficiency.value).toBeCloseTo(0.314 / expected.stepSeconds, 2);
    expect(byRun.get("train-small-b32-n3-1gbit-r1")!.sources!.link).toMatch(
      /^derived: α and β of the 2-node probe at 1gbit/,
    );
    expect(byRun.get("train-small-b32-n2-3gbit-r1")!.missing).toMatch(/^no probe of the link 3gbit/);
    const text = cli(state, ["plan", "campaigns/local-smoke.yaml"]);
    expect(text.stdout).toMatch(
      /^predicted from .*calibration.json \(φ: the share of the all-reduce hidden behind compute/m,
    );
    expect(text.stdout).toMatch(/^train-small-b32-n2-3gbit-r1: no prediction: no probe of the link 3gbit/m);
    // The calibration measured the smoke's single-node runs (timed for other iteration counts): seen, replayed.
    expect(text.stdout).toMatch(
      /^The calibration has seen 2 of these 4 training runs' configurations, 0 partly \(2 of them replayed: .*\); 2 unseen/m,
    );
    // The duration takes the predicted steps where there are some (the 3gbit runs have none), and says so.
    const { estimate } = JSON.parse(plan.stdout) as { estimate: { predictedSteps: { runs: number; of: number } } };
    const predicted = json.predictions.filter((prediction) => prediction.missing === undefined).length;
    expect(estimate.predictedSteps).toEqual({ runs: predicted, of: json.predictions.length });
    expect(predicted).toBeGreaterThan(0);
    expect(predicted).toBeLessThan(json.predictions.length);
    expect(text.stdout).toMatch(
      new RegExp(
        `^estimated duration: .* \\(the steps of ${predicted} of ${json.predictions.length} training runs as the calibration predicts them; the rest rough`,
        "m",
      ),
    );
    // A slower rate than the probe's is derived from it, said so.
    const slower = join(dir, "slower.yaml");
    writeFileSync(
      slower,
      readFileSync("campaigns/local-smoke.yaml", "utf8").replace(
        "bandwidth: [1gbit, 3gbit]",
        "bandwidth: [1gbit, 500mbit]",
      ),
    );
    expect(cli(state, ["plan", slower]).stdout).toMatch(
      /^\[\d+\] derived: α and β of the 2-node probe at 1gbit \(measured in .*\), β scaled by 1gbit\/500mbit for 2 nodes at 500mbit/m,
    );
  });

  it("refuses a calibration that is not one, or a results folder without records, before anything (exit 2)", () => {
    const dir = mkdtempSync(join(tmpdir(), "ringlab-calibrate-"));
    const corrupt = join(dir, "calibration.json");
    writeFileSync(corrupt, '{"schema": "ringlab.calibration/v3", "compute": 3}');
    const plan = cli(join(dir, "state"), ["plan", "campaigns/local-smoke.yaml", "--calibration", corrupt]);
    expect(plan.status).toBe(2);
    expect(plan.stderr).toContain(`calibration ${corrupt}: not a ringlab.calibration/v3 file at compute:`);
    expect(plan.stderr).toContain("make one with `ringlab calibrate <results dir>...`");
    mkdirSync(join(dir, "empty"));
    const empty = cli(join(dir, "state"), ["calibrate", join(dir, "empty")]);
    expect(empty.status).toBe(2);
    expect(empty.stderr).toMatch(/no run records in .*empty\/runs: results directory .* calibrates nothing/);
    expect(cli(join(dir, "state"), ["plan", "campaigns/local-smoke.yaml", "--format", "yaml"]).stderr).toMatch(
      /--format "yaml": expected text or json/,
    );
  });

  it("leaves out runs measured in Docker's 100 ms CPU periods, and replaces a calibration of the version made from such runs, saying so", () => {
    const dir = mkdtempSync(join(tmpdir(), "ringlab-calibrate-"));
    const state = join(dir, "state");
    // A v1 calibration in the state folder (it may hold such runs): plan refuses it, calibrate replaces it.
    mkdirSync(state, { recursive: true });
    writeFileSync(
      join(state, "calibration.json"),
      JSON.stringify({ schema: "ringlab.calibration/v1", compute: [], links: [], overlap: [] }),
    );
    const refused = cli(state, ["plan", "campaigns/local-smoke.yaml"]);
    expect([refused.status, refused.stderr]).toEqual([
      2,
      expect.stringContaining(
        "it is a ringlab.calibration/v1 file; this ringlab reads ringlab.calibration/v3: make it again",
      ),
    ]);
    const made = cli(state, ["calibrate", resultsOf(dir, { name: "old", period: null }), resultsOf(dir)]);
    expect(made.status, made.stderr).toBe(0);
    expect(made.stderr).toMatch(
      /calibration\.json is a ringlab\.calibration\/v1 file; this ringlab reads ringlab\.calibration\/v3: replaced/,
    );
    expect(made.stderr).toMatch(/results\/old: 3 of 3 runs left out: they ran under Docker's 100 ms CPU period/);
    // What stays is the other folder's, and only its.
    const calibration = JSON.parse(readFileSync(join(state, "calibration.json"), "utf8")) as {
      schema: string;
      compute: { source: { resultsDir: string } }[];
    };
    expect(calibration.schema).toBe("ringlab.calibration/v3");
    expect(calibration.compute.map((entry) => entry.source.resultsDir)).toEqual([
      expect.stringMatching(/results\/earlier$/),
    ]);
  });

  it("leaves out runs whose worker ran a torch older than 2.10 (Debian's 1.13 before 2026-11-27), saying so", () => {
    const dir = mkdtempSync(join(tmpdir(), "ringlab-calibrate-"));
    const state = join(dir, "state");
    const made = cli(state, ["calibrate", resultsOf(dir, { name: "torch113", torch: "1.13.1" }), resultsOf(dir)]);
    expect(made.status, made.stderr).toBe(0);
    expect(made.stderr).toMatch(/results\/torch113: 3 of 3 runs left out: their worker ran torch older than 2\.10/);
    const calibration = JSON.parse(readFileSync(join(state, "calibration.json"), "utf8")) as {
      compute: { source: { resultsDir: string } }[];
    };
    expect(calibration.compute.map((entry) => entry.source.resultsDir)).toEqual([
      expect.stringMatching(/results\/earlier$/),
    ]);
  });

  it("prints other people's text with its control characters escaped: a calibration's resultsDir, a record's device", () => {
    const dir = mkdtempSync(join(tmpdir(), "ringlab-calibrate-"));
    const state = join(dir, "state");
    expect(cli(state, ["calibrate", resultsOf(dir)]).status).toBe(0);
    // Someone else's calibration: a resultsDir that would retitle the terminal, write the clipboard (OSC 52) and
    // erase the screen.
    const file = join(state, "calibration.json");
    const hostile = "/r\u001b]0;owned\u0007\u001b]52;c;ZXZpbA==\u0007\u001b[2J\r";
    const calibration = JSON.parse(readFileSync(file, "utf8")) as {
      compute: { source: { resultsDir: string }; deviceModel: string }[];
    };
    for (const entry of calibration.compute) {
      entry.source.resultsDir = hostile;
      entry.deviceModel = `cpu\u009b2J`;
    }
    writeFileSync(file, JSON.stringify(calibration));
    for (const args of [
      ["plan", "campaigns/local-smoke.yaml"],
      ["predict", "--model", "small", "--batch", "32", "--bandwidth", "1gbit", "--nodes", "2"],
    ]) {
      const shown = cli(state, args);
      expect(shown.status, shown.stderr).toBe(0);
      // biome-ignore lint/suspicious/noControlCharactersInRegex: no control character reaches the terminal
      expect(shown.stdout + shown.stderr).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/);
      expect(shown.stdout).toContain("/r\\u001b]0;owned\\u0007\\u001b]52;c;ZXZpbA==\\u0007\\u001b[2J\\u000d");
    }
  });

  it("predicts a configuration over node counts nobody runs, says where communication overtakes compute, and refuses what it cannot know", () => {
    const dir = mkdtempSync(join(tmpdir(), "ringlab-predict-"));
    const state = join(dir, "state");
    expect(cli(state, ["predict", "--model", "small", "--batch", "32", "--bandwidth", "1gbit"]).stderr).toMatch(
      /no calibration at .*calibration.json: predict needs what earlier campaigns measured/,
    );
    expect(cli(state, ["calibrate", resultsOf(dir)]).status).toBe(0);
    const started = Date.now();
    const curve = cli(state, [
      "predict",
      "--model",
      "small",
      "--batch",
      "32",
      "--bandwidth",
      "1gbit",
      "--nodes",
      "1..1024",
      "--format",
      "json",
    ]);
    expect(curve.status, curve.stderr).toBe(0);
    const json = JSON.parse(curve.stdout) as {
      cpusPerNode: number;
      points: {
        throughput: number;
        computeSeconds: number;
        allReduceSeconds: number;
        scalingEfficiency: { value: number };
      }[];
      communicationOvertakesComputeAtNodes: number | null;
    };
    expect(json.cpusPerNode).toBe(0.5);
    expect(json.points).toHaveLength(1024);
    // More nodes, more throughput and less efficiency; the ring's all-reduce time grows towards 2·S·β.
    expect(json.points[1023]!.throughput).toBeGreaterThan(json.points[1]!.throughput);
    expect(json.points[1023]!.scalingEfficiency.value).toBeLessThan(json.points[1]!.scalingEfficiency.value);
    const overtakes = json.communicationOvertakesComputeAtNodes;
    const first = json.points.findIndex((point) => point.allReduceSeconds > point.computeSeconds);
    expect(overtakes).toBe(first === -1 ? null : first + 1);
    console.info(`ringlab predict over 1..1024 nodes: ${Date.now() - started} ms, CLI start included`);
    const text = cli(state, [
      "predict",
      "--model",
      "small",
      "--batch",
      "32",
      "--bandwidth",
      "1gbit",
      "--nodes",
      "1,2,4",
    ]);
    expect(text.stdout).toMatch(
      /^nodes +workers +t_c \(s\) +t_ar \(s\) +step \(s\) +img\/s +efficiency +φ +no overlap +full overlap$/m,
    );
    expect(text.stdout).toMatch(/^4 +4 +0\.3\d{3} /m);
    expect(text.stdout).toMatch(
      /^source: derived: α and β of the 2-node probe at 1gbit \(measured in .*\) for the other node counts$/m,
    );
    // Bad input, each exit 2 naming it: an unknown model, node counts out of range, a link nobody probed.
    expect(cli(state, ["predict", "--model", "vgg", "--batch", "32", "--bandwidth", "1gbit"]).stderr).toMatch(
      /--model <model>' argument 'vgg' is invalid/,
    );
    const tooMany = cli(state, [
      "predict",
      "--model",
      "small",
      "--batch",
      "32",
      "--bandwidth",
      "1gbit",
      "--nodes",
      "1..2000",
    ]);
    expect([tooMany.status, tooMany.stderr]).toEqual([
      2,
      expect.stringMatching(/expected node counts such as 1..64 or 1,2,4,8, each from 1 to 1024/),
    ]);
    const unprobed = cli(state, ["predict", "--model", "small", "--batch", "32", "--bandwidth", "unlimited"]);
    expect([unprobed.status, unprobed.stderr]).toEqual([
      2,
      expect.stringMatching(/cannot predict: no probe of the link unlimited/),
    ]);
  });

  it("predicts an AWS instance type without a calibration from published figures and the catalogue, each said so, and plan predicts the AWS seed the same way", () => {
    const state = join(mkdtempSync(join(tmpdir(), "ringlab-predict-aws-")), "state");
    const curve = cli(state, [
      "predict",
      "--model",
      "resnet50",
      "--batch",
      "64",
      "--precision",
      "amp",
      "--bandwidth",
      "25gbit",
      "--instance-type",
      "p4d.24xlarge",
      "--nodes",
      "1,8,64",
    ]);
    expect(curve.status, curve.stderr).toBe(0);
    expect(curve.stdout).toMatch(
      /^resnet50 at batch 64 per worker, amp, 25gbit, ring, 1 process per node on p4d\.24xlarge; from published figures and the instance catalogue \(no calibration\)/,
    );
    expect(curve.stdout).toMatch(/^source: published: NVIDIA A100, resnet50 amp: 2470 img\/s at batch 256 /m);
    expect(curve.stdout).toMatch(
      /^source: catalogue: p4d\.24xlarge sustains 400 Gbit\/s .*assumed: the all-reduce reaches the full 25 Gbit\/s and α = 0/m,
    );
    // ResNet-101: the A100's ResNet-50 figures scaled by ringlab's own measured ratio, said so. Nothing published or
    // measured for ResNet-152, nor for the instance type "x;y": exit 2, naming what is missing.
    const scaled = cli(state, [
      "predict",
      "--model",
      "resnet101",
      "--batch",
      "64",
      "--bandwidth",
      "25gbit",
      "--instance-type",
      "p4d.24xlarge",
    ]);
    expect(scaled.status, scaled.stderr).toBe(0);
    expect(scaled.stdout).toMatch(
      /^source: scaled: NVIDIA A100's published resnet50 fp32 figures, 938 img\/s .* times 0\.654, resnet101's throughput over resnet50's \(1399\.1 \/ 2139\.7 img\/s at batch 256 on an NVIDIA H200/m,
    );
    const unpublished = cli(state, [
      "predict",
      "--model",
      "resnet152",
      "--batch",
      "64",
      "--bandwidth",
      "25gbit",
      "--instance-type",
      "p4d.24xlarge",
    ]);
    expect([unpublished.status, unpublished.stderr]).toEqual([
      2,
      expect.stringMatching(
        /cannot predict: no measured or published compute for resnet152 at batch 64 \(fp32 on an NVIDIA A100\)/,
      ),
    ]);
    const unknown = cli(state, [
      "predict",
      "--model",
      "resnet50",
      "--batch",
      "64",
      "--bandwidth",
      "25gbit",
      "--instance-type",
      "x;y",
    ]);
    expect([unknown.status, unknown.stderr]).toEqual([
      2,
      expect.stringMatching(/"x;y" is not a GPU instance type ringlab's catalogue knows/),
    ]);

    // Eight processes on a p4d's 8 GPUs: the nodes are drawn, one node's processes (no figure inside a node) said
    // missing.
    const eight = cli(state, [
      "predict",
      "--model",
      "resnet50",
      "--batch",
      "64",
      "--bandwidth",
      "25gbit",
      "--instance-type",
      "p4d.24xlarge",
      "--nodes",
      "1,2,4",
      "--processes-per-node",
      "8",
    ]);
    expect(eight.status, eight.stderr).toBe(0);
    expect(eight.stdout).toMatch(/^4 +32 /m);
    expect(eight.stdout).toMatch(/^1 node: no prediction: no probe of the link in one node/m);
    // Hierarchical: the network between nodes from the catalogue, the link inside a node as stated; faster than the
    // flat ring.
    const flat = cli(state, [
      "predict",
      "--model",
      "resnet50",
      "--batch",
      "64",
      "--bandwidth",
      "25gbit",
      "--instance-type",
      "p4d.24xlarge",
      "--nodes",
      "2,64",
      "--processes-per-node",
      "8",
      "--format",
      "json",
    ]);
    const twoLevel = cli(state, [
      "predict",
      "--model",
      "resnet50",
      "--batch",
      "64",
      "--bandwidth",
      "25gbit",
      "--instance-type",
      "p4d.24xlarge",
      "--nodes",
      "2,64",
      "--processes-per-node",
      "8",
      "--hierarchical",
      "--intra-node-bandwidth",
      "2400gbit",
      "--format",
      "json",
    ]);
    expect(twoLevel.status, twoLevel.stderr).toBe(0);
    type Curve = { points: { allReduceSeconds: number; sources: { link: string } }[] };
    const [flatCurve, twoLevelCurve] = [flat, twoLevel].map((result) => JSON.parse(result.stdout) as Curve);
    expect(twoLevelCurve!.points[1]!.allReduceSeconds).toBeLessThan(flatCurve!.points[1]!.allReduceSeconds);
    expect(twoLevelCurve!.points[1]!.sources.link).toMatch(
      /^between nodes: catalogue: p4d\.24xlarge sustains 400 Gbit\/s .*; inside a node: stated \(--intra-node-bandwidth 2400gbit\); assumed: α = 0$/,
    );
    const unstated = cli(state, [
      "predict",
      "--model",
      "resnet50",
      "--batch",
      "64",
      "--bandwidth",
      "25gbit",
      "--instance-type",
      "p4d.24xlarge",
      "--nodes",
      "2",
      "--processes-per-node",
      "8",
      "--hierarchical",
    ]);
    expect([unstated.status, unstated.stderr]).toEqual([
      2,
      expect.stringMatching(
        /no figure for the link between 8 processes inside a node: probe it .* or state its rate with --intra-node-bandwidth/,
      ),
    ]);
    const onePerNode = cli(state, [
      "predict",
      "--model",
      "resnet50",
      "--batch",
      "64",
      "--bandwidth",
      "25gbit",
      "--instance-type",
      "p4d.24xlarge",
      "--hierarchical",
    ]);
    expect([onePerNode.status, onePerNode.stderr]).toEqual([
      2,
      expect.stringMatching(
        /--hierarchical: a two-level ring needs several processes per node \(--processes-per-node 1\)/,
      ),
    ]);
    const tooMany = cli(state, [
      "predict",
      "--model",
      "resnet50",
      "--batch",
      "64",
      "--bandwidth",
      "25gbit",
      "--instance-type",
      "p3.2xlarge",
      "--processes-per-node",
      "8",
    ]);
    expect([tooMany.status, tooMany.stderr]).toEqual([
      2,
      expect.stringMatching(/--processes-per-node 8: p3\.2xlarge has 1 GPU, one process each/),
    ]);

    const plan = cli(state, ["plan", resolve("campaigns/aws-seed.yaml"), "--format", "json"]);
    expect(plan.status, plan.stderr).toBe(0);
    const json = JSON.parse(plan.stdout) as {
      runs: { job: string }[];
      predictions: { runId: string; sources?: { compute: string; link: string }; missing?: string }[];
      predictedFrom: string;
    };
    expect(json.predictedFrom).toBe("published figures and the instance catalogue (no calibration)");
    // Every training run predicted, every input naming its source: the seed's T4 has no published figure, so assumed.
    expect(json.predictions).toHaveLength(json.runs.filter((run) => run.job === "train").length);
    for (const prediction of json.predictions) {
      expect(prediction.sources!.compute).toMatch(
        /^assumed: ringlab's planning figure of \d+ img\/s for (resnet101|inception_v3) on a T4/,
      );
      expect(prediction.sources!.link).toMatch(/^(no link \(one node\)|catalogue: g4dn\.4xlarge sustains 20 Gbit\/s)/);
    }
  });

  it("says which layout each compute entry measured, which collective each link timed, and every memory fit (a sharded campaign's records)", () => {
    const dir = mkdtempSync(join(tmpdir(), "ringlab-calibrate-"));
    const results = join(dir, "results", "sharded");
    mkdirSync(join(results, "runs"), { recursive: true });
    for (const line of readFileSync("test/bench/data/sharded/runs.jsonl", "utf8").trim().split("\n")) {
      const record = JSON.parse(line) as { runId: string };
      writeFileSync(join(results, "runs", recordFileName(record.runId, 1)), line);
    }
    const made = cli(join(dir, "state"), ["calibrate", results]);
    expect(made.status, made.stderr).toBe(0);
    const lines = made.stdout.trim().split("\n");
    // Three compute entries of one model and batch, each with the workload it measured (the layout among its knobs), no
    // two lines alike.
    const compute = lines.filter((line) => line.startsWith("compute gpt-mini batch 4 fp32 "));
    expect(compute.map((line) => line.match(/ parallelism=\S+( fsdpSharding=\S+)?/)?.[0].trim()).sort()).toEqual([
      "parallelism=ddp",
      "parallelism=fsdp fsdpSharding=full",
      "parallelism=fsdp fsdpSharding=grad-op",
    ]);
    expect(compute[0]).toMatch(
      /^compute gpt-mini batch 4 fp32 sequenceLength=64 layers=4 width=512 heads=8 optimizer=adamw .* at 0.5 cores: t_c /,
    );
    expect(new Set(lines).size).toBe(lines.length);
    expect(
      lines
        .filter((line) => line.startsWith("link 1gbit, 3 nodes × 1, ring"))
        .map((line) => line.replace(/: α .*/, "")),
    ).toEqual([
      "link 1gbit, 3 nodes × 1, ring",
      "link 1gbit, 3 nodes × 1, ring, all-gather",
      "link 1gbit, 3 nodes × 1, ring, reduce-scatter",
    ]);
    expect(lines.filter((line) => line.startsWith("memory cpu"))).toEqual(
      expect.arrayContaining([
        expect.stringMatching(
          /^memory cpu at 0.5 cores: measured: \d+ single-node runs in .*sharded \(\d+ MiB \+ [\d.]+ × the model's bytes, worst fit [\d.]+ %\)$/,
        ),
      ]),
    );
    expect(made.stderr).toMatch(/\d+ memory fits/);
  });
});
