/**
 * One temporary folder for a whole test run. Tests make their folders with mkdtemp under os.tmpdir(), and cdktf's
 * Testing.app() makes one per synthesized stack (cdktf.outdir.*) that nothing removes: with TMPDIR pointing here
 * (the test workers start after this and inherit it), all of them go when the run ends, and /tmp keeps nothing.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export default function setup(): () => void {
  // Short: SSH control sockets of test testbeds live under it, and a socket path may not exceed 107 bytes.
  const root = mkdtempSync(join(tmpdir(), "rl-test-"));
  process.env.TMPDIR = root;
  return () => rmSync(root, { recursive: true, force: true });
}
