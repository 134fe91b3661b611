import { mkdirSync, renameSync, writeFileSync } from "node:fs";
import { dirname, join, basename } from "node:path";

/** Writes a file so readers see the old or the new content, never a part: temp file, then rename. */
export function writeFileAtomic(path: string, content: string, mode?: number): void {
  mkdirSync(dirname(path), { recursive: true });
  const temp = join(dirname(path), `.${basename(path)}.${process.pid}.tmp`);
  writeFileSync(temp, content, mode === undefined ? undefined : { mode });
  renameSync(temp, path);
}
