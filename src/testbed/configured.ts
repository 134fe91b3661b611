/**
 * Whether a local testbed is still configured as a campaign needs it. `configure` records a fingerprint of what
 * site.yml converged from: ringlab's playbooks and roles, the inventory and the worker image (whether it made the
 * testbed a Slurm cluster is in the record beside it).
 * A campaign that reuses a testbed finding the same fingerprint need not converge it again (about a minute on a
 * 2-core machine); anything else (an edited role, another image build, a Slurm campaign on a testbed configured
 * without Slurm, a restarted node container: see local.ts) converges as before. `ringlab configure` always does.
 */
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, type Dirent } from "node:fs";
import { join, relative } from "node:path";

export interface ConfigurationInputs {
  /** Every file under ansible/ as [path relative to it, content], in any order. */
  readonly playbookFiles: readonly (readonly [string, string | Buffer])[];
  /** The testbed's inventory file as site.yml reads it. */
  readonly inventory: string;
  /** The worker image's id in the engine the nodes use. */
  readonly workerImageId: string;
}

/** Pure: the same inputs, in whatever order the files were listed, give the same fingerprint. */
export function configurationFingerprint(inputs: ConfigurationInputs): string {
  const hash = createHash("sha256");
  const files = [...inputs.playbookFiles].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  for (const [path, content] of files) {
    const bytes = typeof content === "string" ? Buffer.from(content) : content;
    hash.update(`file ${path} ${bytes.length}\n`).update(bytes);
  }
  hash.update(`inventory ${Buffer.byteLength(inputs.inventory)}\n${inputs.inventory}`);
  hash.update(`image ${inputs.workerImageId}\n`);
  return `sha256:${hash.digest("hex")}`;
}

/**
 * Every file under `dir` as configurationFingerprint takes them: the playbooks, roles and plugins; not what tools leave
 * there (Python's bytecode, hidden folders and files such as a fact cache or a linter's).
 */
export function readPlaybookFiles(dir: string): [string, Buffer][] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .map((entry) => ({ entry, path: relative(dir, join(folderOf(entry), entry.name)) }))
    .filter(
      ({ entry, path }) =>
        entry.isFile() &&
        !path.endsWith(".pyc") &&
        !path.split("/").some((part) => part === "__pycache__" || part.startsWith(".")),
    )
    .map(({ path }) => [path, readFileSync(join(dir, path))]);
}

/** The folder a directory entry is in: `parentPath` from Node.js 20.12, `path` before. */
function folderOf(entry: Dirent): string {
  return (entry as Dirent & { parentPath?: string }).parentPath ?? (entry as Dirent & { path: string }).path;
}
