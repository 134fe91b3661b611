/**
 * Reads a campaign file: the one place YAML is parsed. Turns the text into typed, defaulted values
 * (./schema.ts) and resolves what depends on the file system: relative paths and the SSH public key.
 */
import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, isAbsolute, resolve } from "node:path";
import { load as loadYaml, YAMLException } from "js-yaml";
import { ConfigError } from "../errors.ts";
import { validateCampaign, type AwsTestbed, type CampaignFile, type LocalTestbed } from "./schema.ts";

/** A loaded campaign: paths absolute, the AWS public key read into `sshPublicKey`. */
export interface Campaign extends CampaignFile {
  /** Absolute path of the file it came from. */
  readonly sourceFile: string;
  /** The file's text, kept so results can record exactly what was run. */
  readonly sourceText: string;
}

const PUBLIC_KEY_PATTERN = /^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp\d+|sk-ssh-ed25519@openssh\.com) [A-Za-z0-9+/=]+/;

export interface LoadOptions {
  /**
   * Read the AWS SSH public key file (default true). Planning needs no key, so `ringlab plan` works before
   * one exists; anything that provisions does.
   */
  readonly readKeys?: boolean;
}

export function loadCampaignFile(path: string, options: LoadOptions = {}): Campaign {
  const sourceFile = resolve(path);
  let sourceText: string;
  try {
    sourceText = readFileSync(sourceFile, "utf8");
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code === "ENOENT" ? "file not found" : String(error);
    throw new ConfigError(path, [{ path: "", message: `${reason}; expected a campaign YAML file (see campaigns/ for examples)` }]);
  }
  return parseCampaign(sourceText, path, sourceFile, options);
}

/** Parses campaign text; `displayName` is how errors name the file. */
export function parseCampaign(sourceText: string, displayName: string, sourceFile = resolve(displayName), options: LoadOptions = {}): Campaign {
  let document: unknown;
  try {
    document = loadYaml(sourceText, { filename: displayName });
  } catch (error) {
    if (!(error instanceof YAMLException)) throw error;
    const where = error.mark ? ` at line ${error.mark.line + 1}, column ${error.mark.column + 1}` : "";
    throw new ConfigError(displayName, [{ path: "", message: `not valid YAML${where}: ${error.reason}` }]);
  }
  const result = validateCampaign(document);
  if (!result.ok) throw new ConfigError(displayName, result.problems);

  const baseDir = dirname(sourceFile);
  const testbed = result.value.testbed.target === "aws"
    ? resolveAwsTestbed(result.value.testbed, baseDir, displayName, options.readKeys ?? true)
    : resolveLocalTestbed(result.value.testbed, baseDir);
  return { ...result.value, testbed, sourceFile, sourceText };
}

function resolveLocalTestbed(tb: LocalTestbed, baseDir: string): LocalTestbed {
  return tb.sharedDir === undefined ? tb : { ...tb, sharedDir: resolvePath(tb.sharedDir, baseDir) };
}

function resolveAwsTestbed(tb: AwsTestbed, baseDir: string, displayName: string, readKeys: boolean): AwsTestbed {
  let sshPublicKey = tb.sshPublicKey?.trim();
  let sshPublicKeyFile = tb.sshPublicKeyFile;
  let sshPrivateKeyFile = tb.sshPrivateKeyFile === undefined ? undefined : resolvePath(tb.sshPrivateKeyFile, baseDir);
  let keyField = "testbed.sshPublicKey";
  if (sshPublicKeyFile !== undefined) {
    keyField = "testbed.sshPublicKeyFile";
    sshPublicKeyFile = resolvePath(sshPublicKeyFile, baseDir);
    sshPrivateKeyFile ??= sshPublicKeyFile.replace(/\.pub$/, "");
    if (!readKeys) return { ...tb, sshPublicKeyFile, sshPrivateKeyFile };
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
  if (sshPublicKey === undefined || !PUBLIC_KEY_PATTERN.test(sshPublicKey)) {
    throw new ConfigError(displayName, [{
      path: keyField,
      message: "expected an OpenSSH public key (\"ssh-ed25519 AAAA...\"); a private key or other text was found",
    }]);
  }
  const workerImageTarball = tb.workerImageTarball === undefined ? undefined : resolvePath(tb.workerImageTarball, baseDir);
  return { ...tb, sshPublicKey, sshPublicKeyFile, sshPrivateKeyFile, workerImageTarball };
}

function resolvePath(path: string, baseDir: string): string {
  if (path === "~" || path.startsWith("~/")) return resolve(homedir(), path.slice(2));
  return isAbsolute(path) ? path : resolve(baseDir, path);
}
