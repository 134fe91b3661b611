/**
 * Planned node loss in a job's worker arguments (`--fail-node N` or `--fail-node=N`): the runner reads which node
 * is lost on purpose, and launchers that cannot survive it refuse it. One parser for both.
 */
import type { Launcher } from "./launcher.ts";

function failNodeAt(workerArgs: readonly string[]): number {
  return workerArgs.findIndex((arg) => arg === "--fail-node" || arg.startsWith("--fail-node="));
}

/**
 * The node a train job loses on purpose: its killed worker is the fault, not a failure. Undefined when the arguments
 * plan no node loss or name no valid node (the worker checks the value itself).
 */
export function plannedLostNode(workerArgs: readonly string[]): number | undefined {
  const at = failNodeAt(workerArgs);
  if (at < 0) return undefined;
  const node = Number(
    workerArgs[at]!.includes("=") ? workerArgs[at]!.slice("--fail-node=".length) : workerArgs[at + 1],
  );
  return Number.isInteger(node) && node > 0 ? node : undefined;
}

/**
 * A launcher's `refuses` for --fail-node, whatever its value, when its jobs end every node as one node's process is
 * killed.
 */
export function refuseNodeLoss(hint: string): NonNullable<Launcher["refuses"]> {
  return (workerArgs) =>
    failNodeAt(workerArgs) < 0 ? undefined : { message: "--fail-node runs with --launcher ansible only", hint };
}
