/**
 * The only module that talks to Docker (through the `docker` CLI, so any engine version that CLI speaks to works).
 */
import { PrerequisiteError } from "../util/errors.ts";
import { runProgram, type RunOptions } from "./process.ts";

export interface DockerOptions {
  /** The docker CLI. @default "docker" */
  readonly binary?: string;
  /** Extra environment, e.g. DOCKER_HOST. */
  readonly env?: Readonly<Record<string, string>>;
  readonly logFile?: string | undefined;
  readonly onLine?: ((line: string) => void) | undefined;
}

export interface ContainerSpec {
  readonly name: string;
  readonly image: string;
  readonly hostname?: string;
  readonly network?: string;
  readonly ip?: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly env?: Readonly<Record<string, string>>;
  /** host path -> container path (read-write). */
  readonly mounts?: readonly { readonly source: string; readonly target: string }[];
  readonly capAdd?: readonly string[];
  /** Kernel settings of the container's own namespaces (`--sysctl`). */
  readonly sysctls?: Readonly<Record<string, string>>;
}

export interface ContainerInfo {
  readonly id: string;
  readonly name: string;
  readonly running: boolean;
  /** When it was last started (RFC 3339, as Docker gives it). */
  readonly startedAt: string;
  readonly labels: Readonly<Record<string, string>>;
  /** Address per network name. */
  readonly addresses: Readonly<Record<string, string>>;
}

export type ResourceKind = "container" | "network" | "volume";

export interface BuildOptions {
  readonly dockerfile?: string;
  readonly target?: string;
  readonly buildArgs?: Record<string, string>;
  readonly onStep?: (step: string) => void;
}

/** The step in a line of the classic builder's output ("Step 3/12 : RUN apt-get ..." -> "3/12 RUN apt-get ..."). */
export function buildStep(line: string): string | undefined {
  const match = /^Step (\d+\/\d+) : (.*)$/.exec(line.trim());
  return match === null ? undefined : `${match[1]} ${match[2]!.replace(/\s+/g, " ").slice(0, 60)}`;
}

const INSTALL_HINT = "install and start Docker with `npm run setup` (Debian/Ubuntu: apt-get install docker.io)";

export class Docker {
  private readonly binary: string;

  constructor(private readonly options: DockerOptions = {}) {
    this.binary = options.binary ?? "docker";
  }

  /** Throws a PrerequisiteError with the fix when the CLI is missing or the engine does not answer. */
  async assertAvailable(): Promise<string> {
    const result = await this.run(["version", "--format", "{{.Server.Version}}"], {
      allowFailure: true,
      timeoutMs: 20_000,
      installHint: INSTALL_HINT,
    });
    if (result.exitCode !== 0 || result.output.trim() === "") {
      const reason = result.timedOut
        ? "did not answer within 20 s"
        : (result.output.split("\n").find((l) => /cannot connect|permission denied|error/i.test(l)) ??
          "is not running");
      const hint = /permission denied/i.test(reason)
        ? "your user may not use the engine: add it to the docker group (`npm run setup` does) and log in again"
        : "start the engine (`npm run setup` does, or: sudo dockerd >/var/log/dockerd.log 2>&1 &) and check `docker info` answers";
      throw new PrerequisiteError(`Docker is installed but its engine is not reachable: ${reason.trim()}`, { hint });
    }
    return result.output.trim().split("\n").at(-1)!;
  }

  async imageExists(image: string): Promise<boolean> {
    return (await this.imageId(image)) !== undefined;
  }

  /** The image's content-addressed id (sha256:...), or undefined when the engine does not have it. */
  async imageId(image: string): Promise<string | undefined> {
    const result = await this.run(["image", "inspect", "--format", "{{.Id}}", image], { allowFailure: true });
    return result.exitCode === 0 ? result.output.trim().split("\n").at(-1) : undefined;
  }

  /** `docker build`; onStep gets each Dockerfile step as the builder starts it ("3/12 RUN apt-get install ..."). */
  async build(contextDir: string, tag: string, options: BuildOptions = {}): Promise<void> {
    const args = ["build", "-t", tag];
    if (options.dockerfile !== undefined) args.push("-f", options.dockerfile);
    if (options.target !== undefined) args.push("--target", options.target);
    for (const [key, value] of Object.entries(options.buildArgs ?? {})) args.push("--build-arg", `${key}=${value}`);
    const onLine = (line: string) => {
      this.options.onLine?.(line);
      const step = buildStep(line);
      if (step !== undefined) options.onStep?.(step);
    };
    await this.run([...args, contextDir], { env: { DOCKER_BUILDKIT: "0" }, onLine });
  }

  async createNetwork(name: string, subnet: string, labels: Readonly<Record<string, string>>): Promise<void> {
    await this.run(["network", "create", "--driver", "bridge", "--subnet", subnet, ...labelArgs(labels), name]);
  }

  async runDetached(spec: ContainerSpec): Promise<string> {
    const args = ["run", "--detach", "--name", spec.name, ...labelArgs(spec.labels)];
    if (spec.hostname !== undefined) args.push("--hostname", spec.hostname);
    if (spec.network !== undefined) args.push("--network", spec.network);
    if (spec.ip !== undefined) args.push("--ip", spec.ip);
    for (const cap of spec.capAdd ?? []) args.push("--cap-add", cap);
    for (const [key, value] of Object.entries(spec.sysctls ?? {})) args.push("--sysctl", `${key}=${value}`);
    for (const mount of spec.mounts ?? [])
      args.push("--mount", `type=bind,${csvField(`source=${mount.source}`)},${csvField(`target=${mount.target}`)}`);
    for (const key of Object.keys(spec.env ?? {})) args.push("--env", key);
    // Values travel in the environment, not on the command line (keys stay out of `ps` and logs).
    const result = await this.run([...args, spec.image], { env: { ...spec.env } });
    return result.output.trim().split("\n").at(-1)!;
  }

  /**
   * Runs `command` in a throw-away container of `image` on the host's network namespace, with NET_ADMIN: for the
   * host's firewall (src/targets/local/host-firewall.ts), which whoever may use the engine may change anyway. Never
   * pulled: an image of that name from a registry is not ringlab's.
   */
  async runOnHostNetwork(image: string, command: readonly string[]): Promise<void> {
    const [entrypoint, ...args] = command;
    await this.run([
      "run",
      "--rm",
      "--pull",
      "never",
      "--network",
      "host",
      "--cap-add",
      "NET_ADMIN",
      "--cap-add",
      "NET_RAW",
      "--entrypoint",
      entrypoint!,
      image,
      ...args,
    ]);
  }

  async start(names: readonly string[]): Promise<void> {
    if (names.length > 0) await this.run(["start", ...names]);
  }

  /** Ids of the resources carrying a label (`key` or `key=value`). */
  async listByLabel(kind: ResourceKind, label: string): Promise<string[]> {
    const args = kind === "container" ? ["ps", "--all", "--quiet", "--no-trunc"] : [kind, "ls", "--quiet"];
    const result = await this.run([...args, "--filter", `label=${label}`]);
    return result.output
      .split("\n")
      .map((line) => line.trim())
      .filter((line) => line !== "");
  }

  /** The values of label `key` on every container or network that carries `label` (KEY or KEY=VALUE). */
  async labelValues(kind: "container" | "network", label: string, key: string): Promise<string[]> {
    const args = kind === "container" ? ["ps", "--all"] : ["network", "ls"];
    const result = await this.run([
      ...args,
      "--filter",
      `label=${label}`,
      "--format",
      `{{.Label ${JSON.stringify(key)}}}`,
    ]);
    return result.output
      .split("\n")
      .map((line) => line.trim())
      .filter((line) => line !== "");
  }

  async inspectContainers(ids: readonly string[]): Promise<ContainerInfo[]> {
    if (ids.length === 0) return [];
    const result = await this.run(["container", "inspect", "--format", "{{json .}}", ...ids]);
    return result.output
      .split("\n")
      .filter((line) => line.startsWith("{"))
      .map((line) => {
        const raw = JSON.parse(line);
        const networks: Record<string, { IPAddress?: string }> = raw.NetworkSettings?.Networks ?? {};
        return {
          id: raw.Id,
          name: String(raw.Name).replace(/^\//, ""),
          running: raw.State?.Running === true,
          startedAt: String(raw.State?.StartedAt ?? ""),
          labels: raw.Config?.Labels ?? {},
          addresses: Object.fromEntries(Object.entries(networks).map(([net, info]) => [net, info.IPAddress ?? ""])),
        };
      });
  }

  async remove(kind: ResourceKind, ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    const args = kind === "container" ? ["rm", "--force", "--volumes"] : [kind, "rm"];
    await this.run([...args, ...ids]);
  }

  /** Runs a shell script that itself drives docker (the image build scripts in docker/). */
  async runScript(script: string, args: readonly string[] = []): Promise<void> {
    await runProgram("docker", "bash", [script, ...args], this.runOptions({}));
  }

  private run(args: readonly string[], extra: Partial<RunOptions> = {}) {
    return runProgram("docker", this.binary, args, this.runOptions(extra));
  }

  private runOptions(extra: Partial<RunOptions>): RunOptions {
    return {
      installHint: INSTALL_HINT,
      logFile: this.options.logFile,
      onLine: this.options.onLine,
      ...extra,
      env: { ...this.options.env, ...extra.env },
    };
  }
}

/** Docker parses --mount as one CSV record: a quoted field keeps a comma in a path from adding options. */
export function csvField(text: string): string {
  return `"${text.replace(/"/g, '""')}"`;
}

function labelArgs(labels: Readonly<Record<string, string>>): string[] {
  return Object.entries(labels).flatMap(([key, value]) => ["--label", `${key}=${value}`]);
}
