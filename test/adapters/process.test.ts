import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { runProgram } from "../../src/adapters/process.ts";

/** Whether a process still runs (a zombie that nobody reaped yet counts as gone). */
function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ESRCH") return false;
    throw error;
  }
  try {
    return readFileSync(`/proc/${pid}/stat`, "utf8").replace(/^.*\) /s, "")[0] !== "Z";
  } catch {
    return false;
  }
}

async function waitFor(condition: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (condition()) return true;
    await new Promise((done) => setTimeout(done, 50));
  }
  return condition();
}

/** bash starting two background sleeps (the tool's own children) and waiting for them; their pids go to a file. */
function sleepers(pidFile: string, prelude = ""): string[] {
  return ["-c", `${prelude} sleep 300 & a=$!; sleep 300 & echo "$a $!" > ${pidFile}; wait`];
}

async function childPids(pidFile: string): Promise<number[]> {
  expect(await waitFor(() => existsSync(pidFile) && readFileSync(pidFile, "utf8").endsWith("\n"), 10_000)).toBe(true);
  return readFileSync(pidFile, "utf8").trim().split(" ").map(Number);
}

describe("runProgram", () => {
  it("stops the program's whole process group when aborted, not just the program", async () => {
    const pidFile = join(mkdtempSync(join(tmpdir(), "ringlab-proc-")), "pids");
    const abort = new AbortController();
    const running = runProgram("test", "bash", sleepers(pidFile), { signal: abort.signal, allowFailure: true });
    const pids = await childPids(pidFile);
    abort.abort();
    const result = await running;
    expect(result.canceled).toBe(true);
    expect(result.timedOut).toBe(false);
    expect(await waitFor(() => !pids.some(isRunning), 3_000)).toBe(true);
  });

  it("stops the whole group when the program times out, and reports the timeout", async () => {
    const pidFile = join(mkdtempSync(join(tmpdir(), "ringlab-proc-")), "pids");
    const running = runProgram("test", "bash", sleepers(pidFile), { timeoutMs: 1_500 });
    const pids = await childPids(pidFile);
    const error = await running.catch((e) => e);
    expect(error.details).toMatchObject({ timedOut: true });
    expect(await waitFor(() => !pids.some(isRunning), 3_000)).toBe(true);
  });

  it("kills a group that ignores SIGTERM after the grace period", async () => {
    const pidFile = join(mkdtempSync(join(tmpdir(), "ringlab-proc-")), "pids");
    const abort = new AbortController();
    const running = runProgram("test", "bash", sleepers(pidFile, "trap '' TERM;"), {
      signal: abort.signal,
      allowFailure: true,
    });
    const pids = await childPids(pidFile);
    abort.abort();
    await running;
    expect(await waitFor(() => !pids.some(isRunning), 9_000)).toBe(true);
  }, 20_000);

  it("kills the groups still running when ringlab itself exits", async () => {
    const pidFile = join(mkdtempSync(join(tmpdir(), "ringlab-proc-")), "pids");
    // A ringlab stand-in: starts the sleepers, then exits (as on a second Ctrl-C) while they run.
    const script = `
      import { existsSync } from "node:fs";
      import { runProgram } from ${JSON.stringify(resolve("src/adapters/process.ts"))};
      void runProgram("test", "bash", ${JSON.stringify(sleepers(pidFile))});
      const poll = setInterval(() => { if (existsSync(${JSON.stringify(pidFile)})) { clearInterval(poll); process.exit(130); } }, 50);
    `;
    const exited = await promisify(execFile)(process.execPath, [
      "--import",
      "tsx",
      "--input-type=module",
      "-e",
      script,
    ]).catch((e) => e);
    expect(exited.code).toBe(130);
    const pids = await childPids(pidFile);
    expect(await waitFor(() => !pids.some(isRunning), 3_000)).toBe(true);
  });

  it("still streams every line and reports the exit code", async () => {
    const lines: string[] = [];
    const result = await runProgram("test", "bash", ["-c", "echo one; echo two >&2; exit 3"], {
      allowFailure: true,
      onLine: (line) => lines.push(line),
    });
    expect(lines).toEqual(["one", "two"]);
    expect(result).toMatchObject({ exitCode: 3, canceled: false, timedOut: false });
  });
});
