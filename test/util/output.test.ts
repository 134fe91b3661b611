/** What ringlab prints is printable: control characters from other people's files reach the terminal as escapes. */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { printable } from "../../src/util/output.ts";

function sourcesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sourcesUnder(path) : path.endsWith(".ts") ? [path] : [];
  });
}

describe("printable", () => {
  it("writes every control character as its escape: ESC sequences, OSC 52 (the clipboard), CR, BEL, C1 and bidi marks", () => {
    expect(printable("\u001b]0;owned\u0007")).toBe("\\u001b]0;owned\\u0007");
    expect(printable("\u001b]52;c;ZXZpbA==\u001b\\")).toBe("\\u001b]52;c;ZXZpbA==\\u001b\\");
    expect(printable("a\u001b[2Kb\rc")).toBe("a\\u001b[2Kb\\u000dc");
    expect(printable("\u009b31m \u007f \u202eevil")).toBe("\\u009b31m \\u007f \\u202eevil");
  });

  it("keeps newlines, tabs and every printable character, Unicode included", () => {
    const text = "compute small batch 32 fp32: t_c 0.314 ± 0.01 s\n\tα 0.1 ms, 2 nodes × 1 — ✓ φ\n";
    expect(printable(text)).toBe(text);
  });

  it("is the one way ringlab writes to the terminal: no other module writes to stdout or stderr itself", () => {
    const writers = sourcesUnder("src")
      .filter((file) => file !== join("src", "util", "output.ts"))
      .filter((file) =>
        /process\.(stdout|stderr)\.write\(|console\.(log|error|warn|info)\(/.test(readFileSync(file, "utf8")),
      );
    expect(writers).toEqual([]);
  });
});
