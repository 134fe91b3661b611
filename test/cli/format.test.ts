import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { shellWord } from "../../src/cli/format.ts";

describe("shellWord, for commands the CLI prints to be pasted", () => {
  it("leaves a plain path as it is and quotes one the shell would split or expand, so that sh reads back the same text", () => {
    expect(shellWord("/state/testbeds/a/cdktf.out/stacks/ringlab-a")).toBe(
      "/state/testbeds/a/cdktf.out/stacks/ringlab-a",
    );
    for (const text of ["/my results/out", "it's", "$HOME/x", "a;b", "*"]) {
      expect(shellWord(text)).not.toBe(text);
      expect(execFileSync("sh", ["-c", `printf %s ${shellWord(text)}`], { encoding: "utf8" })).toBe(text);
    }
  });
});
