/**
 * Where the programs ringlab runs are found (docker, ansible-playbook, terraform, ssh-keygen, bash), and the PATH
 * that everything they start in turn searches. ringlab often runs as root: a program found in a folder someone else
 * can write is theirs to choose. npm puts the `node_modules/.bin` of every folder above ringlab's on the PATH of
 * `npx ringlab` and `npm run`, so a checkout below a folder others can write (a folder under /tmp) would run their
 * `docker`. Each program is resolved once, to an absolute path, from the PATH without those entries.
 */
import { accessSync, constants, realpathSync, statSync } from "node:fs";
import { basename, delimiter, dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { trustedProgramProblem } from "../rules/ownership.ts";
import { callerUid, pathFacts, programFolderProblem } from "../util/fs.ts";

/** ringlab's checkout: its own node_modules/.bin stays on the PATH. */
const CHECKOUT_DIR = fileURLToPath(new URL("../..", import.meta.url));

export interface LeftOutEntry {
  readonly entry: string;
  readonly why: string;
}

export interface SearchPath {
  /** The PATH entries kept, in their order. */
  readonly entries: readonly string[];
  readonly leftOut: readonly LeftOutEntry[];
}

function realOrSelf(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

function isInside(path: string, folder: string): boolean {
  const way = relative(folder, path);
  return way === "" || (!way.startsWith(`..${sep}`) && way !== ".." && !isAbsolute(way));
}

/** Why a PATH entry may hold someone else's programs, or undefined when it may be searched. */
function entryProblem(entry: string, checkoutDir: string, uid: number | undefined): string | undefined {
  if (!isAbsolute(entry)) return "not an absolute path (it would be looked up from the working directory)";
  const real = realOrSelf(entry);
  if (basename(entry) === ".bin" && basename(dirname(entry)) === "node_modules" && !isInside(real, checkoutDir))
    return "npm's node_modules/.bin of a folder outside ringlab's (npm puts every parent folder's there)";
  return programFolderProblem(entry, uid);
}

/** PATH without the entries whose programs could be someone else's; `checkoutDir` is ringlab's own folder. */
export function trustedSearchPath(
  pathVariable: string | undefined,
  checkoutDir: string = CHECKOUT_DIR,
  uid: number | undefined = callerUid(),
): SearchPath {
  const checkout = realOrSelf(resolve(checkoutDir));
  const entries: string[] = [];
  const leftOut: LeftOutEntry[] = [];
  for (const entry of (pathVariable ?? "").split(delimiter)) {
    if (entry === "" || entries.includes(entry)) continue;
    const why = entryProblem(entry, checkout, uid);
    if (why === undefined) entries.push(entry);
    else leftOut.push({ entry, why });
  }
  return { entries, leftOut };
}

/** The PATH every program ringlab starts gets (and ringlab itself, from the CLI's start on): the trusted entries. */
export function trustedPathVariable(pathVariable: string | undefined = process.env["PATH"]): string {
  return trustedSearchPath(pathVariable).entries.join(delimiter);
}

/** Why the executable at `path` (links followed) could be someone else's, or undefined. */
function programProblem(path: string, uid: number | undefined): string | undefined {
  if (uid === undefined) return undefined;
  const real = realpathSync(path);
  const facts = pathFacts(real)!;
  return trustedProgramProblem(facts, uid) ?? programFolderProblem(dirname(real), uid);
}

function isExecutableFile(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

export interface FoundProgram {
  /** Its absolute path; undefined when no trusted folder holds it. */
  readonly path: string | undefined;
  /** The copies of the program that were not taken, each with why. */
  readonly passedOver: readonly LeftOutEntry[];
}

/**
 * The program `name` as ringlab runs it: a name with a slash as given (made absolute), else the first executable of
 * that name in a trusted PATH entry that is itself owned by root or the caller and writable by nobody else.
 */
export function findProgram(
  name: string,
  pathVariable: string | undefined = process.env["PATH"],
  checkoutDir: string = CHECKOUT_DIR,
  uid: number | undefined = callerUid(),
): FoundProgram {
  if (name.includes("/")) return { path: resolve(name), passedOver: [] };
  const search = trustedSearchPath(pathVariable, checkoutDir, uid);
  // Only the left-out entries that hold such a program are worth naming.
  const passedOver: LeftOutEntry[] = search.leftOut
    .filter(({ entry }) => isAbsolute(entry) && isExecutableFile(join(entry, name)))
    .map(({ entry, why }) => ({ entry: join(entry, name), why }));
  for (const entry of search.entries) {
    const candidate = join(entry, name);
    if (!isExecutableFile(candidate)) continue;
    const why = programProblem(candidate, uid);
    if (why === undefined) return { path: candidate, passedOver };
    passedOver.push({ entry: candidate, why });
  }
  return { path: undefined, passedOver };
}

const found = new Map<string, FoundProgram>();

/** findProgram, looked up once per program and PATH for the life of the process. */
export function programPath(name: string): FoundProgram {
  const key = `${name}\0${process.env["PATH"] ?? ""}`;
  let program = found.get(key);
  if (program === undefined) {
    program = findProgram(name);
    found.set(key, program);
  }
  return program;
}
