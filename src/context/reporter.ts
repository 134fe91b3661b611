/**
 * Progress for long steps: which step, what it is doing now (task, node), elapsed time. The CLI prints it;
 * tests pass a silent reporter. Tool output goes to the log file always and to the terminal with --verbose.
 */

import { printable } from "../util/output.ts";

export interface Reporter {
  /** Runs `work` as a named step: announces it, shows its latest detail, then its outcome and duration. */
  step<T>(title: string, work: (detail: (text: string) => void) => Promise<T>): Promise<T>;
  info(message: string): void;
  warn(message: string): void;
  /** A raw line from an external tool; shown only in verbose mode. */
  toolLine(line: string): void;
}

/**
 * Human progress on stderr, so stdout stays clean for data (status tables, plans). Titles, details, messages and tool
 * lines may quote other people's files and tools: each is made printable (util/output.ts) before it reaches the stream;
 * only the reporter's own line-redrawing sequences are control characters.
 */
export class ConsoleReporter implements Reporter {
  private readonly interactive: boolean;

  constructor(
    private readonly verbose = false,
    private readonly stream: NodeJS.WriteStream = process.stderr,
  ) {
    this.interactive = stream.isTTY === true && !verbose;
  }

  async step<T>(title: string, work: (detail: (text: string) => void) => Promise<T>): Promise<T> {
    const started = Date.now();
    const elapsed = () => `${((Date.now() - started) / 1000).toFixed(1)} s`;
    let detail = "";
    let lastPrinted = 0;
    title = printable(title);
    const draw = () =>
      this.stream.write(
        `\r\x1b[2K… ${title}${detail ? `: ${detail}` : ""} (${elapsed()})`.slice(0, (this.stream.columns ?? 120) + 6),
      );
    const timer = this.interactive ? setInterval(draw, 500) : undefined;
    if (!this.interactive) this.stream.write(`… ${title}\n`);
    const update = (text: string) => {
      detail = printable(text);
      if (this.interactive) draw();
      else if (!this.verbose && Date.now() - lastPrinted > 5_000) {
        // Logs and CI: a detail line at most every 5 s keeps long steps visibly alive without flooding.
        lastPrinted = Date.now();
        this.stream.write(`    ${detail} (${elapsed()})\n`);
      }
    };
    try {
      const result = await work(update);
      this.finish(`✓ ${title} (${elapsed()})`);
      return result;
    } catch (error) {
      this.finish(`✗ ${title} (${elapsed()})`);
      throw error;
    } finally {
      if (timer !== undefined) clearInterval(timer);
    }
  }

  info(message: string): void {
    this.stream.write(`${printable(message)}\n`);
  }

  warn(message: string): void {
    this.stream.write(`warning: ${printable(message)}\n`);
  }

  toolLine(line: string): void {
    if (this.verbose) this.stream.write(`    | ${printable(line)}\n`);
  }

  private finish(line: string): void {
    this.stream.write(this.interactive ? `\r\x1b[2K${line}\n` : `${line}\n`);
  }
}
