/**
 * Reads a campaign file: the one place YAML is parsed. Turns the text into typed, defaulted values
 * (./schema.ts) and resolves what depends on the file system: relative paths and the SSH public key (each testbed
 * target resolves the paths its section names, src/targets/).
 */
import { readFileSync, statSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { load as loadYaml, YAMLException } from "js-yaml";
import { ConfigError } from "../util/errors.ts";
import { campaignNameOf, checkCampaignName } from "../rules/names.ts";
import { checkSafeResolvedPath } from "../rules/safe-text.ts";
import { gapOfTestbed, targetOf, targetsThatCan } from "../targets/index.ts";
import { isKubernetesTestbed } from "../targets/kubernetes/target.ts";
import { validateCampaign, type CampaignFile, type KubernetesCampaignFile } from "./schema.ts";

/** Why the worker image tarball cannot be read: the AWS target's rule, which its preflight applies too. */
export { tarballProblem } from "../targets/aws/target.ts";

/** A loaded campaign: paths absolute, the AWS public key read into `sshPublicKey`. */
export interface LoadedCampaignFile extends CampaignFile {
  /** Absolute path of the file it came from. */
  readonly sourceFile: string;
  /** The file's text, kept so results can record exactly what was run. */
  readonly sourceText: string;
}

/** Campaign files are a page or two; a bigger one is a mistake (or an attack on the parser). */
export const MAX_CAMPAIGN_FILE_BYTES = 1024 * 1024;
/**
 * YAML aliases (`*name`) let a small file expand into a huge document ("billion laughs"); a campaign file has
 * no need for more than a few.
 */
export const MAX_YAML_ALIASES = 20;
/** Campaign files nest four levels deep; the limit keeps deeply nested hostile input cheap to refuse. */
const MAX_YAML_DEPTH = 20;

export interface LoadOptions {
  /**
   * Read the AWS SSH public key file (default true). Planning needs no key, so `ringlab plan` works before
   * one exists; anything that provisions does.
   */
  readonly readKeys?: boolean;
  /**
   * Check the folders the file leads to (default true): the campaign file's folder against the path rule, and the
   * local testbed's shared directory for who else could write it. Only teardown, which needs no more than the
   * testbed's name, leaves them out, so that it works whatever happened to those folders.
   */
  readonly checkFolders?: boolean;
}

export function loadCampaignFile(path: string, options: LoadOptions = {}): LoadedCampaignFile {
  return readCampaignText(path, (sourceText, sourceFile) => parseCampaign(sourceText, path, sourceFile, options));
}

function readCampaignText<T>(path: string, parse: (sourceText: string, sourceFile: string) => T): T {
  const sourceFile = resolve(path);
  let sourceText: string;
  try {
    const size = statSync(sourceFile).size;
    if (size > MAX_CAMPAIGN_FILE_BYTES) throw new ConfigError(path, [{ path: "", message: tooBigMessage(size) }]);
    sourceText = readFileSync(sourceFile, "utf8");
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    const reason = (error as NodeJS.ErrnoException).code === "ENOENT" ? "file not found" : String(error);
    throw new ConfigError(path, [
      { path: "", message: `${reason}; expected a campaign YAML file (see campaigns/ for examples)` },
    ]);
  }
  return parse(sourceText, sourceFile);
}

function tooBigMessage(size: number): string {
  return `the file is ${size} bytes; expected a campaign file of at most ${MAX_CAMPAIGN_FILE_BYTES} bytes`;
}

/**
 * A Kubernetes campaign file (testbed.target: kubernetes), as `ringlab campaign`, `ringlab manifests` and `ringlab
 * down` read it; the commands that work on a testbed ringlab brings up refuse one (parseCampaign).
 */
export interface LoadedKubernetesCampaignFile extends KubernetesCampaignFile {
  readonly sourceFile: string;
  readonly sourceText: string;
}

/** A loaded campaign file of any target. */
export type AnyLoadedCampaignFile = LoadedCampaignFile | LoadedKubernetesCampaignFile;

/**
 * Parses campaign text; `displayName` is how errors name the file. A campaign on a testbed ringlab does not bring up
 * (its target cannot "provision": a Kubernetes cluster) is refused (exit 2), with the commands that serve it.
 */
export function parseCampaign(
  sourceText: string,
  displayName: string,
  sourceFile = resolve(displayName),
  options: LoadOptions = {},
): LoadedCampaignFile {
  const file = parseAnyCampaign(sourceText, displayName, sourceFile, options);
  const notHere = gapOfTestbed(file.testbed, "provision");
  if (notHere !== undefined) {
    const provisioned = targetsThatCan("provision")
      .map((target) => target.name)
      .join(", ");
    throw new ConfigError(displayName, [
      {
        path: "testbed.target",
        message: `${file.testbed.target}: this command works on a testbed ringlab brings up (${provisioned}); ${notHere}`,
      },
    ]);
  }
  return file as LoadedCampaignFile;
}

/** Reads a campaign file of any target: the commands that serve every target (campaign, plan, down). */
export function loadAnyCampaignFile(path: string, options: LoadOptions = {}): AnyLoadedCampaignFile {
  return readCampaignText(path, (sourceText, sourceFile) => parseAnyCampaign(sourceText, path, sourceFile, options));
}

export function isKubernetesCampaign(file: AnyLoadedCampaignFile): file is LoadedKubernetesCampaignFile {
  return isKubernetesTestbed(file.testbed);
}

/** Reads a Kubernetes campaign file for `ringlab manifests`; another target is exit 2. */
export function loadKubernetesCampaignFile(path: string): LoadedKubernetesCampaignFile {
  const file = loadAnyCampaignFile(path, { readKeys: false });
  if (!isKubernetesCampaign(file)) {
    throw new ConfigError(path, [
      {
        path: "testbed.target",
        message: `found ${file.testbed.target}, expected kubernetes: \`ringlab manifests\` writes a Kubernetes campaign's Jobs; \`ringlab plan\` shows what a ${file.testbed.target} campaign runs`,
      },
    ]);
  }
  return file;
}

function parseAnyCampaign(
  sourceText: string,
  displayName: string,
  sourceFile: string,
  options: LoadOptions,
): AnyLoadedCampaignFile {
  const document = parseYaml(sourceText, displayName);
  const result = validateCampaign(document);
  if (!result.ok) throw new ConfigError(displayName, result.problems);
  const nameProblem = checkCampaignName(campaignNameOf(sourceFile));
  if (nameProblem !== undefined) {
    throw new ConfigError(displayName, [
      {
        path: "",
        message:
          `the file name gives the campaign its name (results directory, AWS tags): found ${JSON.stringify(campaignNameOf(sourceFile))}, ` +
          `${nameProblem}; rename the file`,
      },
    ]);
  }

  const baseDir = dirname(sourceFile);
  // Relative paths in the file resolve against its folder: the folder's name ends up in them.
  const checkFolders = options.checkFolders ?? true;
  const folderProblem = checkFolders ? checkSafeResolvedPath(baseDir) : undefined;
  if (folderProblem !== undefined) {
    throw new ConfigError(displayName, [
      {
        path: "",
        message: `the campaign file's folder ${JSON.stringify(baseDir)}: ${folderProblem}; move the file to a folder whose path has none of them`,
      },
    ]);
  }
  const tb = result.value.testbed;
  // A target whose section names no path on this machine (a Kubernetes cluster's) has nothing to resolve.
  const testbed =
    targetOf(tb).resolveFiles?.(tb, { baseDir, displayName, readKeys: options.readKeys ?? true, checkFolders }) ?? tb;
  return { ...result.value, testbed, sourceFile, sourceText } as AnyLoadedCampaignFile;
}

function parseYaml(sourceText: string, displayName: string): unknown {
  // UTF-16 code units: at least one byte each, so a text over the limit is a file over it.
  if (sourceText.length > MAX_CAMPAIGN_FILE_BYTES) {
    throw new ConfigError(displayName, [{ path: "", message: tooBigMessage(Buffer.byteLength(sourceText)) }]);
  }
  try {
    return loadYaml(sourceText, { filename: displayName, maxAliases: MAX_YAML_ALIASES, maxDepth: MAX_YAML_DEPTH });
  } catch (error) {
    // js-yaml documents that loading may throw more than YAMLException on hostile input (its safety notes).
    const reason =
      error instanceof YAMLException ? error.reason : error instanceof Error ? error.message : String(error);
    const mark = error instanceof YAMLException ? error.mark : undefined;
    const where = mark ? ` at line ${mark.line + 1}, column ${mark.column + 1}` : "";
    throw new ConfigError(displayName, [{ path: "", message: `not valid YAML${where}: ${reason}` }]);
  }
}
