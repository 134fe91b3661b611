/**
 * What a run measures, whatever its name and however long it times it: its configuration key, which the campaign's
 * plan gives each run and the calibration each run it read, so that a prediction says whether the calibration had
 * measured its configuration (./predictions.ts decidePredictions). Pure.
 */
import { createHash } from "node:crypto";
import { TRAIN_KNOBS, type TrainKnobName } from "../config/registry.ts";
import type { Job } from "./record.ts";

/**
 * The train knobs that change only how long a run measures, never what: its warm-up and how many steps it times. A
 * calibration that timed 4 iterations of a configuration has seen the configuration a campaign times 5 of.
 */
export const DURATION_ONLY_KNOBS: readonly TrainKnobName[] = ["numWarmupBatches", "numBatchesPerIter", "numIters"];
/** The probe's flags of the same kind: its warm-up, its iterations per size, and the worker's time limit. */
const DURATION_ONLY_FLAGS: readonly string[] = ["--warmup-iters", "--iters", "--timeout-seconds"];

/** What configurationKey reads of a run: a planned run with its testbed's CPU quota, or a record's params. */
export interface ConfigurationOf {
  readonly job: Job;
  readonly nodes: number;
  readonly processesPerNode?: number;
  readonly bandwidth: string | null;
  readonly model?: string;
  readonly batchSize?: number;
  readonly knobs: Readonly<Record<string, string | number | boolean>>;
  readonly workerArgs: readonly string[];
  /** The local testbed's CPU quota per worker; absent on machines of their own. */
  readonly cpusPerNode?: number;
}

/**
 * What a run measures, whatever its name and however long it times it: its job, nodes, processes per node, link rate
 * and CPU quota, and a training run's model, batch and every knob but DURATION_ONLY_KNOBS (a knob at the worker's
 * default counts as unset), a probe's arguments but its iteration counts. Unlike the fingerprint, which also changes
 * with the iteration counts (a resumed campaign reruns a run whose counts changed), it decides whether a calibration
 * has seen a run's configuration (src/results/predictions.ts decidePredictions).
 */
export function configurationKey(run: ConfigurationOf): string {
  const measured =
    run.job === "train"
      ? [
          run.model ?? null,
          run.batchSize ?? null,
          Object.entries(run.knobs)
            .filter(([knob, value]) => {
              const known = TRAIN_KNOBS[knob as TrainKnobName];
              return (
                !DURATION_ONLY_KNOBS.includes(knob as TrainKnobName) && (known === undefined || known.default !== value)
              );
            })
            .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
        ]
      : withoutFlags(run.workerArgs, DURATION_ONLY_FLAGS);
  const essence = JSON.stringify([
    run.job,
    run.nodes,
    run.processesPerNode ?? 1,
    run.bandwidth,
    run.cpusPerNode ?? null,
    measured,
  ]);
  return createHash("sha256").update(essence).digest("hex").slice(0, 16);
}

/** The arguments without the given flags and the value after each. */
function withoutFlags(args: readonly string[], flags: readonly string[]): string[] {
  return args.filter((arg, index) => !flags.includes(arg) && !flags.includes(args[index - 1] ?? ""));
}
