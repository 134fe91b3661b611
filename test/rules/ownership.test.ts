import { describe, expect, it } from "vitest";
import {
  modeText,
  ownFolderProblem,
  parentFolderProblem,
  privateFolderProblem,
  type PathFacts,
} from "../../src/rules/ownership.ts";

const ME = 1000;
const OTHER = 1001;
const DIR = 0o040000;
const LINK = 0o120000;
const at = (path: string, uid: number, mode: number, kind: PathFacts["kind"] = "folder"): PathFacts => ({
  path,
  uid,
  mode: (kind === "symlink" ? LINK : DIR) | mode,
  kind,
});

describe("ownership rules", () => {
  it("writes modes as chmod takes them", () => {
    expect(modeText(DIR | 0o1777)).toBe("1777");
    expect(modeText(DIR | 0o755)).toBe("0755");
  });

  it("takes a folder of the caller's only it can write, and refuses others' and ones others can write", () => {
    expect(ownFolderProblem(at("/d", ME, 0o755), ME)).toBeUndefined();
    expect(ownFolderProblem(at("/d", ME, 0o775), ME)).toMatch(
      /^\/d \(owner uid 1000, mode 0775\) can be written by other users.*chmod go-w \/d/,
    );
    expect(ownFolderProblem(at("/d", ME, 0o1777), ME)).toMatch(/can be written by other users/);
    expect(ownFolderProblem(at("/d", OTHER, 0o755), ME)).toMatch(
      /^\/d \(owner uid 1001, mode 0755\) is not owned by you \(uid 1000\)/,
    );
    expect(ownFolderProblem(at("/d", ME, 0o644, "other"), ME)).toMatch(/is not a folder/);
  });

  it("lets a parent others can write through only with the sticky bit and a next part of the caller's, root's or none", () => {
    expect(parentFolderProblem(at("/", 0, 0o755), at("/home", 0, 0o755), ME)).toBeUndefined();
    expect(parentFolderProblem(at("/tmp", 0, 0o1777), at("/tmp/x", ME, 0o755), ME)).toBeUndefined();
    expect(parentFolderProblem(at("/tmp", 0, 0o1777), undefined, ME)).toBeUndefined();
    expect(parentFolderProblem(at("/tmp", 0, 0o1777), at("/tmp/x", OTHER, 0o755), ME)).toMatch(
      /\/tmp\/x in it is owned by uid 1001, not by you/,
    );
    expect(parentFolderProblem(at("/pub", 0, 0o777), at("/pub/x", ME, 0o755), ME)).toMatch(
      /other users can write it and so replace \/pub\/x/,
    );
    expect(parentFolderProblem(at("/srv/team", 0, 0o2775), at("/srv/team/x", ME, 0o755), ME)).toMatch(/mode 2775/);
    expect(parentFolderProblem(at("/home/them", OTHER, 0o755), at("/home/them/x", ME, 0o755), ME)).toMatch(
      /owned by another user/,
    );
  });

  it("keeps a private folder to its owner: no link, no group or other bits", () => {
    expect(privateFolderProblem(at("/t/s", ME, 0o700), ME)).toBeUndefined();
    expect(privateFolderProblem(at("/t/s", ME, 0o750), ME)).toMatch(/can be used by other users; expected mode 0700/);
    expect(privateFolderProblem(at("/t/s", OTHER, 0o700), ME)).toMatch(/not owned by you/);
    expect(privateFolderProblem(at("/t/s", ME, 0o777, "symlink"), ME)).toMatch(/is a symbolic link/);
  });
});
