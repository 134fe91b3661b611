/**
 * The comparison of two campaigns (compare.ts) as one self-contained HTML page and a markdown twin. Pure.
 */
import type {
  ComparedConfiguration,
  Comparison,
  OneSidedConfiguration,
  SideMeasurement,
  SideSummary,
} from "./compare.ts";
import { escapeHtml, htmlTable, markdownText, PAGE_STYLE, readableSpan, readableTime } from "./text.ts";

const BEYOND_NOISE = "beyond noise";
const WITHIN_NOISE = "within noise";
const NOT_JUDGED = "not judged";

const METHOD_NOTE =
  "B / A is the ratio of the means; its 95% interval comes from the delta method on the log of the ratio: " +
  "each side's relative 95% half-width (Student's t over its repeats) combined in quadrature. A side with one repeat uses " +
  "that run's spread over iterations (1.96 × std), marked ¹, in place of the noise between repeats; a probe with one repeat " +
  "(or a run without a spread) has no noise estimate, and a difference with such a side is not judged: its noise is unknown, not zero. " +
  '"Beyond noise": the interval excludes 1.';

export function renderComparisonHtml(comparison: Comparison, generatedAt: Date): string {
  const { a, b } = comparison;
  const beyond = comparison.matched.filter((row) => row.beyondNoise === true).length;
  const notJudged = comparison.matched.filter((row) => row.beyondNoise === null).length;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>ringlab compare: ${escapeHtml(a.name)} against ${escapeHtml(b.name)}</title>
<style>${PAGE_STYLE}</style>
</head>
<body>
<header>
<h1>${escapeHtml(b.name)} against ${escapeHtml(a.name)}</h1>
<p><b>A</b> ${escapeHtml(sideText(a))}</p>
<p><b>B</b> ${escapeHtml(sideText(b))}</p>
<p>Page generated ${escapeHtml(readableTime(generatedAt.toISOString()))}</p>
<p class="counts">${comparison.matched.length} configurations on both sides, ${beyond} of them differ beyond the noise${notJudged === 0 ? "" : `, ${notJudged} not judged (no noise estimate)`}; ${comparison.onlyInA.length} only in A, ${comparison.onlyInB.length} only in B.</p>
</header>
<section id="both">
<h2>On both sides</h2>
${comparison.matched.length === 0 ? "<p>No configuration was measured on both sides.</p>" : `<div class="scroll">${htmlTable(MATCHED_COLUMNS, comparison.matched.map(matchedRow))}</div>`}
<p>${escapeHtml(METHOD_NOTE)}</p>
</section>
${oneSidedSection("only-a", "Only in A", a, comparison.onlyInA)}
${oneSidedSection("only-b", "Only in B", b, comparison.onlyInB)}
</body>
</html>
`;
}

export function renderComparisonMarkdown(comparison: Comparison): string {
  const { a, b } = comparison;
  const lines = [
    `# ringlab compare: ${markdownText(b.name)} against ${markdownText(a.name)}`,
    "",
    `- A: ${markdownText(sideText(a))}`,
    `- B: ${markdownText(sideText(b))}`,
    "",
    "| Configuration | Unit | A | B | B / A (95% interval) | |",
    "|---|---|---:|---:|---:|---|",
    ...comparison.matched.map(
      (row) =>
        `| ${markdownText(row.label)} | ${row.unit} | ${measurementText(row.a)} | ${measurementText(row.b)} | ${ratioText(row)} | ${verdictText(row)} |`,
    ),
    "",
    METHOD_NOTE,
    ...oneSidedMarkdown("Only in A", comparison.onlyInA),
    ...oneSidedMarkdown("Only in B", comparison.onlyInB),
  ];
  return `${lines.join("\n")}\n`;
}

const MATCHED_COLUMNS = [
  "Configuration",
  "Unit",
  "A (mean ± 95%)",
  "B (mean ± 95%)",
  "B / A (95% interval)",
  "Difference",
];

function matchedRow(row: ComparedConfiguration): string[] {
  const verdict = verdictText(row);
  return [
    escapeHtml(row.label),
    row.unit,
    measurementText(row.a),
    measurementText(row.b),
    ratioText(row),
    row.beyondNoise === true ? `<span class="flag">${verdict}</span>` : verdict,
  ];
}

function oneSidedSection(
  id: string,
  heading: string,
  side: SideSummary,
  rows: readonly OneSidedConfiguration[],
): string {
  if (rows.length === 0)
    return `<section id="${id}"><h2>${heading}</h2><p>None: every configuration of ${escapeHtml(side.name)} is on the other side too.</p></section>`;
  const table = htmlTable(
    ["Configuration", "Unit", "Measured (mean ± 95%)"],
    rows.map((row) => [escapeHtml(row.label), row.unit, measurementText(row.measurement)]),
  );
  return `<section id="${id}"><h2>${heading} (${escapeHtml(side.name)})</h2>\n<div class="scroll">${table}</div></section>`;
}

function oneSidedMarkdown(heading: string, rows: readonly OneSidedConfiguration[]): string[] {
  if (rows.length === 0) return [];
  return [
    "",
    `## ${heading}`,
    "",
    ...rows.map((row) => `- ${markdownText(row.label)}: ${measurementText(row.measurement)} ${row.unit}`),
  ];
}

function sideText(side: SideSummary): string {
  const span =
    side.firstStartedAt === null || side.lastEndedAt === null
      ? ""
      : `, runs ${readableSpan(side.firstStartedAt, side.lastEndedAt)}`;
  const quota = side.cpusPerNode.length === 0 ? "no CPU quota" : `${side.cpusPerNode.join(", ")} CPU cores per node`;
  return `${side.name}: campaign ${side.campaigns.join(", ")}, ${side.okRuns} of ${side.runs} runs ok${span}, ${quota}`;
}

function measurementText(measurement: SideMeasurement): string {
  const digits = measurement.mean >= 100 ? 1 : 3;
  const mean = measurement.mean.toFixed(digits);
  if (measurement.noise === "none") return `${mean} (1 repeat)`;
  const marker = measurement.noise === "iterations" ? "¹" : "";
  return `${mean} ± ${measurement.halfWidth95.toFixed(digits)}${marker} (${measurement.repeats} repeat${measurement.repeats === 1 ? "" : "s"})`;
}

function ratioText(row: ComparedConfiguration): string {
  const ratio = row.b.mean / row.a.mean;
  if (row.ratio === null) return `${ratio.toFixed(3)} (no interval)`;
  return `${row.ratio.ratio.toFixed(3)} [${row.ratio.lower.toFixed(3)}, ${row.ratio.upper.toFixed(3)}]`;
}

function verdictText(row: ComparedConfiguration): string {
  if (row.beyondNoise === null) {
    const without = [row.a.noise === "none" ? "A" : "", row.b.noise === "none" ? "B" : ""]
      .filter((side) => side !== "")
      .join(" and ");
    // Both sides' repeats can also agree to the last digit: then neither has a spread to draw an interval from.
    return without === ""
      ? `${NOT_JUDGED}: no spread on either side`
      : `${NOT_JUDGED}: no noise estimate on ${without} (one run without a spread)`;
  }
  if (!row.beyondNoise) return WITHIN_NOISE;
  return `${BEYOND_NOISE}: B ${row.ratio!.ratio > 1 ? "higher" : "lower"} by ${(Math.abs(row.ratio!.ratio - 1) * 100).toFixed(1)}%`;
}
