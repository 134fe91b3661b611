/** Runs one of ansible/'s playbooks against a testbed, with the context's logging, progress and interruption. */
import { createHash } from "node:crypto";
import { rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import type { PlaybookResult } from "../adapters/ansible.ts";
import { ansibleFor, type Context } from "../context/context.ts";
import { UsageError } from "../util/errors.ts";
import { checkSafeResolvedPath } from "../rules/safe-text.ts";
import { callerUid, ensurePrivateFolder, pathFacts } from "../util/fs.ts";
import type { TestbedRecord } from "./record.ts";

export interface PlaybookCall {
  readonly extraVars?: Readonly<Record<string, unknown>>;
  readonly timeoutMs?: number;
  /** Only these nodes (by inventory name): the others may be lost. */
  readonly limit?: readonly string[];
  /** Tasks left out by tag (ansible-playbook --skip-tags): unlike a skipped task, they cost no round per node. */
  readonly skipTags?: readonly string[];
  /** Progress: the task now running. */
  readonly onTask?: (task: string) => void;
}

export function runPlaybook(
  ctx: Context,
  testbed: TestbedRecord,
  playbook: string,
  call: PlaybookCall = {},
): Promise<PlaybookResult> {
  return ansibleFor(ctx).playbook(playbook, {
    inventory: testbed.inventory,
    controlPathDir: preparedControlPathDir(testbed),
    // Next to the inventory: removed with the testbed, so a new testbed never sees another's facts.
    factCacheDir: join(dirname(testbed.inventory), "ansible-facts"),
    // ansible.cfg's 32 covers the usual testbed; larger ones need a fork per node (run.yml waits on all).
    forks: Math.max(32, testbed.nodes.length),
    logFile: ctx.logFile,
    signal: ctx.signal,
    onTask: call.onTask,
    onLine: (line) => ctx.reporter.toolLine(line),
    ...(call.extraVars === undefined ? {} : { extraVars: call.extraVars }),
    ...(call.timeoutMs === undefined ? {} : { timeoutMs: call.timeoutMs }),
    ...(call.limit === undefined ? {} : { limit: call.limit }),
    ...(call.skipTags === undefined ? {} : { skipTags: call.skipTags }),
  });
}

/**
 * The longest socket folder: ssh binds `<folder>/<10 hex digits>` (Ansible's control path) plus a 17-character
 * temporary suffix, and a Unix socket path holds at most 103 bytes on macOS (107 on Linux).
 */
export const CONTROL_PATH_DIR_MAX_LENGTH = 75;

/**
 * SSH connections are kept open between playbooks (ControlPersist) for speed. A testbed recreated on the same
 * addresses must not reuse the old connections, so each testbed instance gets its own short socket folder, and
 * each user their own (the uid is in the name): whoever can open those sockets runs commands on the nodes as
 * root. The name can be guessed from spec.json, so the folder is checked every time it is used
 * (preparedControlPathDir).
 */
export function controlPathDir(testbed: TestbedRecord): string {
  const id = createHash("sha256").update(`${testbed.name}@${testbed.createdAt}`).digest("hex").slice(0, 10);
  return join(tmpdir(), `ringlab-ssh-${callerUid() ?? "u"}-${id}`);
}

/**
 * The testbed's socket folder, created by ringlab mode 0700 or refused: a UsageError when what is there is a
 * symbolic link, not a folder, someone else's or open to others, or its path would break ssh's options.
 */
export function preparedControlPathDir(testbed: TestbedRecord): string {
  const dir = controlPathDir(testbed);
  const hint = "set TMPDIR to a short folder of your own, or /tmp";
  const pathProblem = checkSafeResolvedPath(dir, { sshOption: true });
  if (pathProblem !== undefined)
    throw new UsageError(`SSH connection folder ${JSON.stringify(dir)}: ${pathProblem}`, { hint });
  if (dir.length > CONTROL_PATH_DIR_MAX_LENGTH) {
    throw new UsageError(
      `SSH connection folder ${dir} is ${dir.length} characters long; ssh's socket paths in it need it at most ` +
        `${CONTROL_PATH_DIR_MAX_LENGTH}`,
      { hint },
    );
  }
  const problem = ensurePrivateFolder(dir);
  if (problem !== undefined) {
    throw new UsageError(
      `SSH connection folder for testbed ${testbed.name}: ${problem}; whoever controls it can reach the nodes over ` +
        "ringlab's SSH connections",
      { hint: `remove it if it is yours (rm -r ${dir}); if it is not, find out who made it` },
    );
  }
  return dir;
}

/**
 * Removes the testbed's shared SSH connections' folder: its nodes are gone or recreated. The folder's name is a
 * hash in the temporary folder, never a user's path; the ssh processes behind it end on their own. Only a folder of
 * the caller's is removed: anything else at that path is left for preparedControlPathDir to refuse.
 */
export function forgetConnections(testbed: TestbedRecord): void {
  const dir = controlPathDir(testbed);
  const facts = pathFacts(dir);
  const uid = callerUid();
  if (facts?.kind === "folder" && (uid === undefined || facts.uid === uid))
    rmSync(dir, { recursive: true, force: true });
}
