/** Calibration files on disk: read (checked), made from results folders, written. The only file I/O of src/predict. */
import { existsSync, readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { UsageError } from "../util/errors.ts";
import { ResultsStore, type Warn } from "../results/store.ts";
import { writePrivateFile } from "../util/fs.ts";
import { CALIBRATION_SCHEMA, otherCalibrationVersion, parseCalibration, type Calibration } from "./calibration.ts";
import { calibrationOfCampaigns, type CampaignRecords } from "./layout-overlap.ts";

/** Where `ringlab calibrate` keeps the merged calibration, and `plan` and `campaign` look for it. */
export function defaultCalibrationFile(stateDir: string): string {
  return join(stateDir, "calibration.json");
}

const HOW_TO_MAKE = "make one with `ringlab calibrate <results dir>...` from campaigns that ran";

/** A calibration file, checked; a file that is not one is bad input (exit 2), never half read. */
export function readCalibrationFile(file: string): Calibration {
  return checkedCalibration(file, calibrationJson(file));
}

function calibrationJson(file: string): unknown {
  try {
    return JSON.parse(readFileSync(file, "utf8"));
  } catch (error) {
    throw new UsageError(`calibration ${file}: cannot be read as JSON (${(error as Error).message})`, {
      hint: HOW_TO_MAKE,
    });
  }
}

function checkedCalibration(file: string, json: unknown): Calibration {
  const parsed = parseCalibration(json);
  if ("problem" in parsed) throw new UsageError(`calibration ${file}: ${parsed.problem}`, { hint: HOW_TO_MAKE });
  return parsed.calibration;
}

/** A results folder's calibration; a folder without records is bad input. */
export function calibrationOfResults(dir: string, warn: Warn): Calibration {
  return calibrationOfCampaigns([campaignRecords(dir, warn)], warn);
}

/** A results folder's records; a folder without records is bad input. */
function campaignRecords(dir: string, warn: Warn): CampaignRecords {
  const store = ResultsStore.open(resolve(dir), warn);
  if (store.records().length === 0) {
    throw new UsageError(`no run records in ${store.paths.runsDir}: results directory ${dir} calibrates nothing`, {
      hint: "pass the results of a campaign that ran (results/<campaign>)",
    });
  }
  return { records: store.records(), resultsDir: dir, folder: store.paths.dir };
}

/** The calibration already in `file`, none where it is of another version (said so: it is replaced). */
function earlierCalibration(file: string, warn: Warn): Calibration[] {
  const json = calibrationJson(file);
  const version = otherCalibrationVersion(json);
  if (version === undefined) return [checkedCalibration(file, json)];
  warn(
    `calibration ${file} is a ${version} file; this ringlab reads ${CALIBRATION_SCHEMA}: replaced by the calibration of the results given, nothing of it kept`,
  );
  return [];
}

/** `--calibration`: a calibration file, or a results folder to calibrate from on the spot. */
export function loadCalibration(path: string, warn: Warn): Calibration {
  if (!existsSync(path)) throw new UsageError(`calibration ${path}: no such file or folder`, { hint: HOW_TO_MAKE });
  return statSync(path).isDirectory() ? calibrationOfResults(path, warn) : readCalibrationFile(path);
}

/**
 * The calibration in `file` (if any) with the results folders' merged over it, written back; returns it. A file of
 * another calibration version is replaced, said so: what it holds may not be what this ringlab measures.
 */
export function calibrateInto(file: string, resultsDirs: readonly string[], warn: Warn): Calibration {
  const earlier = existsSync(file) ? earlierCalibration(file, warn) : [];
  const merged = calibrationOfCampaigns(
    resultsDirs.map((dir) => campaignRecords(dir, warn)),
    warn,
    earlier,
  );
  writePrivateFile(file, `${JSON.stringify(merged, null, 2)}\n`);
  return merged;
}
