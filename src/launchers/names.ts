/**
 * The launchers' names: a leaf, so that the campaign schema and the run records can name a launcher without
 * loading what runs one (./index.ts).
 */

/** How runs start; the campaign's `launcher`, `ringlab run --launcher`. ansible: the default, on every testbed. */
export const LAUNCHER_NAMES = ["ansible", "slurm", "mpi"] as const;
export type LauncherName = (typeof LAUNCHER_NAMES)[number];
/** The launchers a run record names (launcher ansible is the absence of one, as in records made before the field). */
export type RecordedLauncher = Exclude<LauncherName, "ansible">;
export const DEFAULT_LAUNCHER: LauncherName = "ansible";
