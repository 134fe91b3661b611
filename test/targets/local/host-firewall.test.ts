/**
 * docker/node/host-firewall.sh against the real iptables, in a network namespace of its own (`unshare -n`, as root:
 * the host's rules are not touched). iptables and iptables-restore are wrapped to look at the rules after each call,
 * or to change them as another testbed's `up` would between two of the script's calls (issue #67, rows 6 and 7).
 */
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const SCRIPT = resolve(import.meta.dirname, "../../../docker/node/host-firewall.sh");
const CHAIN = "RINGLAB-aaaaaaaaaaaa";
const OTHER = "RINGLAB-bbbbbbbbbbbb";
const guard = (chain: string, subnet: string, name: string) =>
  `bash ${SCRIPT} guard ${chain} ${subnet} "ringlab testbed ${name}" 1000 999`;

/**
 * Runs `script` with bash in a new network namespace, iptables and iptables-restore being wrappers that run `hook`
 * (bash, with the call's arguments as "$@" and $LOG a file to write to, which `script` sees too) after each call;
 * returns the namespace's rules at the end and what the hooks wrote.
 */
function inNamespace(script: string, hook: string): { status: number | null; rules: string[]; log: string[] } {
  const dir = mkdtempSync(join(tmpdir(), "ringlab-fw-"));
  const log = join(dir, "log");
  for (const tool of ["iptables", "iptables-restore"]) {
    writeFileSync(join(dir, tool), `#!/bin/bash\n/usr/sbin/${tool} "$@"; rc=$?\nLOG=${log}\n${hook}\nexit $rc\n`);
    chmodSync(join(dir, tool), 0o755);
  }
  const rules = join(dir, "rules");
  const result = spawnSync(
    "unshare",
    ["-n", "bash", "-euo", "pipefail", "-c", `${script}\n/usr/sbin/iptables -S > ${rules}`],
    { encoding: "utf8", timeout: 60_000, env: { ...process.env, LOG: log, PATH: `${dir}:${process.env["PATH"]}` } },
  );
  expect(result.error, "unshare -n (a network namespace, as root) must work here").toBeUndefined();
  const lines = (file: string) => (existsSync(file) ? readFileSync(file, "utf8").split("\n").filter(Boolean) : []);
  expect(result.status, result.stderr).toBe(0);
  return { status: result.status, rules: lines(rules), log: lines(log) };
}

const jumpsTo = (rules: string[], chain: string) => rules.filter((rule) => rule.endsWith(`-j ${chain}`));

describe("host-firewall.sh", () => {
  it("guards a subnet with one jump to a chain that lets root, the user and the group through and rejects the rest; again changes nothing; unguard removes it all", () => {
    const once = inNamespace(guard(CHAIN, "10.1.0.0/24", "a"), "");
    const twice = inNamespace(`${guard(CHAIN, "10.1.0.0/24", "a")}\n${guard(CHAIN, "10.1.0.0/24", "a")}`, "");
    expect(twice.rules).toEqual(once.rules);
    expect(once.rules.filter((rule) => rule.includes(CHAIN))).toEqual([
      `-N ${CHAIN}`,
      `-A OUTPUT -d 10.1.0.0/24 -m comment --comment "ringlab testbed a" -j ${CHAIN}`,
      `-A ${CHAIN} -m conntrack --ctstate RELATED,ESTABLISHED -j RETURN`,
      `-A ${CHAIN} -m owner ! --socket-exists -j RETURN`,
      `-A ${CHAIN} -m owner --uid-owner 0 -j RETURN`,
      `-A ${CHAIN} -m owner --uid-owner 1000 -j RETURN`,
      `-A ${CHAIN} -m owner --gid-owner 999 --suppl-groups -j RETURN`,
      `-A ${CHAIN} -j REJECT --reject-with icmp-port-unreachable`,
    ]);
    const removed = inNamespace(
      `${guard(CHAIN, "10.1.0.0/24", "a")}\n${guard(OTHER, "10.2.0.0/24", "b")}\nbash ${SCRIPT} unguard ${CHAIN}\n` +
        `bash ${SCRIPT} unguard ${CHAIN}`,
      "",
    );
    expect(removed.rules.filter((rule) => rule.includes(CHAIN))).toEqual([]);
    expect(jumpsTo(removed.rules, OTHER)).toHaveLength(1);
  });

  /** After the script's first read of OUTPUT, another testbed's up puts its jump first, as it does. */
  const otherUpAfterTheRead =
    `if [[ -e $LOG.armed && " $* " == *" OUTPUT "* && " $* " =~ \\ -(L|S)\\  ]]; then rm $LOG.armed; echo read > $LOG; ` +
    `/usr/sbin/iptables -I OUTPUT 1 -d 10.2.0.0/24 -m comment --comment "ringlab testbed b" -j ${OTHER}; fi`;
  const setUp = `${guard(OTHER, "10.2.0.0/24", "b")}\n${guard(CHAIN, "10.1.0.0/24", "a")}\ntouch "$LOG.armed"`;

  it("guards its testbed's subnet, and leaves every other testbed's jump, when another testbed's up inserts a jump between its calls", () => {
    // The testbed's subnet is another now (its network was made again): only the new one's jump may stay.
    const { rules, log } = inNamespace(`${setUp}\n${guard(CHAIN, "10.3.0.0/24", "a")}`, otherUpAfterTheRead);
    expect(log).toEqual(["read"]);
    expect(jumpsTo(rules, CHAIN)).toEqual([
      `-A OUTPUT -d 10.3.0.0/24 -m comment --comment "ringlab testbed a" -j ${CHAIN}`,
    ]);
    expect(jumpsTo(rules, OTHER)).toHaveLength(2);
  });

  it("removes its own rules and nobody else's when another testbed's up inserts a jump between its calls", () => {
    const { rules, log } = inNamespace(`${setUp}\nbash ${SCRIPT} unguard ${CHAIN}`, otherUpAfterTheRead);
    expect(log).toEqual(["read"]);
    expect(rules.filter((rule) => rule.includes(CHAIN))).toEqual([]);
    expect(jumpsTo(rules, OTHER)).toHaveLength(2);
  });

  it("never leaves a reused chain that is jumped to without its REJECT, between any two of its calls", () => {
    const hook =
      `if /usr/sbin/iptables -S OUTPUT | grep -q -- "-j ${CHAIN}$" && ` +
      `! /usr/sbin/iptables -S ${CHAIN} 2>/dev/null | grep -q -- "-j REJECT"; then echo "open after: $*" >> $LOG; fi`;
    const { log } = inNamespace(`${guard(CHAIN, "10.1.0.0/24", "a")}\n${guard(CHAIN, "10.1.0.0/24", "a")}`, hook);
    expect(log).toEqual([]);
  });
});
