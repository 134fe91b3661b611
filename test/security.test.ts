/**
 * Issue #33, safe on a machine with other users: folders someone else owns or can write are refused (the local
 * testbed's shared directory, the SSH sockets' folder, the state folder), resolved paths are checked as they will be
 * used, and what ringlab keeps in its state folder is its user's alone.
 */
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { main } from "../src/cli/main.ts";
import { loadCampaignFile, parseCampaign } from "../src/config/load.ts";
import { ConfigError, UsageError } from "../src/util/errors.ts";
import {
  CONTROL_PATH_DIR_MAX_LENGTH,
  controlPathDir,
  forgetConnections,
  preparedControlPathDir,
} from "../src/testbed/playbook.ts";
import { saveRecord, type TestbedRecord } from "../src/testbed/record.ts";
import { resolveTestbedSpec } from "../src/testbed/spec.ts";

const ROOT = process.getuid?.() === 0;
const NOBODY = 65534;

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), "ringlab-sec-"));
}

function modeOf(path: string): number {
  return statSync(path).mode & 0o7777;
}

/** A folder `name` in `parent` with `mode` (chmod, so the umask does not matter). */
function folder(parent: string, name: string, mode: number): string {
  const dir = join(parent, name);
  mkdirSync(dir);
  chmodSync(dir, mode);
  return dir;
}

const localCampaign = (sharedDir: string) => `testbed: {target: local, name: s, nodes: 1, sharedDir: "${sharedDir}"}\n`;

/** The problems loading a local campaign with this shared directory gives, or [] when it loads. */
function sharedDirProblems(sharedDir: string): string[] {
  const dir = tempDir();
  try {
    parseCampaign(localCampaign(sharedDir), "campaign.yaml", join(dir, "campaign.yaml"));
    return [];
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as ConfigError).problems.map((p) => `${p.path}: ${p.message}`);
  }
}

/** Runs the CLI in this process: its exit code and what it wrote. */
async function ringlab(args: readonly string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  const out = vi.spyOn(process.stdout, "write").mockImplementation((chunk: string | Uint8Array) => {
    stdout += String(chunk);
    return true;
  });
  const err = vi.spyOn(process.stderr, "write").mockImplementation((chunk: string | Uint8Array) => {
    stderr += String(chunk);
    return true;
  });
  try {
    const code = await main(["node", "ringlab", ...args]);
    return { code, stdout, stderr };
  } finally {
    out.mockRestore();
    err.mockRestore();
  }
}

describe("the local testbed's shared directory (item 1)", () => {
  it("refuses a folder others can write, naming it, its owner and mode, and the fix; `ringlab plan` exits 2", async () => {
    const open = folder(tempDir(), "shared", 0o777);
    expect(sharedDirProblems(open)).toEqual([
      `testbed.sharedDir: ${open} (owner uid ${process.getuid!()}, mode 0777) can be written by other users, who could then replace ` +
        `what ringlab finds there; fix it with \`chmod go-w ${open}\`, or pick a folder you own that only you can write`,
    ]);
    const dir = tempDir();
    writeFileSync(
      join(dir, "c.yaml"),
      `${localCampaign(open)}campaign:\n  matrix: {nodes: 1, model: tiny, batchSize: 8, bandwidth: unlimited}\n`,
    );
    const plan = await ringlab(["plan", join(dir, "c.yaml")]);
    expect(plan.code).toBe(2);
    expect(plan.stderr).toMatch(/testbed\.sharedDir: .*mode 0777\) can be written by other users.*chmod go-w/);
    // Teardown needs only the testbed's name (`ringlab down c.yaml`): it reads the file without the folder checks.
    expect(loadCampaignFile(join(dir, "c.yaml"), { readKeys: false, checkFolders: false }).testbed.name).toBe("s");
  });

  it("accepts a folder of the caller's that only it can write, and one still to be made", () => {
    const parent = tempDir();
    expect(sharedDirProblems(folder(parent, "shared", 0o755))).toEqual([]);
    expect(sharedDirProblems(join(parent, "not-yet", "shared"))).toEqual([]);
  });

  it("accepts a folder of the caller's inside a sticky folder anyone can write (like /tmp)", () => {
    const sticky = folder(tempDir(), "public", 0o1777);
    expect(sharedDirProblems(folder(sticky, "mine", 0o755))).toEqual([]);
    expect(sharedDirProblems(join(sticky, "to-be-made"))).toEqual([]);
  });

  it("refuses a folder inside one that anyone can write without the sticky bit: they could swap it", () => {
    const open = folder(tempDir(), "open", 0o777);
    const mine = folder(open, "mine", 0o755);
    expect(sharedDirProblems(mine)).toEqual([
      expect.stringMatching(
        new RegExp(
          `^testbed\\.sharedDir: ${open} \\(owner uid \\d+, mode 0777\\): other users can write it and so replace ${mine}; fix it with \`chmod go-w ${open}\``,
        ),
      ),
    ]);
  });

  it("refuses a folder reached through a symbolic link into a folder others can write", () => {
    const parent = tempDir();
    const open = folder(parent, "open", 0o777);
    symlinkSync(open, join(parent, "link"));
    expect(sharedDirProblems(join(parent, "link"))).toEqual([
      expect.stringMatching(/mode 0777\) can be written by other users/),
    ]);
  });

  it("refuses a folder another user owns, also in a sticky folder", () => {
    expect(ROOT, "this case gives a folder to another user (chown): run the suite as root, as .ci/run does").toBe(true);
    const theirs = folder(tempDir(), "theirs", 0o755);
    chownSync(theirs, NOBODY, NOBODY);
    expect(sharedDirProblems(theirs)).toEqual([
      `testbed.sharedDir: ${theirs} (owner uid ${NOBODY}, mode 0755) is not owned by you (uid 0), so its owner can change what ringlab finds there; ` +
        "pick a folder you own",
    ]);
    const sticky = folder(tempDir(), "public", 0o1777);
    const planted = folder(sticky, "planted", 0o755);
    chownSync(planted, NOBODY, NOBODY);
    expect(sharedDirProblems(join(planted, "shared"))).toEqual([
      expect.stringMatching(new RegExp(`${planted} in it is owned by uid ${NOBODY}, not by you`)),
    ]);
  });

  it("refuses the default shared directory in the state folder the same way when the testbed's spec is resolved (`ringlab up`)", () => {
    const testbedDir = join(tempDir(), "testbeds", "s");
    mkdirSync(testbedDir, { recursive: true });
    const shared = folder(testbedDir, "shared", 0o777);
    const testbed = parseCampaign("testbed: {target: local, name: s, nodes: 1}\n", "c.yaml").testbed;
    const resolveSpec = () => resolveTestbedSpec(testbed, { campaign: "c", testbedDir, createdAt: new Date() });
    expect(resolveSpec).toThrow(UsageError);
    expect(resolveSpec).toThrow(
      `shared directory ${shared}: ${shared} (owner uid ${process.getuid!()}, mode 0777) can be written by other users`,
    );
    chmodSync(shared, 0o755);
    expect(resolveSpec()).toMatchObject({ sharedDir: shared });
  });
});

describe("the SSH connections' folder (item 4)", () => {
  let serial = 0;
  const testbed = () =>
    ({ name: "sec", createdAt: `2025-01-01T00:00:${String(serial++).padStart(2, "0")}Z` }) as TestbedRecord;
  afterEach(() => vi.unstubAllEnvs());

  it("names the caller's uid, stays short enough for ssh's socket paths, and is made by ringlab mode 0700", () => {
    const tb = testbed();
    const dir = controlPathDir(tb);
    expect(dir).toMatch(new RegExp(`/ringlab-ssh-${process.getuid!()}-[0-9a-f]{10}$`));
    expect(dir.length).toBeLessThanOrEqual(CONTROL_PATH_DIR_MAX_LENGTH);
    expect(existsSync(dir)).toBe(false);
    expect(preparedControlPathDir(tb)).toBe(dir);
    expect(modeOf(dir)).toBe(0o700);
    expect(statSync(dir).uid).toBe(process.getuid!());
    expect(preparedControlPathDir(tb), "the folder it made itself is used again").toBe(dir);
    forgetConnections(tb);
    expect(existsSync(dir)).toBe(false);
  });

  it("refuses a folder planted at its path that others may use, and a symbolic link there", () => {
    const open = testbed();
    folder(tmpdir(), controlPathDir(open).split("/").pop()!, 0o777);
    expect(() => preparedControlPathDir(open)).toThrow(UsageError);
    expect(() => preparedControlPathDir(open)).toThrow(/mode 0777\) can be used by other users; expected mode 0700/);

    const linked = testbed();
    symlinkSync(tempDir(), controlPathDir(linked));
    expect(() => preparedControlPathDir(linked)).toThrow(/is a symbolic link/);
    const file = testbed();
    writeFileSync(controlPathDir(file), "");
    expect(() => preparedControlPathDir(file)).toThrow(/is not a folder/);
  });

  it("refuses a folder of another user's at its path, and leaves it alone when the testbed goes", () => {
    expect(ROOT, "this case gives a folder to another user (chown): run the suite as root, as .ci/run does").toBe(true);
    const tb = testbed();
    const dir = folder(tmpdir(), controlPathDir(tb).split("/").pop()!, 0o700);
    chownSync(dir, NOBODY, NOBODY);
    expect(() => preparedControlPathDir(tb)).toThrow(
      new RegExp(`\\(owner uid ${NOBODY}, mode 0700\\) is not owned by you`),
    );
    forgetConnections(tb);
    expect(existsSync(dir)).toBe(true);
  });

  it("refuses a temporary folder whose path would break ssh's options", () => {
    const odd = folder(tempDir(), "a b", 0o700);
    vi.stubEnv("TMPDIR", odd);
    expect(() => preparedControlPathDir(testbed())).toThrow(/without spaces/);
  });
});

describe("paths checked as resolved (item 6)", () => {
  it("refuses a state folder with a newline (from --state-dir or RINGLAB_STATE_DIR), and creates nothing", async () => {
    const state = join(tempDir(), "state\nx");
    const result = await ringlab(["--state-dir", state, "status"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`state folder ${JSON.stringify(state)}`);
    expect(result.stderr).toMatch(/expected a path without control characters/);
    expect(existsSync(state)).toBe(false);
  });

  it("refuses a state folder whose path has a space or a %, which ssh's options would split or expand", async () => {
    for (const name of ["my state", "state%h"]) {
      const state = join(tempDir(), name);
      const result = await ringlab(["--state-dir", state, "status"]);
      expect(result.code, name).toBe(2);
      expect(result.stderr, name).toMatch(/state folder .*expected a path without/);
      expect(existsSync(state), name).toBe(false);
    }
  });

  it("refuses a campaign file in a folder whose name breaks the path rule (relative paths resolve into it)", () => {
    for (const name of ["a%b", "a,b", 'a"b', "a\rb"]) {
      const dir = folder(tempDir(), name, 0o700);
      writeFileSync(join(dir, "c.yaml"), "testbed: {target: local, name: s, nodes: 1, sharedDir: shared}\n");
      expect(() => loadCampaignFile(join(dir, "c.yaml")), name).toThrow(ConfigError);
      expect(() => loadCampaignFile(join(dir, "c.yaml")), name).toThrow(
        /the campaign file's folder .*expected a path without/,
      );
    }
  });
});

describe("the state folder is its user's alone (item 7)", () => {
  it("is created 0700, its logs folder too, and files written into it are 0600 in folders 0700", async () => {
    const state = join(tempDir(), "state");
    const result = await ringlab(["--state-dir", state, "status"]);
    expect(result.stderr).toMatch(/no testbed is up here/);
    expect(modeOf(state)).toBe(0o700);
    expect(modeOf(join(state, "logs"))).toBe(0o700);
    const testbed: TestbedRecord = {
      schema: "ringlab.testbed/v2",
      name: "tb",
      target: "local",
      inventory: "/i",
      sharedDir: "/s",
      nodes: [],
      createdAt: "2026-01-01T00:00:00Z",
    };
    const record = join(state, "testbeds", "tb", "testbed.json");
    saveRecord(state, testbed);
    expect(modeOf(record)).toBe(0o600);
    expect(modeOf(join(state, "current"))).toBe(0o600);
    expect(modeOf(join(state, "testbeds"))).toBe(0o700);
    saveRecord(state, { ...testbed, createdAt: "2026-01-02T00:00:00Z" });
    expect(modeOf(record)).toBe(0o600);
  });

  it("tightens an existing state folder others could only read to 0700, saying so", async () => {
    const state = folder(tempDir(), "state", 0o755);
    const result = await ringlab(["--state-dir", state, "status"]);
    expect(result.stderr).toContain(`warning: state folder ${state} had mode 0755; made it 0700`);
    expect(modeOf(state)).toBe(0o700);
  });

  it("refuses an existing state folder others can write: they may have left files in it", async () => {
    const state = folder(tempDir(), "state", 0o777);
    const result = await ringlab(["--state-dir", state, "status"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/state folder: .*mode 0777\) can be written by other users.*chmod go-w/);
    expect(modeOf(state)).toBe(0o777);
    expect(existsSync(join(state, "logs"))).toBe(false);
  });
});
