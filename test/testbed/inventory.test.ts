import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseCampaign } from "../../src/config/load.ts";
import { resolveTestbedSpec, type AwsTestbedSpec } from "../../src/testbed/spec.ts";
import {
  awsInventory,
  buildInventory,
  pinnedKnownHosts,
  renderInventory,
  stackOutputsFrom,
} from "../../src/testbed/inventory.ts";

const outputs = JSON.parse(readFileSync(new URL("../fixtures/cdktf-outputs.json", import.meta.url), "utf8"));
const testbed = resolveTestbedSpec(
  parseCampaign(
    `
testbed:
  target: aws
  name: scale
  nodes: 3
  adminCidr: 203.0.113.7/32
  sshPublicKey: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHx2Jm3ZpG5a0xV8y3Qb1ZrjQ5k6m0z2b7Vt3nq2XaBc
  sshPrivateKeyFile: /home/me/.ssh/ringlab
`,
    "c.yaml",
  ).testbed,
  { campaign: "c", testbedDir: "/state/testbeds/scale", createdAt: new Date() },
) as AwsTestbedSpec;

/** What Debian's real `ansible-inventory` makes of a rendered inventory, as it prints it. */
function ansibleInventoryRaw(inventoryText: string): any {
  const file = join(mkdtempSync(join(tmpdir(), "ringlab-inv-")), "inventory.yml");
  writeFileSync(file, inventoryText);
  return JSON.parse(
    execFileSync("ansible-inventory", ["-i", file, "--list"], {
      encoding: "utf8",
      env: { ...process.env, ANSIBLE_NOCOLOR: "1" },
    }),
  );
}

/** ansible-inventory prints a value that Ansible never templates (`!unsafe`) as {"__ansible_unsafe": text}. */
function unwrapUnsafe(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(unwrapUnsafe);
  if (typeof value !== "object" || value === null) return value;
  if ("__ansible_unsafe" in value) return (value as { __ansible_unsafe: unknown }).__ansible_unsafe;
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, unwrapUnsafe(item)]));
}

/** The inventory as playbooks see its values. */
function ansibleInventoryList(inventoryText: string): any {
  return unwrapUnsafe(ansibleInventoryRaw(inventoryText));
}

describe("inventory from the AWS stack outputs", () => {
  it("is accepted by ansible-inventory with head and workers groups and per-host variables", () => {
    const listed = ansibleInventoryList(renderInventory(awsInventory(outputs, testbed, "/state/scale/known_hosts")));
    expect(listed.head.hosts).toEqual(["scale-node-0"]);
    expect(listed.workers.hosts).toEqual(["scale-node-1", "scale-node-2"]);
    expect(listed._meta.hostvars["scale-node-2"]).toMatchObject({
      ansible_host: "198.51.100.12",
      ringlab_private_ip: "10.78.1.12",
      ringlab_node_rank: 2,
      ringlab_instance_type: "g4dn.xlarge",
      ansible_user: "ubuntu",
      ansible_become: true,
      ansible_ssh_private_key_file: "/home/me/.ssh/ringlab",
      ringlab_testbed: "scale",
      ringlab_known_hosts_file: "/state/scale/known_hosts",
      ringlab_target: "aws",
      ringlab_shared_storage: "nfs",
      ringlab_shared_dir: "/shared",
      ringlab_cluster_cidr: "10.78.1.0/24",
      // The default ringlab/worker:gpu is built on each node; see the next test for the other sources.
      worker_image_source: "build",
    });
  });

  it("makes ssh refuse any host key but the pinned one where the nodes were given theirs, and trust on first use elsewhere", () => {
    const keys = [0, 1, 2].map((rank) => ({
      privateKey: "",
      publicKey: `ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIK${rank} scale-node-${rank} host key (ringlab)`,
    }));
    const pinned = awsInventory(outputs, testbed, "/state/scale/known_hosts", keys);
    expect(
      ansibleInventoryList(renderInventory(pinned))._meta.hostvars["scale-node-1"].ringlab_ssh_host_key_checking,
    ).toBe("yes");
    expect(pinnedKnownHosts(pinned, keys)).toBe(
      [0, 1, 2]
        .map((rank) => `198.51.100.1${rank},10.78.1.1${rank} ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIK${rank}\n`)
        .join(""),
    );
    const unpinned = awsInventory(outputs, testbed, "/state/scale/known_hosts");
    expect(
      ansibleInventoryList(renderInventory(unpinned))._meta.hostvars["scale-node-1"].ringlab_ssh_host_key_checking,
    ).toBe("accept-new");
  });

  it("tells the nodes to build ringlab's image, pull a registry image, or load the tarball the file names", () => {
    const sourceOf = (changes: Partial<AwsTestbedSpec>) =>
      awsInventory(outputs, { ...testbed, ...changes }, "/k").all.vars;
    expect(sourceOf({ workerImage: "ringlab/worker:gpu" })).toMatchObject({ worker_image_source: "build" });
    expect(sourceOf({ workerImage: "ghcr.io/me/worker:1" })).toMatchObject({ worker_image_source: "registry" });
    expect(sourceOf({ workerImage: "me/worker:1" })).toMatchObject({ worker_image_source: "registry" });
    expect(sourceOf({ workerImageTarball: "/images/w.tar" })).toMatchObject({
      worker_image_source: "tarball",
      worker_image_tarball: "/images/w.tar",
    });
    expect(sourceOf({ workerImageTarball: null })).not.toHaveProperty("worker_image_tarball");
  });

  it("reads the outputs as `terraform output -json` prints them too, for a stack deployed by hand", () => {
    const printed = Object.fromEntries(
      Object.entries(outputs["ringlab-scale"]).map(([name, value]) => [
        name,
        { sensitive: false, type: "dynamic", value },
      ]),
    );
    expect(stackOutputsFrom(printed, "ringlab-scale")).toEqual(stackOutputsFrom(outputs, "ringlab-scale"));
  });

  it("names what is missing when the stack was not (fully) deployed", () => {
    expect(() => stackOutputsFrom({}, "ringlab-scale")).toThrowError(
      "the outputs hold no stack named ringlab-scale; was it deployed?",
    );
    const broken = structuredClone(outputs);
    delete broken["ringlab-scale"].nodes[1].publicIp;
    expect(() => stackOutputsFrom(broken, "ringlab-scale")).toThrowError(
      "stack ringlab-scale: nodes[1].publicIp is missing",
    );
  });
});

describe("inventory for the local testbed", () => {
  it("carries the node containers and root login, without become", () => {
    const inventory = buildInventory({
      testbed: "smoke",
      target: "local",
      sshUser: "root",
      sshPrivateKeyFile: "/state/id_ed25519",
      knownHostsFile: "/state/known_hosts",
      sharedStorage: "bind",
      sharedDir: "/state/shared",
      clusterCidr: "10.77.0.0/24",
      workerImage: "ringlab/worker:cpu",
      workerImageSource: "present",
      nodes: [1, 0].map((rank) => ({
        name: `smoke-node-${rank}`,
        rank,
        sshAddress: `10.77.0.${10 + rank}`,
        privateIp: `10.77.0.${10 + rank}`,
        container: `ringlab-smoke-node-${rank}`,
      })),
    });
    const listed = ansibleInventoryList(renderInventory(inventory));
    expect(listed.head.hosts).toEqual(["smoke-node-0"]);
    expect(listed.workers.hosts).toEqual(["smoke-node-1"]);
    expect(listed._meta.hostvars["smoke-node-1"]).toMatchObject({
      ringlab_node_container: "ringlab-smoke-node-1",
      ansible_user: "root",
      ringlab_shared_storage: "bind",
      ringlab_known_hosts_file: "/state/known_hosts",
    });
    expect(listed._meta.hostvars["smoke-node-1"]).not.toHaveProperty("ansible_become");
  });

  it("hands every text value to Ansible as data that it never templates, connection settings included", () => {
    const inventory = buildInventory({
      testbed: "smoke",
      target: "local",
      sshUser: "root",
      sshPrivateKeyFile: "/state/id_ed25519",
      knownHostsFile: "/state/known_hosts",
      sharedStorage: "bind",
      sharedDir: "/state/{{ lookup('pipe', 'id') }}",
      clusterCidr: "10.77.0.0/24",
      workerImage: "ringlab/worker:cpu",
      workerImageSource: "present",
      nodes: [{ name: "smoke-node-0", rank: 0, sshAddress: "10.77.0.10", privateIp: "10.77.0.10", container: "c0" }],
    });
    const hostVars = ansibleInventoryRaw(renderInventory(inventory))._meta.hostvars["smoke-node-0"];
    for (const [name, value] of Object.entries(hostVars)) {
      if (typeof value !== "number" && typeof value !== "boolean")
        expect(value, name).toHaveProperty("__ansible_unsafe");
    }
    expect(hostVars.ringlab_shared_dir).toEqual({ __ansible_unsafe: "/state/{{ lookup('pipe', 'id') }}" });
    expect(hostVars.ringlab_node_rank).toBe(0);
  });

  it("refuses node ranks with gaps", () => {
    const node = (rank: number) => ({ name: `n${rank}`, rank, sshAddress: "10.0.0.1", privateIp: "10.0.0.1" });
    expect(() =>
      buildInventory({
        testbed: "t",
        target: "local",
        nodes: [node(0), node(2)],
        sshUser: "root",
        sshPrivateKeyFile: "/k",
        knownHostsFile: "/kh",
        sharedStorage: "bind",
        sharedDir: "/s",
        clusterCidr: "10.0.0.0/24",
        workerImage: "w",
        workerImageSource: "present",
      }),
    ).toThrowError("node ranks must be 0..1; found rank 2 at position 1");
  });
});
