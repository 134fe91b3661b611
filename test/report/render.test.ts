import { beforeAll, describe, expect, it } from "vitest";
import { renderCharts, type ChartSvgs } from "../../src/report/charts.ts";
import { reportData, reportMeta, type ReportData, type ReportMeta } from "../../src/analysis/data.ts";
import { reportFlags, type Flag } from "../../src/report/suspect-figures.ts";
import { renderHtml, renderMarkdown } from "../../src/report/render.ts";
import { failedTrainRecord, probeRecord, scalingCampaign, trainRecord } from "./fixtures/records.ts";

const records = scalingCampaign();
const data: ReportData = reportData(records);
const meta: ReportMeta = reportMeta(records, new Date("2025-05-03T12:00:00Z"));
const flags: readonly Flag[] = reportFlags(data, records);

/** The table row whose first cells are these, as the page shows it. */
function rowStartingWith(html: string, ...cells: string[]): string {
  const start = `<tr>${cells.map((cell) => `<td>${cell}</td>`).join("")}`;
  const row = html.split("\n").find((line) => line.startsWith(start));
  if (row === undefined) throw new Error(`no row starting with ${start}`);
  return row;
}

/** The part of the page from one heading to the next. */
function sectionOf(html: string, heading: string): string {
  const start = html.indexOf(heading);
  if (start < 0) throw new Error(`no heading ${heading}`);
  const end = html.indexOf("<h3>", start + heading.length);
  return html.slice(start, end < 0 ? undefined : end);
}

function cellsOf(row: string): string[] {
  return [...row.matchAll(/<td>(.*?)<\/td>/g)].map((match) => match[1]!);
}

describe("renderHtml", () => {
  let svgs: ChartSvgs;
  let html: string;

  beforeAll(async () => {
    svgs = await renderCharts(data);
    html = renderHtml(data, svgs, meta, flags);
  });

  it("is one self-contained page: charts inline, no scripts, no external assets", () => {
    expect(html.startsWith("<!doctype html>")).toBe(true);
    for (const svg of Object.values(svgs)) expect(html).toContain(svg);
    expect(html).not.toMatch(/<script|<link|<img|\ssrc=|href="http/i);
  });

  it("embeds the throughput chart with its axis title and the Ideal legend entry", () => {
    const figure =
      /<figure><figcaption><b>Training throughput against node count\.<\/b>[^<]*<\/figcaption>(<svg[\s\S]*?<\/svg>)<\/figure>/.exec(
        html,
      );
    expect(figure).not.toBeNull();
    expect(figure![1]).toContain(">Throughput (images/s)</text>");
    expect(figure![1]).toContain(">Ideal</text>");
  });

  it("puts the probe's fitted model next to every training point it can predict, with the error in points", () => {
    const model = html.slice(
      html.indexOf("<h2>Communication model fitted from the probe</h2>"),
      html.indexOf('<section id="failures">'),
    );
    expect(model).toContain("<td>1gbit</td><td>2</td>");
    expect(model).toContain("<td>1.0000</td><td>2</td>");
    const point = data.training[1]!.series[0]!.points[0]!;
    const errorText = `${point.prediction!.errorPoints.noOverlap >= 0 ? "+" : "−"}${Math.abs(point.prediction!.errorPoints.noOverlap).toFixed(1)} pt`;
    expect(model).toContain(`<td>resnet50 · batch 64</td><td>1gbit</td><td>2</td><td>4</td>`);
    expect(model).toContain(`(${errorText})`);
    expect(renderMarkdown(data, meta, flags)).toContain("## Measured against the model fitted from the probe");
  });

  it("names the CPU quota per node in the header", () => {
    expect(renderHtml(data, svgs, { ...meta, cpusPerNode: [0.5], sharedMachine: false }, [])).toContain(
      "Testbed lab (local) · every node's worker limited to 0.5 CPU cores",
    );
  });

  it("heads the page with campaign, testbed, dates and run counts", () => {
    expect(html).toContain("<h1>Campaign scaling-test</h1>");
    expect(html).toContain("Testbed lab (local) · no CPU quota per node");
    expect(html).toContain("Runs 1 May 2025, 10:00 – 10:01 UTC · report generated 3 May 2025, 12:00 UTC");
    expect(html).toContain("14 runs: 13 ok, 1 failed");
  });

  it("puts every training number next to its measurement, as the data computed it", () => {
    const resnet50 = sectionOf(html, "<h3>resnet50 · batch 64</h3>");
    // Link, nodes, workers, throughput ± CI, n, median, CV, ideal, efficiency (and its flags), calibration (n/a: the
    // fixture's records predate it), t_c, t_ar, ceilings, throughput ceiling, peak memory (n/a: none recorded). CV:
    // (150, 160) sample sd √50 over 155; (200, 206, 212) sd 6 over 206; (100, 110) √50 over 105.
    expect(cellsOf(rowStartingWith(resnet50, "1gbit", "2"))).toEqual([
      "1gbit",
      "2",
      "2",
      "155.0 ± 63.5",
      "2",
      "155.0",
      "4.6%",
      "210.0",
      `73.8%<br><span class="flag">⚑ wide interval</span>`,
      "n/a",
      "0.610",
      "0.800",
      "43.2%",
      "76.2%",
      "90.8 – 160.0",
      "n/a",
    ]);
    expect(cellsOf(rowStartingWith(resnet50, "10gbit", "2"))).toEqual([
      "10gbit",
      "2",
      "2",
      "206.0 ± 14.9",
      "3",
      "206.0",
      "2.9%",
      "210.0",
      "98.1%",
      "n/a",
      "0.610",
      "0.0800",
      "88.4%",
      "100.0%",
      "185.6 – 210.0",
      "n/a",
    ]);
    expect(cellsOf(rowStartingWith(resnet50, "none (baseline)", "1")).slice(0, 10)).toEqual([
      "none (baseline)",
      "1",
      "1",
      "105.0 ± 63.5",
      "2",
      "105.0",
      "6.7%",
      "105.0",
      `100.0%<br><span class="flag">⚑ wide interval</span>`,
      "n/a",
    ]);
  });

  it("lists the flags near the top with their reasons, and says so in the run counts", () => {
    expect(html).toContain("14 runs: 13 ok, 1 failed; 2 flagged (see Flags)");
    const section = html.slice(html.indexOf('<section id="flags">'), html.indexOf('<section id="training">'));
    expect(section).toContain("<h2>Flags (2: 2 wide intervals)</h2>");
    expect(section).toContain(
      `<li><span class="flag">⚑ wide interval</span> · <b>resnet50 · batch 64 · 1 node (baseline)</b>: the 95% interval of the mean, 105.0 ± 63.5 img/s over 2 repeats`,
    );
    expect(section).toContain(
      "<code>train-resnet50-b64-n2-1gbit-r1</code>, <code>train-resnet50-b64-n2-1gbit-r2</code>",
    );
    expect(html.indexOf('<section id="flags">')).toBeLessThan(html.indexOf('<section id="training">'));
  });

  it("says there are no flags when there are none, and marks a flagged probe beside its heading", () => {
    const clean = renderHtml(data, svgs, meta, []);
    expect(clean).toContain(`<section id="flags"><h2>Flags</h2><p>None: `);
    expect(clean).not.toContain("flagged (see Flags)");
    expect(clean).not.toContain("⚑ wide interval");
    const probeFlag = {
      kind: "probe-above-link" as const,
      subject: "all-reduce probe · 1gbit · 2 nodes",
      runIds: ["allreduce-n2-1gbit-r2"],
      reason: "r",
    };
    expect(renderHtml(data, svgs, meta, [probeFlag])).toContain(
      `<h3>1gbit, 2 nodes (2 ranks, 2 repeats) <span class="flag">⚑ probe above link</span></h3>`,
    );
  });

  it("explains each flag's rule with its threshold, and the interval as Student's t over repeats", () => {
    const howToRead = html.slice(html.indexOf('<section id="how-to-read">'));
    expect(howToRead).toContain("95 % interval: Student's t over repeats");
    expect(howToRead).toContain("by more than its 95% interval plus 2%");
    expect(howToRead).toContain(
      "more than 3 interquartile ranges outside the quartiles of the other repeats (Tukey's far-out fence), judged from 4 repeats on",
    );
    expect(howToRead).toContain("wider in full than 20% of the mean");
    expect(howToRead).toContain("by more than 10% where one side has no noise estimate");
  });

  it("says n/a where there is no baseline instead of inventing an efficiency", () => {
    const resnet152 = sectionOf(html, "<h3>resnet152 · batch 32</h3>");
    expect(cellsOf(rowStartingWith(resnet152, "1gbit", "2"))).toEqual([
      "1gbit",
      "2",
      "2",
      "40.0 (± 2.0 over iterations)",
      "1",
      "40.0",
      "n/a",
      "n/a",
      "n/a",
      "n/a",
      "n/a",
      "1.92",
      "n/a",
      "n/a",
      "n/a",
      "n/a",
    ]);
    expect(html).not.toMatch(/NaN|Infinity/);
  });

  it("shows the probe per link with its share of the link rate", () => {
    expect(html).toContain("<h3>1gbit, 2 nodes (2 ranks, 2 repeats)</h3>");
    expect(html).toContain("bus bandwidth at the largest size is 92.0% of the link");
    expect(cellsOf(rowStartingWith(html, "64 MiB"))).toEqual(["64 MiB", "0.920 ± 0.254", "0.920", "0.584", "0"]);
  });

  it("says 1 repeat, not 1 repeats, for a probe run once", () => {
    const single = reportData([
      probeRecord({
        nodes: 3,
        bandwidth: "1gbit",
        busbw: [
          [4096, 0.01],
          [67108864, 0.953],
        ],
      }),
    ]);
    expect(renderHtml(single, svgs, meta, [])).toContain("<h3>1gbit, 3 nodes (3 ranks, 1 repeat)</h3>");
  });

  it("lists failed runs with their error, escaped, and logs directory", () => {
    const row = rowStartingWith(html, "<code>train-resnet50-b64-n4-10gbit-r3</code>");
    expect(row).toContain("rendezvous timed out after 120 s &lt;node3&gt;");
    expect(row).toContain("<code>logs/train-resnet50-b64-n4-10gbit-r3</code>");
  });

  it("explains the formulas it uses", () => {
    expect(html).toContain("t<sub>ar</sub> ≥ 2(N-1)/N · S/B");
    expect(html).toContain("busbw = algbw · 2(N-1)/N");
  });

  it("still renders a page when every run failed", () => {
    const allFailed = reportData(records.filter((record) => record.status === "failed"));
    const page = renderHtml(allFailed, {}, meta, []);
    expect(page).toContain("No successful training run.");
    expect(page).toContain("Failed runs (1)");
    expect(page).not.toContain("<svg");
  });
});

describe("renderMarkdown", () => {
  const markdown = renderMarkdown(data, meta, flags);

  it("gives the headline per link at the largest node count", () => {
    expect(markdown).toContain("# ringlab report: scaling-test");
    expect(markdown).toContain("14 runs: 13 ok, 1 failed; 2 flagged (see Flags)");
    // Throughput, n, median, CV ((400, 404): sample sd 2√2 over 402), ideal, efficiency, calibration (none recorded:
    // n/a), ceilings.
    expect(markdown).toContain(
      "| resnet50 · batch 64 (img/s) | 1gbit | 4 | 200.0 (± 8.0 over iterations) | 1 | 200.0 | n/a | 420.0 | 47.6% | n/a | 33.7% – 50.8% |",
    );
    expect(markdown).toContain(
      "| resnet50 · batch 64 (img/s) | 10gbit | 4 | 402.0 ± 25.4 | 2 | 402.0 | 0.7% | 420.0 | 95.7% | n/a | 83.6% – 100.0% |",
    );
    expect(markdown).toContain(
      "| resnet152 · batch 32 (img/s) | 1gbit | 2 | 40.0 (± 2.0 over iterations) | 1 | 40.0 | n/a | n/a | n/a | n/a | n/a |",
    );
  });

  it("gives each configuration's single-node baseline a row, flagged where its interval is wide", () => {
    expect(markdown).toContain(
      "| resnet50 · batch 64 (img/s) | none (baseline) | 1 | 105.0 ± 63.5 | 2 | 105.0 | 6.7% | 105.0 | 100.0% ⚑ wide interval | n/a | n/a |",
    );
  });

  it("lists the flags with their reasons, or says none", () => {
    expect(markdown).toContain(
      "## Flags\n\n- ⚑ wide interval: resnet50 · batch 64 · 1 node (baseline): the 95% interval of the mean, 105.0 ± 63.5 img/s over 2 repeats (Student's t), is 121.0% of the mean wide",
    );
    expect(markdown).toMatch(/## Flags\n\n- .*\n- ⚑ wide interval: resnet50 · batch 64 · 1gbit · 2 nodes: /);
    expect(renderMarkdown(data, meta, [])).toMatch(/## Flags\n\nNone: /);
  });

  it("summarises the probe against the link and lists the failed runs", () => {
    expect(markdown).toContain("| 1gbit | 2 | 64 MiB | 0.920 ± 0.254 | 92.0% |");
    expect(markdown).toContain(
      "- train-resnet50-b64-n4-10gbit-r3 (1 attempt): rendezvous timed out after 120 s &lt;node3&gt; (logs: logs/train-resnet50-b64-n4-10gbit-r3)",
    );
  });

  it("shows a single probe run without an interval it never measured", () => {
    const single = renderMarkdown(
      reportData([
        probeRecord({
          nodes: 3,
          bandwidth: "1gbit",
          busbw: [
            [4096, 0.01],
            [67108864, 0.953],
          ],
        }),
      ]),
      meta,
      [],
    );
    expect(single).toContain("| 1gbit | 3 | 64 MiB | 0.953 | 95.3% |");
  });

  it("warns that local-testbed nodes share one machine's cores", () => {
    expect(markdown).toContain("> The local testbed's nodes are containers sharing one machine's CPU cores");
    expect(renderMarkdown(reportData(records), { ...meta, sharedMachine: false }, [])).not.toContain(
      "sharing one machine's CPU cores",
    );
  });

  it("says so when nothing failed", () => {
    const clean = renderMarkdown(reportData(records.filter((record) => record.status === "ok")), meta, []);
    expect(clean).toMatch(/## Failed runs\n\nNone\.\n$/);
  });
});

describe("the CPU check column", () => {
  // The 1gbit point's nodes computed 20% slower than the baseline's; its efficiency stays the measured 150 / 200 and
  // nothing is flagged. t_c = 64 / 100 = 0.64 s; t_ar = 0.8 s at 1gbit, 0.08 s at 10gbit: ceilings 44.4% – 80.0% and
  // 88.9% – 100.0%.
  const calibrated = [
    trainRecord({ nodes: 1, throughput: 100, computeGflops: [4.0] }),
    // Run means 3.0 and 3.4 (each over its ranks), 3.20 over the runs.
    trainRecord({ nodes: 2, repeat: 1, throughput: 150, computeGflops: [2.9, 3.1] }),
    trainRecord({ nodes: 2, repeat: 2, throughput: 150, computeGflops: [3.3, 3.5] }),
    // Recorded before the calibration.
    trainRecord({ nodes: 2, bandwidth: "10gbit", throughput: 160 }),
  ];
  const calibratedData = reportData(calibrated);
  const calibratedMeta = reportMeta(calibrated, new Date("2025-05-03T12:00:00Z"));
  const calibratedFlags = reportFlags(calibratedData, calibrated);

  it("shows a calibrated point's mean GFLOP/s over its runs and n/a for an uncalibrated one, in both pages, without flag or correction", () => {
    expect(calibratedFlags).toEqual([]);
    const page = renderHtml(calibratedData, {}, calibratedMeta, calibratedFlags);
    expect(page).toContain("<th>Scaling efficiency</th><th>CPU check (GFLOP/s)</th>");
    expect(cellsOf(rowStartingWith(page, "none (baseline)", "1")).slice(8, 10)).toEqual(["100.0%", "4.00"]);
    expect(cellsOf(rowStartingWith(page, "1gbit", "2")).slice(8, 10)).toEqual(["75.0%", "3.20"]);
    expect(cellsOf(rowStartingWith(page, "10gbit", "2")).slice(8, 10)).toEqual(["80.0%", "n/a"]);
    const markdown = renderMarkdown(calibratedData, calibratedMeta, calibratedFlags);
    expect(markdown).toContain(
      "| Ideal (per s) | Scaling efficiency | CPU check (GFLOP/s) | Ceiling, no overlap – perfect overlap |",
    );
    expect(markdown).toContain("| 100.0 | 100.0% | 4.00 | n/a |");
    expect(markdown).toContain("| 200.0 | 75.0% | 3.20 | 44.4% – 80.0% |");
    expect(markdown).toContain("| 200.0 | 80.0% | n/a | 88.9% – 100.0% |");
  });

  it("prints a GPU's tens of thousands of GFLOP/s whole, without an exponent", () => {
    const gpus = [
      trainRecord({ nodes: 1, throughput: 100, computeGflops: [51_234.4] }),
      trainRecord({ nodes: 2, throughput: 150, computeGflops: [48_000, 49_000] }),
    ];
    const gpuData = reportData(gpus);
    const markdown = renderMarkdown(gpuData, reportMeta(gpus, new Date("2025-05-03T12:00:00Z")), []);
    expect(markdown).toContain("| 100.0% | 51234 | n/a |");
    expect(markdown).toContain("| 75.0% | 48500 | 44.4% – 80.0% |");
  });

  it("says what the CPU check is and why ringlab neither flags nor corrects on it, in How to read this and report.md", () => {
    const howToRead = renderHtml(calibratedData, {}, calibratedMeta, calibratedFlags).split(
      '<section id="how-to-read">',
    )[1]!;
    expect(howToRead).toContain(
      "<b>CPU check (GFLOP/s)</b> is every rank's speed at fixed fp32 matrix products for 0.6 s just before the job " +
        "(per second of CPU time on CPU nodes, of wall time on GPUs), the mean over the ranks and the runs",
    );
    expect(howToRead).toContain(
      "ringlab neither flags nor corrects on it, because in two seed campaigns a run's CPU check did not track its throughput " +
        "(correlation −0.02 and 0.18); what stands against drift is the order of the runs (every round has the baseline and every point once).",
    );
    expect(renderMarkdown(calibratedData, calibratedMeta, calibratedFlags)).toContain(
      "\nCPU check (GFLOP/s) is every rank's speed at fixed fp32 matrix products",
    );
  });
});

describe("runs done more than once", () => {
  const first = {
    ...failedTrainRecord({ nodes: 2, bandwidth: "1gbit", repeat: 5, error: "peer gone" }),
    attempt: 1,
    logsDir: "logs/x/attempt-1",
  };
  const second = { ...first, attempt: 2, error: "timed out again", logsDir: "logs/x/attempt-2" };
  const twice = [...records.filter((record) => record.status === "ok"), first, second];
  const twiceMeta = reportMeta(twice, new Date("2025-05-03T12:00:00Z"));

  it("count once, with their latest attempt and how many attempts they had", async () => {
    const twiceData = reportData(twice);
    expect(twiceData.runCounts).toEqual({ total: 14, ok: 13, failed: 1, doneAgain: 1 });
    const page = renderHtml(twiceData, {}, twiceMeta, []);
    expect(cellsOf(rowStartingWith(page, "<code>train-resnet50-b64-n2-1gbit-r5</code>"))).toEqual([
      "<code>train-resnet50-b64-n2-1gbit-r5</code>",
      "2 attempts",
      "<pre>timed out again</pre>",
      "<code>logs/x/attempt-2</code>",
    ]);
    expect(page).not.toContain("peer gone");
    expect(renderMarkdown(twiceData, twiceMeta, [])).toContain(
      "- train-resnet50-b64-n2-1gbit-r5 (2 attempts): timed out again (logs: logs/x/attempt-2)",
    );
  });
});

describe("text from records in report.md", () => {
  const hostile = [
    failedTrainRecord({
      nodes: 2,
      bandwidth: "1gbit",
      model: "<b>m</b>|x",
      error: "<script>alert(1)</script> a|b & `c` *d*",
    }),
  ];
  const markdown = renderMarkdown(reportData(hostile), reportMeta(hostile, new Date("2025-05-03T12:00:00Z")), []);

  it("passes no raw HTML and breaks no table row", () => {
    expect(markdown).not.toMatch(/<script|<b>/);
    expect(markdown).toContain("&lt;script&gt;alert(1)&lt;/script&gt; a\\|b &amp; \\`c\\` \\*d\\*");
    expect(markdown).toContain("train-&lt;b&gt;m&lt;/b&gt;\\|x-b64-n2-1gbit-r1 (1 attempt)");
  });

  it("names record files that were left out", () => {
    const withLeftOut = renderMarkdown(
      reportData(records),
      { ...meta, leftOut: ["run record /r/runs/a.attempt-1.json is unreadable (<eof>)"] },
      [],
    );
    expect(withLeftOut).toContain("> - run record /r/runs/a.attempt-1.json is unreadable (&lt;eof&gt;)");
    expect(renderHtml(reportData(records), {}, { ...meta, leftOut: ["a <b>"] }, [])).toContain("<li>a &lt;b&gt;</li>");
  });

  it("tells a confidence interval over repeats from one run's spread over iterations", () => {
    expect(renderMarkdown(data, meta, flags)).toContain(
      "± is the 95% confidence interval of the mean (95 % interval: Student's t over repeats)",
    );
    expect(renderMarkdown(data, meta, flags)).toContain("200.0 (± 8.0 over iterations)");
    expect(renderMarkdown(data, meta, flags)).toContain("402.0 ± 25.4");
  });
});
