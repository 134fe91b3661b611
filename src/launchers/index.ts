/**
 * The launchers, by name: how a campaign's or `ringlab run`'s jobs start (./launcher.ts says what one is). The
 * runner, configure, status and the report ask this table, never a launcher's name.
 */
import { ansibleLauncher } from "./ansible.ts";
import type { Launcher } from "./launcher.ts";
import { mpiLauncher } from "./mpi.ts";
import { DEFAULT_LAUNCHER, LAUNCHER_NAMES, type LauncherName, type RecordedLauncher } from "./names.ts";
import { slurmLauncher } from "./slurm.ts";

export { DEFAULT_LAUNCHER, LAUNCHER_NAMES, type LauncherName, type RecordedLauncher };
export type { Launcher, LauncherOutcome, Refusal } from "./launcher.ts";

export const LAUNCHERS: Readonly<Record<LauncherName, Launcher>> = {
  ansible: ansibleLauncher,
  slurm: slurmLauncher,
  mpi: mpiLauncher,
};

/** The launcher a run request or record names; absent: the default. */
export function launcherOf(name: LauncherName | undefined): Launcher {
  return LAUNCHERS[name ?? DEFAULT_LAUNCHER];
}

/** How a run request and its record name a launcher: the default is left out (records made before the field). */
export function recordedLauncher(name: LauncherName): { launcher?: RecordedLauncher } {
  return name === DEFAULT_LAUNCHER ? {} : { launcher: name as RecordedLauncher };
}

/** The launchers a testbed must be configured for beyond what every testbed has. */
export function launchersWithSetup(): Launcher[] {
  return Object.values(LAUNCHERS).filter((launcher) => launcher.setup !== undefined);
}
