/**
 * Node health between the runs of a campaign. Before each run every node is asked over SSH (a banner read,
 * milliseconds); a lost node is brought back where its target can ("node-recovery"; local testbed: a fresh
 * container on the same name and address, reconfigured), a bounded number of times. Where it cannot (AWS, or after
 * too many tries), the runs that need it are skipped instead of each failing after its timeout.
 */
import type { Context } from "../context/context.ts";
import { targetOf } from "../targets/index.ts";
import { forgetConnections } from "./playbook.ts";
import { sshAnswers } from "./reachability.ts";
import { configuredLaunchers, loadSpec, type NodeRecord, type TestbedRecord } from "./record.ts";
import { configure, type ConfigureOptions } from "./testbed.ts";

/** A node lost more often than this in one campaign stays lost: something keeps killing it. */
export const MAX_RECOVERIES_PER_NODE = 2;

export interface NodeRecovery {
  /** Node names brought back. */
  readonly recreated: readonly string[];
  readonly seconds: number;
}

export interface HealthCheck {
  /** Nodes that do not answer after any recovery; runs that need one of them cannot run. */
  readonly lost: readonly NodeRecord[];
  /** Present when lost nodes were brought back: links must be shaped again. */
  readonly recovery?: NodeRecovery;
}

export async function unreachableNodes(record: TestbedRecord): Promise<NodeRecord[]> {
  const answers = await Promise.all(record.nodes.map((node) => sshAnswers(node.sshAddress)));
  return record.nodes.filter((_, index) => !answers[index]);
}

/** Whether a run on the first `nodes` nodes (by rank) can go ahead with these nodes lost. */
export function runnableWith(nodes: number, lost: readonly NodeRecord[]): boolean {
  return lost.every((node) => node.rank >= nodes);
}

/** Checks every node of a testbed between runs and brings lost ones back where it can; one per campaign. */
export class NodeKeeper {
  private readonly recoveries = new Map<string, number>();

  constructor(
    private readonly ctx: Context,
    private readonly record: TestbedRecord,
    private readonly configureOptions: ConfigureOptions = {},
  ) {}

  async check(): Promise<HealthCheck> {
    const lost = await unreachableNodes(this.record);
    if (lost.length === 0) return { lost };
    const names = lost.map((node) => node.name).join(", ");
    const spec = loadSpec(this.ctx.stateDir, this.record.name);
    const recreate = spec === undefined ? undefined : targetOf(spec).recreateNodes;
    const exhausted = lost.filter((node) => (this.recoveries.get(node.name) ?? 0) >= MAX_RECOVERIES_PER_NODE);
    if (spec === undefined || recreate === undefined || exhausted.length > 0) {
      this.ctx.reporter.warn(
        `node${lost.length > 1 ? "s" : ""} ${names} do${lost.length > 1 ? "" : "es"} not answer over SSH` +
          (exhausted.length > 0 ? ` (lost ${MAX_RECOVERIES_PER_NODE} times already)` : "") +
          ": runs that need them are skipped",
      );
      return { lost };
    }
    const started = Date.now();
    try {
      await this.ctx.reporter.step(`recreate lost node${lost.length > 1 ? "s" : ""} ${names}`, async () => {
        for (const node of lost) this.recoveries.set(node.name, (this.recoveries.get(node.name) ?? 0) + 1);
        await recreate(
          this.ctx,
          spec,
          lost.map((node) => node.rank),
        );
        // Shared SSH connections to the old containers are dead; new ones are opened on the next playbook.
        forgetConnections(this.record);
      });
      // A recreated node is configured for every launcher the testbed is (a Slurm node of a Slurm cluster), whatever
      // this campaign's launcher.
      const launchers = [...configuredLaunchers(this.record), ...(this.configureOptions.launchers ?? [])];
      await configure(this.ctx, this.record, { ...this.configureOptions, launchers });
    } catch (error) {
      this.ctx.signal.throwIfAborted();
      this.ctx.reporter.warn(
        `could not bring back ${names}: ${(error as Error).message}; runs that need them are skipped`,
      );
      return { lost: await unreachableNodes(this.record) };
    }
    return { lost: [], recovery: { recreated: lost.map((node) => node.name), seconds: (Date.now() - started) / 1000 } };
  }
}
