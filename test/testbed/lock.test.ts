import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import { UsageError } from "../../src/util/errors.ts";
import { acquire, release, withLock } from "../../src/testbed/lock.ts";

const scratch = () => mkdtempSync(join(tmpdir(), "ringlab-lock-"));

describe("testbed and results locks", () => {
  it("refuses a second holder while the first process runs, naming its pid and command", async () => {
    const file = join(scratch(), "tb.lock");
    const holder = spawn(process.execPath, ["-e", "setTimeout(() => {}, 30000)"], { stdio: "ignore" });
    try {
      writeFileSync(
        file,
        JSON.stringify({
          pid: holder.pid,
          command: "ringlab up campaigns/local-smoke.yaml",
          startedAt: "2026-11-23T08:00:00.000Z",
        }),
      );
      const error = await withLock(
        file,
        "testbed smoke",
        () => {},
        async () => "ran",
      ).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(UsageError);
      expect((error as UsageError).message).toBe(
        `testbed smoke is in use by \`ringlab up campaigns/local-smoke.yaml\` (pid ${holder.pid}, since 2026-11-23T08:00:00.000Z)`,
      );
    } finally {
      holder.kill();
    }
  });

  it("takes over, with a warning, a lock whose process is gone", async () => {
    const file = join(scratch(), "tb.lock");
    const gone = spawn(process.execPath, ["-e", ""], { stdio: "ignore" });
    await new Promise((done) => gone.once("exit", done));
    writeFileSync(
      file,
      JSON.stringify({ pid: gone.pid, command: "ringlab campaign x.yaml", startedAt: "2026-11-23T08:00:00.000Z" }),
    );
    const warnings: string[] = [];
    expect(
      await withLock(
        file,
        "testbed smoke",
        (m) => warnings.push(m),
        async () => JSON.parse(readFileSync(file, "utf8")).pid,
      ),
    ).toBe(process.pid);
    expect(warnings).toEqual([
      `testbed smoke was locked by pid ${gone.pid} (\`ringlab campaign x.yaml\`), which is no longer running: taking the lock over`,
    ]);
    expect(existsSync(file)).toBe(false);
  });

  it("is its user's alone, in a folder that keeps the umask (a results folder is made by its lock, for others to read)", async () => {
    const file = join(scratch(), "results", ".ringlab.lock");
    const umask = process.umask();
    const modes = await withLock(
      file,
      "results folder",
      () => {},
      async () => [statSync(file).mode & 0o777, statSync(dirname(file)).mode & 0o777],
    );
    expect(modes).toEqual([0o600, 0o777 & ~umask]);
  });

  it("is re-entrant within one process and released when the outermost hold ends", () => {
    const file = join(scratch(), "tb.lock");
    acquire(file, "testbed smoke", () => {});
    acquire(file, "testbed smoke", () => {});
    release(file);
    expect(existsSync(file)).toBe(true);
    release(file);
    expect(existsSync(file)).toBe(false);
  });
});
