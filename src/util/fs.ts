import {
  accessSync,
  chmodSync,
  constants,
  existsSync,
  lstatSync,
  mkdirSync,
  readlinkSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { dirname, join, basename, resolve, sep } from "node:path";
import {
  ownFolderProblem,
  parentFolderProblem,
  privateFolderProblem as privateFolderRule,
  trustedProgramProblem,
  type PathFacts,
} from "../rules/ownership.ts";

/** Files of ringlab's state are its user's alone: records, specs and logs hold paths, addresses and keys. */
export const PRIVATE_FILE_MODE = 0o600;
export const PRIVATE_FOLDER_MODE = 0o700;

/**
 * Writes a file so readers see the old or the new content, never a part: temp file, then rename. The file gets
 * `mode` (default: as the umask says, for results and reports others may read); folders it creates get 0700.
 */
export function writeFileAtomic(path: string, content: string, mode?: number): void {
  mkdirSync(dirname(path), { recursive: true, mode: PRIVATE_FOLDER_MODE });
  const temp = join(dirname(path), `.${basename(path)}.${process.pid}.tmp`);
  // A temp file left by a crashed process with the same id is removed; "wx" then never follows a planted link.
  rmSync(temp, { force: true });
  writeFileSync(temp, content, { ...(mode === undefined ? {} : { mode }), flag: "wx" });
  renameSync(temp, path);
}

/** writeFileAtomic for ringlab's state (records, specs, inventories, stack outputs): its user's alone (0600). */
export function writePrivateFile(path: string, content: string): void {
  writeFileAtomic(path, content, PRIVATE_FILE_MODE);
}

/**
 * Makes sure `dir` is (or can become) a folder this process can write, before any expensive work starts.
 * Returns the problem in words, or undefined when it is fine.
 */
export function writableDirProblem(dir: string): string | undefined {
  let probe = dir;
  while (!existsSync(probe)) {
    const parent = dirname(probe);
    if (parent === probe) break;
    probe = parent;
  }
  if (!statSync(probe).isDirectory()) return `${probe} is a file, not a folder`;
  try {
    accessSync(probe, constants.W_OK);
  } catch {
    return `${probe} cannot be written by this user`;
  }
  return undefined;
}

/** The user ringlab runs as; undefined where there are no user ids (Windows), and the ownership checks do not apply. */
export function callerUid(): number | undefined {
  return process.getuid?.();
}

/** What lstat says about `path` (a symbolic link itself, not what it points to); undefined when nothing is there. */
export function pathFacts(path: string): PathFacts | undefined {
  try {
    const stats = lstatSync(path);
    return {
      path,
      uid: stats.uid,
      mode: stats.mode,
      kind: stats.isSymbolicLink() ? "symlink" : stats.isDirectory() ? "folder" : "other",
    };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return undefined;
    throw error;
  }
}

const MAX_LINKS_FOLLOWED = 16;

/**
 * Why nobody but the caller (and root) should be trusted with the folder at `path`, or undefined: when it exists
 * it must be a folder the caller owns that others cannot write (rules/ownership.ts ownFolderProblem), and every
 * existing folder from / down to it (symbolic links followed, each link owned by the caller or root) must keep
 * others from replacing the next one (parentFolderProblem). A part that does not exist yet is what ringlab creates.
 */
export function unsafeFolderProblem(path: string, uid: number | undefined = callerUid()): string | undefined {
  return uid === undefined ? undefined : chainProblem(resolve(path), uid, 0, ownFolderProblem);
}

/**
 * Why the programs in the folder at `path` could be someone else's, or undefined: it must be a folder owned by root or
 * the caller that nobody else can write (trustedProgramProblem), on a way from / that others cannot change
 * (parentFolderProblem, as unsafeFolderProblem). A folder that does not exist holds no program and has no problem.
 */
export function programFolderProblem(path: string, uid: number | undefined = callerUid()): string | undefined {
  return uid === undefined ? undefined : chainProblem(resolve(path), uid, 0, trustedProgramProblem);
}

function chainProblem(
  absolute: string,
  uid: number,
  linksFollowed: number,
  lastFolderProblem: (facts: PathFacts, uid: number) => string | undefined,
): string | undefined {
  const parts = absolute.split(sep).filter((part) => part.length > 0);
  let current = pathFacts(sep)!;
  for (const [index, part] of parts.entries()) {
    const next = pathFacts(join(current.path, part));
    const problem = parentFolderProblem(current, next, uid);
    if (problem !== undefined || next === undefined) return problem;
    if (next.kind === "symlink") {
      if (linksFollowed >= MAX_LINKS_FOLLOWED)
        return `${absolute}: more than ${MAX_LINKS_FOLLOWED} symbolic links on the way`;
      const target = resolve(current.path, readlinkSync(next.path));
      return chainProblem(join(target, ...parts.slice(index + 1)), uid, linksFollowed + 1, lastFolderProblem);
    }
    if (next.kind !== "folder") return `${next.path} is not a folder`;
    current = next;
  }
  return lastFolderProblem(current, uid);
}

/**
 * Why ringlab must not write results into `dir` (`campaign --results`, `run --out`, `report`), or undefined: it must
 * be a folder this process can write (or make), and, as the shared folder, one nobody else can write, nor any folder
 * above it (unsafeFolderProblem): they could forge records, or swap a run's folder for a link to one of yours.
 */
export function resultsFolderProblem(dir: string, uid: number | undefined = callerUid()): string | undefined {
  return writableDirProblem(dir) ?? unsafeFolderProblem(dir, uid);
}

/**
 * Creates `dir` (its parent must exist) for the caller alone, mode 0700, or checks the one there: refused when it
 * is a symbolic link, not a folder, someone else's, or open to group or others in any way, or when others could
 * replace it (unsafeFolderProblem). Returns the problem, or undefined when `dir` is ready.
 */
export function ensurePrivateFolder(dir: string, uid: number | undefined = callerUid()): string | undefined {
  let created = false;
  try {
    mkdirSync(dir, { mode: PRIVATE_FOLDER_MODE });
    created = true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
  }
  if (uid === undefined) return undefined;
  const facts = pathFacts(dir);
  if (facts === undefined) return `${dir} disappeared while ringlab created it`;
  // The umask may have taken the owner's bits too.
  if (created && facts.kind === "folder" && facts.uid === uid) chmodSync(dir, PRIVATE_FOLDER_MODE);
  return privateFolderRule(facts, uid) ?? unsafeFolderProblem(dir, uid);
}

export interface StateFolderOutcome {
  /** Why the folder cannot be used; nothing was changed. */
  readonly problem?: string;
  /** The mode it had when ringlab took group and other access away (it could only be read or entered by others). */
  readonly tightenedFrom?: number;
}

/**
 * Creates the state folder (and the folders on the way) mode 0700. One that exists must pass unsafeFolderProblem:
 * a folder others can write is refused, since they may have left files in it ringlab would trust; one they can
 * only read or enter (0755, what ringlab made before) is tightened to 0700.
 */
export function prepareStateFolder(dir: string, uid: number | undefined = callerUid()): StateFolderOutcome {
  try {
    mkdirSync(dir, { recursive: true, mode: PRIVATE_FOLDER_MODE });
  } catch (error) {
    return {
      problem: `cannot create ${dir}: ${(error as NodeJS.ErrnoException).code ?? String(error)}; expected a folder ringlab can make`,
    };
  }
  if (uid === undefined) return {};
  const problem = unsafeFolderProblem(dir, uid);
  if (problem !== undefined) return { problem };
  const mode = statSync(dir).mode;
  if ((mode & 0o077) === 0) return {};
  chmodSync(dir, PRIVATE_FOLDER_MODE);
  return { tightenedFrom: mode };
}
