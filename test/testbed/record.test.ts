import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { InternalError, UsageError } from "../../src/util/errors.ts";
import { checkedTestbedName, currentTestbedName, forgetTestbed, requireRecord } from "../../src/testbed/record.ts";

describe("testbed state folder", () => {
  it("removes only a testbed folder directly inside <state-dir>/testbeds, never anything around it", () => {
    const scratch = mkdtempSync(join(tmpdir(), "ringlab-state-"));
    const state = join(scratch, "a", "st");
    mkdirSync(join(state, "testbeds", "smoke"), { recursive: true });
    writeFileSync(join(scratch, "a", "precious.txt"), "keep me");
    for (const name of ["../..", "..", "../../..", "smoke/..", "/tmp"]) {
      expect(() => forgetTestbed(state, name)).toThrow(InternalError);
    }
    expect(existsSync(join(scratch, "a", "precious.txt"))).toBe(true);
    expect(existsSync(join(state, "testbeds", "smoke"))).toBe(true);
    forgetTestbed(state, "smoke");
    expect(existsSync(join(state, "testbeds", "smoke"))).toBe(false);
  });

  it("checks names from the command line and the current file against the testbed name rule (exit 2)", () => {
    expect(() => checkedTestbedName("../..")).toThrow(UsageError);
    expect(() => requireRecord(mkdtempSync(join(tmpdir(), "ringlab-state-")), "..")).toThrow(
      /testbed name "\.\.": expected 1-24 lower-case/,
    );
    const state = mkdtempSync(join(tmpdir(), "ringlab-state-"));
    writeFileSync(join(state, "current"), "../../etc\n");
    expect(() => currentTestbedName(state)).toThrow(UsageError);
  });
});
