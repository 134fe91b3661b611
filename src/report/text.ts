/**
 * Text helpers the report and the comparison page share: escaping, readable times, numbers. Pure.
 */

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/**
 * An ISO time as a person reads it, "1 May 2025, 10:00 UTC". The page is static and read anywhere, so the zone
 * is UTC and says so; text that is not a time is returned as it is.
 */
export function readableTime(iso: string): string {
  const time = new Date(iso);
  if (Number.isNaN(time.getTime())) return iso;
  const hours = String(time.getUTCHours()).padStart(2, "0");
  const minutes = String(time.getUTCMinutes()).padStart(2, "0");
  return `${time.getUTCDate()} ${MONTHS[time.getUTCMonth()]} ${time.getUTCFullYear()}, ${hours}:${minutes} UTC`;
}

/** A span of two times; the date is said once when both fall on the same day ("1 May 2025, 10:00 – 10:05 UTC"). */
export function readableSpan(fromIso: string, toIso: string): string {
  const from = readableTime(fromIso);
  const to = readableTime(toIso);
  const [fromDay, fromClock] = from.split(", ");
  const [toDay, toClock] = to.split(", ");
  if (fromClock !== undefined && toClock !== undefined && fromDay === toDay)
    return `${fromDay}, ${fromClock.replace(" UTC", "")} – ${toClock}`;
  return `${from} – ${to}`;
}

export function percent(fraction: number): string {
  return `${(fraction * 100).toFixed(1)}%`;
}

export function escapeHtml(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

/**
 * Text from records (ids, model names, errors) as markdown that shows it literally: no raw HTML passes, and
 * nothing breaks a table row or starts emphasis, a code span or a link.
 */
export function markdownText(text: string): string {
  return escapeHtml(text).replace(/[\\`*_[\]|]/g, (c) => `\\${c}`);
}

/** Cells are HTML already: callers escape text that came from records. */
export function htmlTable(columns: readonly string[], rows: readonly (readonly string[])[]): string {
  const head = `<tr>${columns.map((column) => `<th>${column}</th>`).join("")}</tr>`;
  return `<table>\n<thead>${head}</thead>\n<tbody>\n${rows.map((row) => `<tr>${row.map((cell) => `<td>${cell}</td>`).join("")}</tr>`).join("\n")}\n</tbody>\n</table>`;
}

/** The page's content column, in CSS pixels: charts are drawn this wide, so they fill it without scaling. */
export const CONTENT_WIDTH_PX = 1100;

/** The style both pages share: one column of CONTENT_WIDTH_PX, tables that scroll rather than overflow. */
export const PAGE_STYLE = `
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: ${CONTENT_WIDTH_PX}px; padding: 0 1rem; color: #222; line-height: 1.4; }
.note { border-left: 4px solid #d98c00; background: #fff6e5; padding: 0.5rem 0.8rem; }
header p { margin: 0.2rem 0; color: #444; }
.counts { font-weight: 600; }
figure { margin: 1.5rem 0; }
figcaption { margin-bottom: 0.5rem; color: #333; }
figcaption b { font-size: 1.05rem; }
figure svg { display: block; width: 100%; height: auto; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; margin: 0.5rem 0 1.5rem; font-size: 0.8rem; }
th, td { border: 1px solid #ccc; padding: 0.2rem 0.4rem; text-align: right; vertical-align: top; }
th { background: #f3f3f3; }
td:first-child, th:first-child { text-align: left; }
pre { margin: 0; white-space: pre-wrap; text-align: left; max-width: 50rem; }
.flag { color: #b00020; font-weight: 600; }
ul.flags li { margin: 0.4rem 0; }
ul.flags .runs { color: #555; font-size: 0.85rem; }
ul.flags code { overflow-wrap: anywhere; }
`;
