/** Shared by the CLI benchmarks: run `ringlab` and time it. */
import { spawnSync } from "node:child_process";
import { resolve } from "node:path";

export const REPO = resolve(import.meta.dirname, "../..");

/** Runs the CLI; returns seconds taken; throws with its output when it fails. */
export function timed(stateDir: string, args: readonly string[]): number {
  return timedWithProgress(stateDir, args).seconds;
}

/** Runs the CLI; returns seconds taken and its progress output (stderr); throws with it when the CLI fails. */
export function timedWithProgress(stateDir: string, args: readonly string[]): { seconds: number; progress: string } {
  const started = process.hrtime.bigint();
  const result = spawnSync(process.execPath, [resolve(REPO, "src/bin/ringlab.mjs"), "--state-dir", stateDir, ...args], {
    cwd: REPO,
    encoding: "utf8",
  });
  if (result.status !== 0) throw new Error(`ringlab ${args.join(" ")} exited ${result.status}:\n${result.stderr}`);
  return { seconds: Number(process.hrtime.bigint() - started) / 1e9, progress: result.stderr };
}
