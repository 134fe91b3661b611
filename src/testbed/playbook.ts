/** Runs one of ansible/'s playbooks against a testbed, with the context's logging, progress and interruption. */
import { createHash } from "node:crypto";
import { rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import type { PlaybookResult } from "../adapters/ansible.ts";
import { ansibleFor, type Context } from "../context.ts";
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

export function runPlaybook(ctx: Context, testbed: TestbedRecord, playbook: string, call: PlaybookCall = {}): Promise<PlaybookResult> {
  return ansibleFor(ctx).playbook(playbook, {
    inventory: testbed.inventory,
    controlPathDir: controlPathDir(testbed),
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
 * SSH connections are kept open between playbooks (ControlPersist) for speed. A testbed recreated on the same
 * addresses must not reuse the old connections, so each testbed instance gets its own short socket folder.
 */
export function controlPathDir(testbed: TestbedRecord): string {
  const id = createHash("sha256").update(`${testbed.name}@${testbed.createdAt}`).digest("hex").slice(0, 12);
  return join(tmpdir(), `ringlab-ssh-${id}`);
}

/**
 * Removes the testbed's shared SSH connections' folder: its nodes are gone or recreated. The folder's name is a
 * hash in the temporary folder, never a user's path; the ssh processes behind it end on their own.
 */
export function forgetConnections(testbed: TestbedRecord): void {
  rmSync(controlPathDir(testbed), { recursive: true, force: true });
}
