/**
 * One writer per testbed and per results folder: an exclusive lock file holding the holder's PID, command and
 * start time. A second ringlab command that wants the same lock stops with exit 2 naming the holder; a lock
 * whose process is gone (killed, crashed) is taken over with a warning. Locks are re-entrant within a process
 * (a campaign holds its testbed's lock and calls up, configure and down, which take it too).
 */
import { closeSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from "node:fs";
import { dirname, join } from "node:path";
import { UsageError } from "../util/errors.ts";
import { PRIVATE_FILE_MODE } from "../util/fs.ts";
import { locksDir } from "./paths.ts";

export interface LockHolder {
  readonly pid: number;
  readonly command: string;
  readonly startedAt: string;
}

/** Lock files this process holds, with how many nested holds each has. */
const held = new Map<string, number>();
process.once("exit", () => {
  for (const file of held.keys()) {
    try {
      unlinkSync(file);
    } catch {
      // Already gone: nothing to release.
    }
  }
});

export function testbedLockFile(stateDir: string, testbed: string): string {
  return join(locksDir(stateDir), `${testbed}.lock`);
}

export function resultsLockFile(resultsDir: string): string {
  return join(resultsDir, ".ringlab.lock");
}

/** Runs `work` holding the lock; `what` names the locked thing in messages ("testbed smoke"). */
export async function withLock<T>(
  file: string,
  what: string,
  warn: (message: string) => void,
  work: () => Promise<T>,
): Promise<T> {
  acquire(file, what, warn);
  try {
    return await work();
  } finally {
    release(file);
  }
}

export function acquire(file: string, what: string, warn: (message: string) => void): void {
  const nested = held.get(file);
  if (nested !== undefined) {
    held.set(file, nested + 1);
    return;
  }
  // The folder keeps the umask: a results folder's lock is made before the results, which others may read.
  mkdirSync(dirname(file), { recursive: true });
  if (!tryCreate(file)) {
    const holder = readHolder(file);
    if (holder !== undefined && isAlive(holder.pid)) {
      throw new UsageError(
        `${what} is in use by \`${holder.command}\` (pid ${holder.pid}, since ${holder.startedAt})`,
        {
          hint: `wait for it to finish or stop it (kill ${holder.pid}); only one ringlab command may change ${what} at a time`,
        },
      );
    }
    warn(
      `${what} was locked by ${holder === undefined ? "an unreadable lock" : `pid ${holder.pid} (\`${holder.command}\`), which is no longer running`}: taking the lock over`,
    );
    unlinkSync(file);
    if (!tryCreate(file))
      throw new UsageError(`${what} was locked again by another ringlab command just now`, {
        hint: "retry in a moment",
      });
  }
  held.set(file, 1);
}

export function release(file: string): void {
  const nested = held.get(file);
  if (nested === undefined) return;
  if (nested > 1) {
    held.set(file, nested - 1);
    return;
  }
  held.delete(file);
  try {
    unlinkSync(file);
  } catch {
    // Removed with its folder (down removes a testbed's state): nothing to release.
  }
}

function tryCreate(file: string): boolean {
  let fd: number;
  try {
    // Its holder's command line is the user's business: 0600, like the rest of ringlab's state.
    fd = openSync(file, "wx", PRIVATE_FILE_MODE);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw error;
  }
  const holder: LockHolder = {
    pid: process.pid,
    command: `ringlab ${process.argv.slice(2).join(" ")}`.trim(),
    startedAt: new Date().toISOString(),
  };
  writeSync(fd, `${JSON.stringify(holder)}\n`);
  closeSync(fd);
  return true;
}

function readHolder(file: string): LockHolder | undefined {
  try {
    const holder = JSON.parse(readFileSync(file, "utf8")) as LockHolder;
    return Number.isInteger(holder.pid) && holder.pid > 0 ? holder : undefined;
  } catch {
    return undefined;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
