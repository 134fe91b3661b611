/**
 * Reads and writes the run records of one results directory (its paths: paths.ts). Every attempt of a run is kept: a
 * run done again gets the next attempt number, its own record file and its own logs folder. Records are
 * written atomically (temp file, then rename) and never rewritten. A file that is not a readable
 * ringlab.run/v1 record is named through `warn` and left out; reading never fails because of one.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { writeFileAtomic } from "../util/fs.ts";
import { parseRecordFileName, resultsPaths, type ResultsPaths } from "./paths.ts";
import { attemptOf, latestAttempts, parseRunRecord, type LatestAttempt, type RunRecord } from "./record.ts";

/** Told about every file that was left out, with its path and why. */
export type Warn = (message: string) => void;

export class ResultsStore {
  /** Every record read or saved, all attempts, ordered by run id, then attempt. */
  private readonly all: RunRecord[];
  /** The highest attempt number of each run that has a file in runs/, readable or not. */
  private readonly highestAttempt: Map<string, number>;

  /** Reads every record of `dir` (none when it does not exist yet). */
  static open(dir: string, warn: Warn): ResultsStore {
    const paths = resultsPaths(dir);
    const { records, highestAttempt } = readRecords(paths, warn);
    return new ResultsStore(paths, records, highestAttempt);
  }

  private constructor(
    readonly paths: ResultsPaths,
    records: RunRecord[],
    highestAttempt: Map<string, number>,
  ) {
    this.all = records;
    this.highestAttempt = highestAttempt;
  }

  records(): readonly RunRecord[] {
    return this.all;
  }

  /** The latest attempt of every run and how many attempts it had. */
  latestRecords(): LatestAttempt[] {
    return latestAttempts(this.all);
  }

  /** The attempt number a run done now gets; an unreadable record's number is never reused. */
  nextAttempt(runId: string): number {
    return (this.highestAttempt.get(runId) ?? 0) + 1;
  }

  /** Absolute path of an attempt's logs folder. */
  logsDirOf(runId: string, attempt: number): string {
    return this.paths.logsDirOf(runId, attempt);
  }

  /** Writes a new attempt's record; an attempt already on disk is never overwritten. */
  save(record: RunRecord): void {
    const attempt = attemptOf(record);
    const path = this.paths.recordFileOf(record.runId, attempt);
    if (existsSync(path)) throw new Error(`${path} exists: attempt ${attempt} of ${record.runId} is recorded already`);
    writeFileAtomic(path, `${JSON.stringify(record, null, 2)}\n`);
    this.all.push(record);
    this.all.sort(byRunThenAttempt);
    this.highestAttempt.set(record.runId, Math.max(attempt, this.highestAttempt.get(record.runId) ?? 0));
  }
}

function readRecords(paths: ResultsPaths, warn: Warn): { records: RunRecord[]; highestAttempt: Map<string, number> } {
  const records: RunRecord[] = [];
  const highestAttempt = new Map<string, number>();
  if (!existsSync(paths.runsDir)) return { records, highestAttempt };
  for (const file of readdirSync(paths.runsDir)) {
    const named = parseRecordFileName(file);
    if (named === undefined) continue;
    highestAttempt.set(named.runId, Math.max(named.attempt, highestAttempt.get(named.runId) ?? 0));
    const record = readRecordFile(join(paths.runsDir, file), named, warn);
    if (record !== undefined) records.push(record);
  }
  return { records: records.sort(byRunThenAttempt), highestAttempt };
}

const LEFT_OUT = "left out (its run counts as not done; move the file away to silence this)";

function readRecordFile(path: string, named: { runId: string; attempt: number }, warn: Warn): RunRecord | undefined {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(path, "utf8"));
  } catch (error) {
    warn(`run record ${path} is unreadable (${(error as Error).message}); ${LEFT_OUT}`);
    return undefined;
  }
  const parsed = parseRunRecord(json);
  if ("problem" in parsed) {
    warn(`run record ${path} is ${parsed.problem}; ${LEFT_OUT}`);
    return undefined;
  }
  const { record } = parsed;
  if (record.runId !== named.runId || attemptOf(record) !== named.attempt) {
    warn(
      `run record ${path} holds attempt ${attemptOf(record)} of run ${record.runId}, not what its name says; ${LEFT_OUT}`,
    );
    return undefined;
  }
  // Records from before attempts were kept carry no number: give them theirs in memory, never on disk.
  return record.attempt === undefined ? { ...record, attempt: named.attempt } : record;
}

function byRunThenAttempt(a: RunRecord, b: RunRecord): number {
  return a.runId < b.runId ? -1 : a.runId > b.runId ? 1 : attemptOf(a) - attemptOf(b);
}
