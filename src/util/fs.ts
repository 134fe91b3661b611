import { accessSync, constants, existsSync, mkdirSync, renameSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, basename } from "node:path";

/** Writes a file so readers see the old or the new content, never a part: temp file, then rename. */
export function writeFileAtomic(path: string, content: string, mode?: number): void {
  mkdirSync(dirname(path), { recursive: true });
  const temp = join(dirname(path), `.${basename(path)}.${process.pid}.tmp`);
  writeFileSync(temp, content, mode === undefined ? undefined : { mode });
  renameSync(temp, path);
}

/**
 * Makes sure `dir` is (or can become) a folder this process can write, before any expensive work starts.
 * Returns the problem in words, or undefined when it is fine.
 */
export function writableDirProblem(dir: string): string | undefined {
  let probe = dir;
  while (!existsSync(probe)) {
    const parent = dirname(probe);
    if (parent === probe) break;
    probe = parent;
  }
  if (!statSync(probe).isDirectory()) return `${probe} is a file, not a folder`;
  try {
    accessSync(probe, constants.W_OK);
  } catch {
    return `${probe} cannot be written by this user`;
  }
  return undefined;
}
