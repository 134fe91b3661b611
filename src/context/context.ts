/** What every command needs: where things are, how to report, where tool output is logged, how to stop. */
import { Ansible } from "../adapters/ansible.ts";
import { Docker } from "../adapters/docker.ts";
import type { Reporter } from "./reporter.ts";

export interface Context {
  /** The ringlab checkout: ansible/, docker/ and cdktf.json live here. */
  readonly repoDir: string;
  /** Where testbed state lives (default ./.ringlab). */
  readonly stateDir: string;
  readonly reporter: Reporter;
  /** Every external tool's output is appended here. */
  readonly logFile: string;
  /** Aborted on Ctrl-C/SIGTERM: running tools are stopped, and teardown starts. */
  readonly signal: AbortSignal;
}

export function dockerFor(ctx: Context): Docker {
  return new Docker({ logFile: ctx.logFile, onLine: (line) => ctx.reporter.toolLine(line) });
}

export function ansibleFor(ctx: Context): Ansible {
  return new Ansible(`${ctx.repoDir}/ansible`);
}

/**
 * The same context with a signal that never fires: teardown and rollback must finish even after Ctrl-C
 * (which is often what started them).
 */
export function uninterruptible(ctx: Context): Context {
  return { ...ctx, signal: new AbortController().signal };
}
