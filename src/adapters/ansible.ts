/**
 * The only module that runs ansible-playbook. Playbooks live in ansible/; this passes the inventory and
 * variables (as data, never as templates), reports each task as it starts, and reads the PLAY RECAP so callers
 * know what changed.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { load as loadYaml } from "js-yaml";
import { dumpAnsibleData } from "../util/ansible-data.ts";
import { failure, runProgram, type RunResult } from "./process.ts";

export interface HostRecap {
  readonly ok: number;
  readonly changed: number;
  readonly unreachable: number;
  readonly failed: number;
  readonly skipped: number;
  readonly rescued: number;
  readonly ignored: number;
}

export interface PlaybookResult {
  readonly recap: Readonly<Record<string, HostRecap>>;
  readonly durationMs: number;
}

export interface PlaybookOptions {
  readonly inventory: string;
  /** Where SSH keeps its shared connections (ansible's control_path_dir). */
  readonly controlPathDir?: string;
  /** Where facts set with `cacheable: true` persist between playbooks (ansible.cfg's fact cache). */
  readonly factCacheDir?: string;
  /** Hosts worked on at once; run.yml blocks on every node at once, so it must cover them all. */
  readonly forks?: number;
  readonly extraVars?: Readonly<Record<string, unknown>>;
  /** Only these inventory hosts (ansible-playbook --limit); every host when absent. */
  readonly limit?: readonly string[];
  /** Tasks left out by tag (ansible-playbook --skip-tags). */
  readonly skipTags?: readonly string[];
  readonly logFile?: string | undefined;
  /** Called with each task name as it starts ("TASK [common : Add every node to /etc/hosts]"). */
  readonly onTask?: ((task: string) => void) | undefined;
  /** Every output line, for --verbose. */
  readonly onLine?: ((line: string) => void) | undefined;
  readonly signal?: AbortSignal | undefined;
  readonly timeoutMs?: number;
}

export class Ansible {
  /** @param ansibleDir the folder holding ansible.cfg and the playbooks. */
  constructor(
    private readonly ansibleDir: string,
    private readonly binary = "ansible-playbook",
  ) {}

  async playbook(name: string, options: PlaybookOptions): Promise<PlaybookResult> {
    const args = ["-i", options.inventory, join(this.ansibleDir, name)];
    if (options.limit !== undefined) args.push("--limit", options.limit.join(","));
    if (options.skipTags !== undefined && options.skipTags.length > 0)
      args.push("--skip-tags", options.skipTags.join(","));
    const varsDir = options.extraVars === undefined ? undefined : mkdtempSync(join(tmpdir(), "ringlab-vars-"));
    try {
      if (varsDir !== undefined) args.push("--extra-vars", `@${writeExtraVars(varsDir, options.extraVars!)}`);
      const result = await this.run(args, options);
      const recap = parseRecap(result.output);
      if (result.exitCode !== 0 || result.canceled || result.timedOut) {
        const command = `ansible-playbook ${name}`;
        const summary =
          result.canceled || result.timedOut
            ? undefined
            : `${command} failed: ${describeFailures(result.output) || `exit code ${result.exitCode}`}`;
        throw failure("ansible", command, result, options.logFile, summary);
      }
      return { recap, durationMs: result.durationMs };
    } finally {
      if (varsDir !== undefined) rmSync(varsDir, { recursive: true, force: true });
    }
  }

  private run(args: readonly string[], options: PlaybookOptions): Promise<RunResult> {
    return runProgram("ansible", this.binary, args, {
      env: {
        ANSIBLE_CONFIG: join(this.ansibleDir, "ansible.cfg"),
        ANSIBLE_NOCOLOR: "1",
        ANSIBLE_FORCE_COLOR: "0",
        ...(options.controlPathDir === undefined ? {} : { ANSIBLE_SSH_CONTROL_PATH_DIR: options.controlPathDir }),
        ...(options.factCacheDir === undefined ? {} : { ANSIBLE_CACHE_PLUGIN_CONNECTION: options.factCacheDir }),
        ...(options.forks === undefined ? {} : { ANSIBLE_FORKS: String(options.forks) }),
      },
      logFile: options.logFile,
      signal: options.signal,
      ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
      installHint: "install Ansible with `npm run setup` (Debian/Ubuntu: apt-get install ansible)",
      allowFailure: true,
      onLine: (line) => {
        const task = /^(TASK|RUNNING HANDLER) \[(.+)\]/.exec(line);
        if (task) options.onTask?.(task[2]!);
        options.onLine?.(line);
      },
    });
  }
}

/**
 * Extra vars go in a file, readable by this user only, with every string `!unsafe`: on the command line
 * (`--extra-vars '{json}'`) Ansible would render `{{ }}` in them, so a results path or a worker argument
 * could run commands on the controller.
 */
function writeExtraVars(dir: string, extraVars: Readonly<Record<string, unknown>>): string {
  const file = join(dir, "extra-vars.yml");
  writeFileSync(file, dumpAnsibleData(extraVars), { mode: 0o600 });
  return file;
}

/** Total changes across hosts in a recap. */
export function totalChanged(recap: Readonly<Record<string, HostRecap>>): number {
  return Object.values(recap).reduce((sum, host) => sum + host.changed, 0);
}

/** Reads the PLAY RECAP block: `host : ok=3 changed=1 unreachable=0 failed=0 skipped=2 rescued=0 ignored=0`. */
export function parseRecap(output: string): Record<string, HostRecap> {
  const recap: Record<string, HostRecap> = {};
  const start = output.lastIndexOf("PLAY RECAP");
  if (start < 0) return recap;
  for (const line of output.slice(start).split("\n").slice(1)) {
    const match = /^(\S+)\s+:\s+(.*)$/.exec(line.trim());
    if (!match) continue;
    const counts = Object.fromEntries([...match[2]!.matchAll(/(\w+)=(\d+)/g)].map((m) => [m[1]!, Number(m[2])]));
    recap[match[1]!] = {
      ok: counts["ok"] ?? 0,
      changed: counts["changed"] ?? 0,
      unreachable: counts["unreachable"] ?? 0,
      failed: counts["failed"] ?? 0,
      skipped: counts["skipped"] ?? 0,
      rescued: counts["rescued"] ?? 0,
      ignored: counts["ignored"] ?? 0,
    };
  }
  return recap;
}

/**
 * One line per failed or unreachable host: `fatal: [host]: FAILED! => {"msg": ...}` in the default result
 * format, or the same header followed by an indented YAML block (`callback_result_format = yaml`).
 */
export function describeFailures(output: string): string {
  const failures: string[] = [];
  const lines = output.split("\n");
  lines.forEach((line, index) => {
    // "fatal: [h]: FAILED! => ...", "fatal: [h]: UNREACHABLE! => ...", or a loop item's "failed: [h] (item=x) => ..."
    const match = /^(?:fatal|failed): \[([^\]]+)\](?: \(item=[^)]*\))?(?:: (FAILED|UNREACHABLE)!)? => ?(.*)$/.exec(
      line.trim(),
    );
    if (!match) return;
    const [, host, marker, inline = ""] = match;
    const message = messageFromJson(inline) ?? messageFromYamlBlock(lines, index + 1) ?? inline;
    failures.push(`${host} ${marker === "UNREACHABLE" ? "unreachable" : "failed"}: ${message.split("\n")[0]!.trim()}`);
  });
  return [...new Set(failures)].join("; ");
}

function messageFromJson(text: string): string | undefined {
  try {
    const details = JSON.parse(text);
    return String(details.msg ?? details.stderr ?? details.reason ?? text);
  } catch {
    return undefined;
  }
}

/**
 * The `msg:` of the indented YAML block that follows a failure header. Ansible wraps long scalars over several
 * lines, so the block is parsed as YAML rather than read line by line.
 */
function messageFromYamlBlock(lines: readonly string[], from: number): string | undefined {
  let end = from;
  while (end < lines.length && /^\s+\S/.test(lines[end]!)) end++;
  try {
    const details = loadYaml(lines.slice(from, end).join("\n"));
    if (typeof details === "object" && details !== null && "msg" in details) return String(details.msg);
  } catch {
    // Not YAML after all (e.g. cut short): no message from this block.
  }
  return undefined;
}
