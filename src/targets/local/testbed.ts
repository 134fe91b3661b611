/**
 * The local testbed: "nodes" are containers on one machine, on their own Docker network, reached by Ansible
 * over real SSH. Workers started later join a node's network namespace, so the node's tc shaping applies.
 */
import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import type { ContainerInfo, Docker } from "../../adapters/docker.ts";
import { ensureKeyPair, forgetHostKey } from "../../adapters/ssh.ts";
import { dockerFor, type Context } from "../../context/context.ts";
import { UsageError, type RinglabError } from "../../util/errors.ts";
import { buildInventory, renderInventory } from "../../testbed/inventory.ts";
import { writePrivateFile } from "../../util/fs.ts";
import { guardSubnet, unguardSubnet } from "./host-firewall.ts";
import { buildLocalImages } from "./images.ts";
import {
  localInventorySpec,
  NODE_IMAGE,
  planLocalTestbed,
  STATE_DIR_LABEL,
  STATE_PATH_LABEL,
  stateDirId,
  TESTBED_LABEL,
  type LocalNodePlan,
  type LocalTestbedPlan,
} from "./plan.ts";
import { testbedPaths } from "../../testbed/paths.ts";
import { loadRecord, saveRecord, type TestbedRecord } from "../../testbed/record.ts";
import { waitForSsh } from "../../testbed/reachability.ts";
import type { LocalTestbedSpec } from "../../testbed/spec.ts";
import type { RemovedResources } from "../target.ts";
import { checkLocalSharedDir } from "./target.ts";

const SSH_WAIT_MS = 60_000;

export async function upLocal(ctx: Context, spec: LocalTestbedSpec): Promise<TestbedRecord> {
  const docker = dockerFor(ctx);
  const plan = planLocalTestbed(spec, ctx.stateDir);

  await ctx.reporter.step("check the Docker engine", () => docker.assertAvailable());
  // Before reuse too: the layer cache makes it cheap, and a reused testbed must not run stale worker code.
  await buildLocalImages(ctx, docker, spec.workerImage);
  const existing = await findResources(docker, plan.name);
  if (existing.containers.length > 0 || existing.networks.length > 0) {
    return reuse(ctx, docker, plan, existing.containers, spec);
  }
  try {
    await guardStep(ctx, docker, plan);
    await ctx.reporter.step(`start ${plan.nodes.length} node containers on ${plan.subnet}`, (detail) =>
      startNodes(ctx, docker, plan, detail),
    );
    return await finishUp(ctx, plan, spec);
  } catch (error) {
    // A failing rollback is reported after, not instead of, the error that caused it.
    await ctx.reporter
      .step(`roll back: remove what was created for ${plan.name}`, async () => {
        await removeResources(docker, plan.name);
        await unguardSubnet(docker, plan.name);
      })
      .catch((rollback: unknown) =>
        ctx.reporter.warn(
          `the rollback failed too (${(rollback as Error).message}); run \`ringlab down ${plan.name}\``,
        ),
      );
    throw error;
  }
}

/** Before the nodes listen, and again on reuse: a reboot since `up` took the host's firewall rules with it. */
function guardStep(ctx: Context, docker: Docker, plan: LocalTestbedPlan): Promise<void> {
  return ctx.reporter.step(`keep this machine's other users off ${plan.subnet} (host firewall)`, () =>
    guardSubnet(docker, plan.name, plan.subnet),
  );
}

async function startNodes(
  ctx: Context,
  docker: Docker,
  plan: LocalTestbedPlan,
  detail: (text: string) => void,
): Promise<void> {
  const paths = testbedPaths(ctx.stateDir, plan.name);
  mkdirSync(paths.dir, { recursive: true });
  mkdirSync(plan.sharedDir, { recursive: true });
  // Checked again once made: a folder planted since the campaign file was read is refused too.
  checkLocalSharedDir(plan.sharedDir);
  await ensureKeyPair(paths.privateKey, `ringlab-${plan.name}`);
  rmSync(paths.knownHosts, { force: true });
  await docker.createNetwork(plan.network, plan.subnet, plan.labels);
  // Side by side (each `docker run` is mostly the engine's round trips: 0.4 s a node one after the other), and all
  // of them settled before an error is thrown, so that the rollback cannot miss a container still being created.
  let started = 0;
  const outcomes = await Promise.allSettled(
    plan.nodes.map(async (node) => {
      await startNode(ctx, docker, plan, node);
      detail(`${++started} of ${plan.nodes.length} started`);
    }),
  );
  const failed = outcomes.find((outcome) => outcome.status === "rejected");
  if (failed !== undefined) throw failed.reason;
}

/**
 * The nodes (and their workers, which share their network namespace) have no IPv6 address: the host firewall is
 * iptables' alone, and Docker gives containers a link-local fe80:: address where the kernel has IPv6, which this
 * machine's other users would reach unfiltered. Nothing to turn off on a kernel without IPv6 (no such settings).
 */
function ipv6Off(): Record<string, string> {
  if (!existsSync("/proc/sys/net/ipv6")) return {};
  return { "net.ipv6.conf.all.disable_ipv6": "1", "net.ipv6.conf.default.disable_ipv6": "1" };
}

async function startNode(ctx: Context, docker: Docker, plan: LocalTestbedPlan, node: LocalNodePlan): Promise<void> {
  const authorizedKey = readFileSync(`${testbedPaths(ctx.stateDir, plan.name).privateKey}.pub`, "utf8").trim();
  await docker.runDetached({
    name: node.container,
    image: NODE_IMAGE,
    hostname: node.name,
    network: plan.network,
    ip: node.ip,
    // Workers started later carry ringlab.role=worker; nodes are told apart from them by this.
    labels: { ...plan.labels, "ringlab.role": "node" },
    env: { RINGLAB_AUTHORIZED_KEY: authorizedKey },
    // NET_ADMIN lets the node shape its own link with tc; --privileged is neither needed nor allowed.
    capAdd: ["NET_ADMIN"],
    sysctls: ipv6Off(),
    mounts: [
      { source: plan.sharedDir, target: plan.sharedDir },
      { source: "/var/run/docker.sock", target: "/var/run/docker.sock" },
    ],
  });
}

/**
 * Replaces lost node containers (killed, crashed) with fresh ones on the same names and addresses, and waits
 * until they answer over SSH. Their old host keys are forgotten: the new containers have new ones.
 */
export async function recreateLocalNodes(
  ctx: Context,
  spec: LocalTestbedSpec,
  ranks: readonly number[],
): Promise<void> {
  const docker = dockerFor(ctx);
  const plan = planLocalTestbed(spec, ctx.stateDir);
  const nodes = plan.nodes.filter((node) => ranks.includes(node.rank));
  for (const node of nodes) {
    await docker.remove("container", [node.container]).catch(() => undefined);
    await startNode(ctx, docker, plan, node);
    await forgetHostKey(testbedPaths(ctx.stateDir, plan.name).knownHosts, node.ip);
  }
  await waitForSsh(
    nodes.map((node) => node.ip),
    SSH_WAIT_MS,
    ctx.signal,
  );
}

async function reuse(
  ctx: Context,
  docker: Docker,
  plan: LocalTestbedPlan,
  containerIds: string[],
  spec: LocalTestbedSpec,
) {
  const containers = (await docker.inspectContainers(containerIds)).filter((c) => c.labels["ringlab.role"] === "node");
  // Another state folder's testbed has another SSH key: adopting it would end in "no such identity" half-way.
  const foreign = containers.find((c) => c.labels[STATE_DIR_LABEL] !== plan.labels[STATE_DIR_LABEL]);
  if (foreign) {
    const owner = foreign.labels[STATE_PATH_LABEL] ?? "<the folder it was brought up from>";
    throw new UsageError(
      `a testbed named ${plan.name} already runs on this Docker engine, brought up from state folder ${owner}, not from this one (${ctx.stateDir})`,
      {
        hint: `remove it with \`ringlab --state-dir ${owner} down ${plan.name}\`, or give this campaign another testbed name`,
      },
    );
  }
  const complete =
    containers.length === plan.nodes.length &&
    plan.nodes.every((node) =>
      containers.some((c) => c.name === node.container && c.addresses[plan.network] === node.ip),
    );
  if (!complete) {
    throw new UsageError(
      `a testbed named ${plan.name} already exists but does not match this file (${containers.length} containers; the file asks for ${plan.nodes.length} nodes on ${plan.subnet})`,
      { hint: `remove it with \`ringlab down ${plan.name}\`, or give this campaign another testbed name` },
    );
  }
  ctx.reporter.info(`testbed ${plan.name} already exists with ${plan.nodes.length} nodes: reusing it`);
  await guardStep(ctx, docker, plan);
  await docker.start(containers.filter((c) => !c.running).map((c) => c.name));
  // A launcher's daemons (Slurm's) run on only while every node container did (a restarted one starts with sshd
  // alone), and so does what site.yml configured: a restarted container gets a new /etc/hosts from Docker, and no
  // daemons.
  const earlier = containers.every((c) => c.running) ? loadRecord(ctx.stateDir, plan.name) : undefined;
  const configuredAt = Date.parse(earlier?.configured?.at ?? "");
  const configuredSince = containers.every((c) => Date.parse(c.startedAt) <= configuredAt);
  return finishUp(ctx, plan, spec, earlier?.launchers, configuredSince ? earlier?.configured : undefined);
}

async function finishUp(
  ctx: Context,
  plan: LocalTestbedPlan,
  spec: LocalTestbedSpec,
  launchers?: TestbedRecord["launchers"],
  configured?: TestbedRecord["configured"],
): Promise<TestbedRecord> {
  const paths = testbedPaths(ctx.stateDir, plan.name);
  await ctx.reporter.step("wait for SSH on every node", (detail) =>
    waitForSsh(
      plan.nodes.map((node) => node.ip),
      SSH_WAIT_MS,
      ctx.signal,
      (pending) => detail(`waiting for ${pending.join(", ")}`),
    ),
  );
  writePrivateFile(paths.inventory, renderInventory(buildInventory(localInventorySpec(plan, paths, spec.workerImage))));
  const record: TestbedRecord = {
    schema: "ringlab.testbed/v2",
    name: plan.name,
    target: "local",
    inventory: paths.inventory,
    sharedDir: plan.sharedDir,
    nodes: plan.nodes.map((node) => ({ name: node.name, rank: node.rank, sshAddress: node.ip, privateIp: node.ip })),
    createdAt: spec.createdAt,
    ...(launchers === undefined ? {} : { launchers }),
    ...(configured === undefined ? {} : { configured }),
  };
  saveRecord(ctx.stateDir, record);
  return record;
}

/** Everything labeled with the testbed's name (all testbeds when `name` is undefined). */
export async function findResources(docker: Docker, name: string | undefined): Promise<RemovedResources> {
  const label = name === undefined ? TESTBED_LABEL : `${TESTBED_LABEL}=${name}`;
  const [containers, networks, volumes] = await Promise.all(
    (["container", "network", "volume"] as const).map((kind) => docker.listByLabel(kind, label)),
  );
  return { containers: containers!, networks: networks!, volumes: volumes! };
}

/** Removes every labeled container (nodes and workers), then networks and volumes. Idempotent. */
export async function removeResources(docker: Docker, name: string | undefined): Promise<RemovedResources> {
  const found = await findResources(docker, name);
  await docker.remove("container", found.containers);
  await docker.remove("network", found.networks);
  await docker.remove("volume", found.volumes);
  return found;
}

export async function downLocal(ctx: Context, name: string): Promise<RemovedResources> {
  const docker = dockerFor(ctx);
  await docker.assertAvailable();
  const removed = await removeResources(docker, name);
  await unguardSubnet(docker, name).catch((error: RinglabError) =>
    ctx.reporter.warn(`${error.message}; ${error.hint}`),
  );
  return removed;
}

/** Names of the local testbeds whose nodes run on this engine: of this state folder, or of every one. */
export async function localTestbedNames(
  ctx: Context,
  scope: "this state folder" | "every state folder",
): Promise<string[]> {
  const docker = dockerFor(ctx);
  await docker.assertAvailable();
  const label = scope === "every state folder" ? TESTBED_LABEL : `${STATE_DIR_LABEL}=${stateDirId(ctx.stateDir)}`;
  const names = await Promise.all(
    (["container", "network"] as const).map((kind) => docker.labelValues(kind, label, TESTBED_LABEL)),
  );
  return [...new Set(names.flat())].sort();
}

export async function localNodeContainers(ctx: Context, name: string): Promise<ContainerInfo[]> {
  const docker = dockerFor(ctx);
  return docker.inspectContainers(await docker.listByLabel("container", `${TESTBED_LABEL}=${name}`));
}
