/**
 * Everything ringlab prints to the terminal goes through here. Text from other people's files (a calibration's
 * resultsDir, a record's run id or device name, a worker's log line, an error quoting a campaign file) may hold
 * control characters that retitle the terminal, erase lines, move the cursor or, on some terminals, write the clipboard
 * (OSC 52). Each is shown as its escape (`\u001b`) instead: every C0 and C1 control character but newline and tab,
 * DEL, and the Unicode marks that reorder what follows them (bidirectional overrides and isolates).
 */

// biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters it removes
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/** `text` with every control character written as its \uXXXX escape. */
export function printable(text: string): string {
  return text.replace(CONTROL, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/** Writes `text` to standard output, printable. */
export function out(text: string): void {
  process.stdout.write(printable(text));
}

/** Writes `text` to standard error, printable. */
export function err(text: string): void {
  process.stderr.write(printable(text));
}
