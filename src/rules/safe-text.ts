/**
 * Safe shapes for free text that ends up in paths, shell words, `docker run` arguments, Ansible variables or
 * AWS tags. Ansible templates every string it is given, so `{{ lookup('pipe', 'id') }}` in a path would run
 * on the controller; `docker --mount type=bind,source=<path>` splits on commas. Each rule is an allow-list or
 * a short deny-list with the reason above it. Pure.
 */

/**
 * Characters a path may not hold: Jinja delimiters and `%` (Ansible templating), `,` (docker --mount
 * fields), quotes, `\`, `$` and backticks (shell quoting and expansion), `;&|<>` (shell control), `*?`
 * (globs). Control characters (newline, NUL, ...) are refused separately.
 */
export const PATH_FORBIDDEN_CHARACTERS = "{}%,$`\\'\";&|<>*?";
export const PATH_MAX_LENGTH = 1024;

/**
 * A file or directory path from a campaign file or the command line (sharedDir, resultsDir,
 * workerImageTarball, key files, --results, --out). Relative paths and `~/` are fine; a leading `-`
 * is refused so that no tool reads the path as an option.
 */
export function checkSafePath(value: string): string | undefined {
  const rule = `expected a path without control characters, a leading "-" or any of ${PATH_FORBIDDEN_CHARACTERS}`;
  if (value.length === 0) return "expected a path, found empty text";
  if (value.length > PATH_MAX_LENGTH) return `expected a path of at most ${PATH_MAX_LENGTH} characters`;
  if (value.startsWith("-") || hasControlCharacter(value)) return rule;
  const forbidden = [...value].find((character) => PATH_FORBIDDEN_CHARACTERS.includes(character));
  return forbidden === undefined ? undefined : `${rule} (found ${JSON.stringify(forbidden)})`;
}

export interface ResolvedPathOptions {
  /**
   * The path goes into an ssh option (UserKnownHostsFile= in ansible_ssh_common_args, which Ansible splits on
   * spaces; ControlPath=, quoted): spaces and other white space are refused too. @default false
   */
  readonly sshOption?: boolean;
}

/**
 * A path as ringlab will use it, after `~`, relative parts, the working directory and environment variables were
 * resolved (the campaign file's folder, the state folder, a shared directory, the SSH sockets' folder): absolute,
 * and the checkSafePath rule applied to the whole of it, since a folder's name can break a line the text never
 * showed.
 */
export function checkSafeResolvedPath(path: string, options: ResolvedPathOptions = {}): string | undefined {
  if (!path.startsWith("/")) return `expected an absolute path, found ${JSON.stringify(path)}`;
  const problem = checkSafePath(path);
  if (problem !== undefined) return problem;
  if (options.sshOption === true && /\s/u.test(path)) {
    return "expected a path without spaces: it goes into ssh's options (UserKnownHostsFile, ControlPath), which split on them";
  }
  return undefined;
}

/** System folders: a node container, root inside, must never write into them through a bind mount. */
const SYSTEM_TREES = [
  "/bin",
  "/boot",
  "/dev",
  "/etc",
  "/lib",
  "/lib32",
  "/lib64",
  "/libx32",
  "/proc",
  "/run",
  "/sbin",
  "/sys",
  "/usr",
];
/** Folders that may hold a shared directory, but are never one: mounting them would hand the nodes their siblings. */
const SYSTEM_PARENTS = ["/", "/home", "/root", "/var", "/var/lib", "/tmp", "/opt", "/srv", "/mnt", "/media"];

/**
 * Where a local testbed's shared directory may be: every node container mounts it read-write and writes to it as
 * root, so it must not be a system folder, lie inside one, or be a folder that holds others' files (`/`, `/home`,
 * the user's home). `path` is absolute, with symbolic links resolved; `home` is the user's home directory.
 */
export function checkSharedDirLocation(path: string, home: string): string | undefined {
  const rule =
    "expected a folder of its own for the nodes' shared files, such as /data/ringlab-shared or ~/ringlab-shared";
  const inside = SYSTEM_TREES.find((tree) => path === tree || path.startsWith(`${tree}/`));
  if (inside !== undefined) return `${rule}, not inside the system folder ${inside}`;
  if (SYSTEM_PARENTS.includes(path) || path === home)
    return `${rule}, not ${path} itself, which every node could then write`;
  return undefined;
}

/**
 * A Docker image reference (distribution/reference grammar): `[registry[:port]/]path[:tag][@digest]`,
 * path components lower case, at most 255 characters in the name. IPv6 registry hosts are not accepted.
 */
const DOMAIN_COMPONENT = "(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])";
const DOMAIN = `${DOMAIN_COMPONENT}(?:\\.${DOMAIN_COMPONENT})*(?::[0-9]+)?`;
const PATH_COMPONENT = "[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*";
const IMAGE_NAME = `(?:${DOMAIN}/)?${PATH_COMPONENT}(?:/${PATH_COMPONENT})*`;
const IMAGE_REFERENCE_PATTERN = new RegExp(
  `^(${IMAGE_NAME})(?::[\\w][\\w.-]{0,127})?(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?$`,
);

export function checkDockerImageReference(value: string): string | undefined {
  const match = IMAGE_REFERENCE_PATTERN.exec(value);
  if (match === null) {
    return (
      "expected a Docker image reference such as ringlab/worker:gpu or registry.example.com:5000/team/worker:1.2 " +
      "(lower-case name, optional :tag and @sha256:digest)"
    );
  }
  return match[1]!.length > 255 ? "expected a Docker image name of at most 255 characters" : undefined;
}

const UNIX_USER_PATTERN = /^[a-z_][a-z0-9_-]{0,31}$/;

/** A login name on the nodes (useradd's default rule, NAME_REGEX). */
export function checkUnixUserName(value: string): string | undefined {
  return UNIX_USER_PATTERN.test(value)
    ? undefined
    : "expected a user name: a lower-case letter or _, then up to 31 lower-case letters, digits, _ or -";
}

const S3_BUCKET_PATTERN = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

/** S3 general-purpose bucket naming rules, without the reserved prefixes and suffixes. */
export function checkS3BucketName(value: string): string | undefined {
  const rule =
    "expected an S3 bucket name: 3-63 lower-case letters, digits, dots or dashes, starting and ending with a letter or digit";
  if (!S3_BUCKET_PATTERN.test(value)) return rule;
  if (value.includes("..") || /^\d+\.\d+\.\d+\.\d+$/.test(value))
    return `${rule}, without ".." and not shaped like an IP address`;
  return undefined;
}

const S3_KEY_PATTERN = /^[A-Za-z0-9!_.()=+-]+(?:\/[A-Za-z0-9!_.()=+-]+)*$/;

/** An S3 object key for Terraform state: AWS's "safe characters" minus `*` and `'`, segments separated by `/`. */
export function checkS3Key(value: string): string | undefined {
  if (value.length > 1024) return "expected an S3 key of at most 1024 characters";
  if (!S3_KEY_PATTERN.test(value) || value.split("/").some((segment) => segment === "." || segment === "..")) {
    return "expected an S3 key such as ringlab/scale.tfstate: letters, digits and !_.()=+- in segments separated by /, no . or .. segments";
  }
  return undefined;
}

/** The characters AWS accepts in tags across services: letters, digits, spaces and `_ . : / = + - @`. */
const TAG_TEXT_PATTERN = /^[\p{L}\p{N} _.:/=+\-@]*$/u;

export function checkTagKey(key: string): string | undefined {
  if (key.length < 1 || key.length > 128) return "expected a tag key of 1-128 characters";
  if (key.trim() !== key) return "expected a tag key without leading or trailing spaces";
  return TAG_TEXT_PATTERN.test(key) ? undefined : "expected a tag key of letters, digits, spaces and _ . : / = + - @";
}

export function checkTagValue(value: string): string | undefined {
  if (value.length > 256) return "expected a tag value of at most 256 characters";
  return TAG_TEXT_PATTERN.test(value)
    ? undefined
    : "expected a tag value of letters, digits, spaces and _ . : / = + - @";
}

const WORKER_ARG_PATTERN = /^[A-Za-z0-9_.:=/+@-]{1,256}$/;

/**
 * One argument passed to the worker (`ringlab run -- <worker args>`): it travels through Ansible variables
 * and `docker run`, so only option names and plain values are let through.
 */
export function checkSafeWorkerArg(value: string): string | undefined {
  if (!WORKER_ARG_PATTERN.test(value))
    return "expected a worker argument of 1-256 letters, digits or _ . : = / + @ - (such as --batch-size or 32)";
  // mpirun and srun read a word of colons as the start of another program to launch (as root, on the nodes).
  return /^:+$/.test(value)
    ? "expected a worker argument, not a bare ':' (mpirun and srun read it as the start of another program)"
    : undefined;
}

function hasControlCharacter(value: string): boolean {
  return /\p{Cc}/u.test(value);
}
