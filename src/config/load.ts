/**
 * Reads a campaign file: the one place YAML is parsed. Turns the text into typed, defaulted values
 * (./schema.ts) and resolves what depends on the file system: relative paths and the SSH public key.
 */
import { existsSync, readFileSync, realpathSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { basename, dirname, isAbsolute, join, resolve } from "node:path";
import { load as loadYaml, YAMLException } from "js-yaml";
import { ConfigError } from "../errors.ts";
import { campaignNameOf, checkCampaignName } from "../rules/names.ts";
import { checkSafeResolvedPath, checkSharedDirLocation } from "../rules/safe-text.ts";
import { checkSshPublicKey } from "../rules/ssh-key.ts";
import { unsafeFolderProblem } from "../util/fs.ts";
import { validateCampaign, type AwsTestbed, type CampaignFile, type KubernetesCampaignFile, type LocalTestbed } from "./schema.ts";

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
    throw new ConfigError(path, [{ path: "", message: `${reason}; expected a campaign YAML file (see campaigns/ for examples)` }]);
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

const KUBERNETES_NOT_HERE = "kubernetes: this command works on a testbed ringlab brings up (local, aws); on a Kubernetes cluster " +
  "`ringlab plan <file>` lists the runs, `ringlab campaign <file>` runs them (each a Job), `ringlab manifests <file>` writes their objects " +
  "for `kubectl apply -f` and `ringlab down <file>` deletes what a killed campaign left";

/** Parses campaign text; `displayName` is how errors name the file. A Kubernetes campaign is refused (exit 2). */
export function parseCampaign(sourceText: string, displayName: string, sourceFile = resolve(displayName), options: LoadOptions = {}): LoadedCampaignFile {
  const file = parseAnyCampaign(sourceText, displayName, sourceFile, options);
  if (file.testbed.target === "kubernetes") throw new ConfigError(displayName, [{ path: "testbed.target", message: KUBERNETES_NOT_HERE }]);
  return file as LoadedCampaignFile;
}

/** Reads a campaign file of any target: the commands that serve Kubernetes campaigns too (campaign, down). */
export function loadAnyCampaignFile(path: string, options: LoadOptions = {}): LoadedCampaignFile | LoadedKubernetesCampaignFile {
  return readCampaignText(path, (sourceText, sourceFile) => parseAnyCampaign(sourceText, path, sourceFile, options));
}

export function isKubernetesCampaign(file: LoadedCampaignFile | LoadedKubernetesCampaignFile): file is LoadedKubernetesCampaignFile {
  return file.testbed.target === "kubernetes";
}

/** Reads a Kubernetes campaign file for `ringlab manifests`; another target is exit 2. */
export function loadKubernetesCampaignFile(path: string): LoadedKubernetesCampaignFile {
  const file = loadAnyCampaignFile(path, { readKeys: false });
  if (file.testbed.target !== "kubernetes") {
    throw new ConfigError(path, [{ path: "testbed.target", message: `found ${file.testbed.target}, expected kubernetes: \`ringlab manifests\` writes a Kubernetes campaign's Jobs; \`ringlab plan\` shows what a ${file.testbed.target} campaign runs` }]);
  }
  return file as LoadedKubernetesCampaignFile;
}

function parseAnyCampaign(sourceText: string, displayName: string, sourceFile: string, options: LoadOptions): LoadedCampaignFile | LoadedKubernetesCampaignFile {
  const document = parseYaml(sourceText, displayName);
  const result = validateCampaign(document);
  if (!result.ok) throw new ConfigError(displayName, result.problems);
  const nameProblem = checkCampaignName(campaignNameOf(sourceFile));
  if (nameProblem !== undefined) {
    throw new ConfigError(displayName, [{
      path: "",
      message: `the file name gives the campaign its name (results directory, AWS tags): found ${JSON.stringify(campaignNameOf(sourceFile))}, ` +
        `${nameProblem}; rename the file`,
    }]);
  }

  const baseDir = dirname(sourceFile);
  // Relative paths in the file resolve against its folder: the folder's name ends up in them.
  const checkFolders = options.checkFolders ?? true;
  const folderProblem = checkFolders ? checkSafeResolvedPath(baseDir) : undefined;
  if (folderProblem !== undefined) {
    throw new ConfigError(displayName, [{
      path: "",
      message: `the campaign file's folder ${JSON.stringify(baseDir)}: ${folderProblem}; move the file to a folder whose path has none of them`,
    }]);
  }
  const tb = result.value.testbed;
  // A Kubernetes testbed names no path on this machine: nothing to resolve.
  if (tb.target === "kubernetes") return { ...result.value, testbed: tb, sourceFile, sourceText };
  const testbed = tb.target === "aws"
    ? resolveAwsTestbed(tb, baseDir, displayName, options.readKeys ?? true)
    : resolveLocalTestbed(tb, baseDir, displayName, checkFolders);
  return { ...result.value, testbed, sourceFile, sourceText };
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
    const reason = error instanceof YAMLException ? error.reason : error instanceof Error ? error.message : String(error);
    const mark = error instanceof YAMLException ? error.mark : undefined;
    const where = mark ? ` at line ${mark.line + 1}, column ${mark.column + 1}` : "";
    throw new ConfigError(displayName, [{ path: "", message: `not valid YAML${where}: ${reason}` }]);
  }
}

function resolveLocalTestbed(tb: LocalTestbed, baseDir: string, displayName: string, checkFolders: boolean): LocalTestbed {
  if (tb.sharedDir === undefined) return tb;
  const sharedDir = resolvePath(tb.sharedDir, baseDir);
  const problem = checkSharedDirLocation(realLocation(sharedDir), homedir()) ?? (checkFolders ? checkSafeResolvedPath(sharedDir) : undefined);
  if (problem !== undefined) {
    throw new ConfigError(displayName, [{ path: "testbed.sharedDir", message: `found ${JSON.stringify(tb.sharedDir)}, ${problem}` }]);
  }
  // Every node mounts it read-write as root: whoever else can write it, or a folder above it, decides what they read.
  const ownership = checkFolders ? unsafeFolderProblem(sharedDir) : undefined;
  if (ownership !== undefined) throw new ConfigError(displayName, [{ path: "testbed.sharedDir", message: ownership }]);
  return { ...tb, sharedDir };
}

/** An absolute path with the symbolic links of its existing part resolved (the rest need not exist yet). */
function realLocation(path: string): string {
  const missing: string[] = [];
  let existing = path;
  while (!existsSync(existing) && dirname(existing) !== existing) {
    missing.unshift(basename(existing));
    existing = dirname(existing);
  }
  try {
    return join(realpathSync(existing), ...missing);
  } catch {
    return path;
  }
}

function resolveAwsTestbed(tb: AwsTestbed, baseDir: string, displayName: string, readKeys: boolean): AwsTestbed {
  let sshPublicKey = tb.sshPublicKey?.trim();
  let sshPublicKeyFile = tb.sshPublicKeyFile;
  let sshPrivateKeyFile = tb.sshPrivateKeyFile === undefined ? undefined : resolvePath(tb.sshPrivateKeyFile, baseDir);
  let keyField = "testbed.sshPublicKey";
  const workerImageTarball = tb.workerImageTarball === undefined ? undefined : resolvePath(tb.workerImageTarball, baseDir);
  if (readKeys && workerImageTarball !== undefined) checkTarball(workerImageTarball, displayName);
  if (sshPublicKeyFile !== undefined) {
    keyField = "testbed.sshPublicKeyFile";
    sshPublicKeyFile = resolvePath(sshPublicKeyFile, baseDir);
    sshPrivateKeyFile ??= sshPublicKeyFile.replace(/\.pub$/, "");
    if (!readKeys) return { ...tb, sshPublicKeyFile, sshPrivateKeyFile, workerImageTarball };
    try {
      sshPublicKey = readFileSync(sshPublicKeyFile, "utf8").trim();
    } catch {
      throw new ConfigError(displayName, [{
        path: keyField,
        message: `cannot read ${sshPublicKeyFile}; expected an OpenSSH public key file ` +
          "(create one with: ssh-keygen -t ed25519 -f ~/.ssh/ringlab)",
      }]);
    }
  }
  const keyProblem = sshPublicKey === undefined ? "missing: expected an OpenSSH public key" : checkSshPublicKey(sshPublicKey);
  if (keyProblem !== undefined) throw new ConfigError(displayName, [{ path: keyField, message: keyProblem }]);
  return { ...tb, sshPublicKey, sshPublicKeyFile, sshPrivateKeyFile, workerImageTarball };
}

/** A missing tarball would otherwise fail the first configure, after the instances were paid for. */
function checkTarball(path: string, displayName: string): void {
  const message = tarballProblem(path);
  if (message !== undefined) throw new ConfigError(displayName, [{ path: "testbed.workerImageTarball", message }]);
}

/** Why `path` cannot be the worker image tarball, or undefined when it is a file. Shared with the AWS preflight. */
export function tarballProblem(path: string): string | undefined {
  let isFile: boolean;
  try {
    isFile = statSync(path).isFile();
  } catch {
    return `cannot read ${path}; expected a \`docker save\` archive of the worker image (or leave workerImageTarball out: the nodes then build the image themselves)`;
  }
  return isFile ? undefined : `${path} is not a file; expected a \`docker save\` archive of the worker image`;
}

function resolvePath(path: string, baseDir: string): string {
  if (path === "~" || path.startsWith("~/")) return resolve(homedir(), path.slice(2));
  return isAbsolute(path) ? path : resolve(baseDir, path);
}
