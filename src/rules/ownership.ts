/**
 * Who may change a folder ringlab uses, from its owner and mode: on a machine with other users, a folder someone
 * else can write (or own) lets them swap what the nodes mount, read or write as root, or take over ringlab's SSH
 * connections. The file system is read elsewhere (src/util/fs.ts); these rules only judge what was read. Pure.
 */

/** What lstat said about one path. */
export interface PathFacts {
  readonly path: string;
  readonly uid: number;
  /** st_mode: type and permission bits. */
  readonly mode: number;
  readonly kind: "folder" | "symlink" | "other";
}

const GROUP_OR_OTHER_WRITE = 0o022;
const GROUP_OR_OTHER_ANY = 0o077;
const STICKY = 0o1000;
const ROOT = 0;

/** `0755`, `1777`: the permission bits as chmod takes them. */
export function modeText(mode: number): string {
  return (mode & 0o7777).toString(8).padStart(4, "0");
}

function described(facts: PathFacts): string {
  return `${facts.path} (owner uid ${facts.uid}, mode ${modeText(facts.mode)})`;
}

/**
 * A folder ringlab hands to others to write in for the user (the local testbed's shared directory, the state
 * folder): it must be a folder the caller owns that only its owner can write. Undefined when it is.
 */
export function ownFolderProblem(facts: PathFacts, callerUid: number): string | undefined {
  if (facts.kind !== "folder") return `${facts.path} is not a folder; expected a folder you own`;
  if (facts.uid !== callerUid) {
    return (
      `${described(facts)} is not owned by you (uid ${callerUid}), so its owner can change what ringlab finds there; ` +
      "pick a folder you own"
    );
  }
  if ((facts.mode & GROUP_OR_OTHER_WRITE) !== 0) {
    return (
      `${described(facts)} can be written by other users, who could then replace what ringlab finds there; ` +
      `fix it with \`chmod go-w ${facts.path}\`, or pick a folder you own that only you can write`
    );
  }
  return undefined;
}

/**
 * A folder or file whose programs ringlab runs as its user (a PATH entry, a tool in it, the bundled Node.js): owned by
 * root or the caller, and writable by nobody else, or whoever can write it runs code as the caller. Undefined when
 * it is.
 */
export function trustedProgramProblem(facts: PathFacts, callerUid: number): string | undefined {
  if (facts.uid !== ROOT && facts.uid !== callerUid)
    return `${described(facts)} is owned by another user, who could put a program of theirs there`;
  if ((facts.mode & GROUP_OR_OTHER_WRITE) !== 0)
    return `${described(facts)} can be written by other users, who could put a program of theirs there`;
  return undefined;
}

/**
 * A folder on the way to one ringlab uses: nobody but root and the caller may be able to rename or replace `next`
 * (the path's next component inside it; undefined when it does not exist yet, and ringlab creates it). A folder
 * others may write is fine only with the sticky bit (like /tmp) and `next` absent or owned by the caller or root.
 */
export function parentFolderProblem(
  folder: PathFacts,
  next: PathFacts | undefined,
  callerUid: number,
): string | undefined {
  const below = next === undefined ? "what ringlab creates in it" : next.path;
  if (folder.uid !== ROOT && folder.uid !== callerUid) {
    return `${described(folder)} is owned by another user, who could replace ${below}; pick a folder whose parents only you or root own`;
  }
  if ((folder.mode & GROUP_OR_OTHER_WRITE) === 0) return undefined;
  const sticky = (folder.mode & STICKY) !== 0;
  if (sticky && (next === undefined || next.uid === callerUid || next.uid === ROOT)) return undefined;
  const why = sticky
    ? `${next!.path} in it is owned by uid ${next!.uid}, not by you (uid ${callerUid})`
    : `other users can write it and so replace ${below}`;
  return (
    `${described(folder)}: ${why}; fix it with \`chmod go-w ${folder.path}\` (or \`chmod +t\` for a shared folder like /tmp), ` +
    "or pick a folder you own"
  );
}

/**
 * A folder only its owner, the caller, may use at all (SSH control sockets): no symbolic link, no group or other bits.
 */
export function privateFolderProblem(facts: PathFacts, callerUid: number): string | undefined {
  if (facts.kind === "symlink")
    return `${facts.path} is a symbolic link; expected a folder ringlab created for you alone`;
  if (facts.kind !== "folder") return `${facts.path} is not a folder; expected a folder ringlab created for you alone`;
  if (facts.uid !== callerUid) return `${described(facts)} is not owned by you (uid ${callerUid})`;
  if ((facts.mode & GROUP_OR_OTHER_ANY) !== 0)
    return `${described(facts)} can be used by other users; expected mode 0700`;
  return undefined;
}
