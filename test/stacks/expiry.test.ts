/**
 * The expiry service in the nodes' user data, run for real: its ExecStart command line (with systemd's %% undone
 * and `systemctl poweroff` replaced by an echo) waits until the expiry and then powers off.
 */
import { spawnSync } from "node:child_process";
import { load } from "js-yaml";
import { describe, expect, it } from "vitest";
import { EXPIRY_SERVICE, epochSeconds, expiryUserData } from "../../stacks/expiry.ts";

interface CloudConfig {
  write_files: { path: string; content: string }[];
  runcmd: string[][];
}

function cloudConfig(expiresAt: string): CloudConfig {
  const text = expiryUserData(expiresAt);
  expect(text.startsWith("#cloud-config\n")).toBe(true);
  return load(text) as CloudConfig;
}

/** The service's ExecStart as the shell would get it from systemd, with the power-off replaced. */
function execStart(expiresAt: string): string {
  const unit = cloudConfig(expiresAt).write_files.find(
    (file) => file.path === `/etc/systemd/system/${EXPIRY_SERVICE}`,
  )!.content;
  const line = unit
    .split("\n")
    .find((l) => l.startsWith("ExecStart="))!
    .slice("ExecStart=".length);
  const script = /^\/bin\/sh -c '(.*)'$/.exec(line)![1]!;
  return script.replaceAll("%%", "%").replace("exec /bin/systemctl poweroff", "echo poweroff");
}

function runFor(expiresAt: string): { output: string; seconds: number } {
  const started = Date.now();
  const result = spawnSync("/bin/sh", ["-c", execStart(expiresAt)], { encoding: "utf8", timeout: 20_000 });
  return { output: result.stdout.trim(), seconds: (Date.now() - started) / 1000 };
}

const isoIn = (seconds: number) => new Date(Date.now() + seconds * 1000).toISOString().replace(/\.\d{3}Z$/, "Z");

describe("expiry user data", () => {
  it("enables the expiry service at first boot and starts it at every boot", () => {
    const config = cloudConfig("2025-03-01T18:00:00Z");
    expect(config.runcmd).toEqual([
      ["systemctl", "daemon-reload"],
      ["systemctl", "enable", "--now", EXPIRY_SERVICE],
    ]);
    const unit = config.write_files[0]!.content;
    expect(unit).toContain("WantedBy=multi-user.target");
    expect(unit).toContain(`left=$((${epochSeconds("2025-03-01T18:00:00Z")} - $(date +%%s)))`);
  });

  it("powers off at once on a node booted after its expiry", () => {
    const { output, seconds } = runFor("2020-01-01T00:00:00Z");
    expect(output).toBe("poweroff");
    expect(seconds).toBeLessThan(2);
  });

  it("waits until the expiry before powering off", () => {
    const { output, seconds } = runFor(isoIn(3));
    expect(output).toBe("poweroff");
    expect(seconds).toBeGreaterThanOrEqual(1.5);
  });

  it("refuses a time that is not ISO-8601", () => {
    expect(() => expiryUserData("soon")).toThrow(/"soon" is not an ISO-8601 time/);
  });
});
