import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseCampaign } from "../src/config/load.ts";
import type { AwsTestbed } from "../src/config/schema.ts";
import { awsInventory, buildInventory, renderInventory, stackOutputsFrom } from "../src/inventory.ts";

const outputs = JSON.parse(readFileSync(new URL("./fixtures/cdktf-outputs.json", import.meta.url), "utf8"));
const testbed = parseCampaign(`
testbed:
  target: aws
  name: scale
  nodes: 3
  adminCidr: 203.0.113.7/32
  sshPublicKey: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHx2Jm3ZpG5a0xV8y3Qb1ZrjQ5k6m0z2b7Vt3nq2XaBc
  sshPrivateKeyFile: /home/me/.ssh/ringlab
`, "c.yaml").testbed as AwsTestbed;

/** What Debian's real `ansible-inventory` makes of a rendered inventory. */
function ansibleInventoryList(inventoryText: string): any {
  const file = join(mkdtempSync(join(tmpdir(), "ringlab-inv-")), "inventory.yml");
  writeFileSync(file, inventoryText);
  return JSON.parse(execFileSync("ansible-inventory", ["-i", file, "--list"], { encoding: "utf8", env: { ...process.env, ANSIBLE_NOCOLOR: "1" } }));
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
      worker_image_source: "registry",
    });
  });

  it("names what is missing when the stack was not (fully) deployed", () => {
    expect(() => stackOutputsFrom({}, "ringlab-scale")).toThrowError("the outputs hold no stack named ringlab-scale; was it deployed?");
    const broken = structuredClone(outputs);
    delete broken["ringlab-scale"].nodes[1].publicIp;
    expect(() => stackOutputsFrom(broken, "ringlab-scale")).toThrowError("stack ringlab-scale: nodes[1].publicIp is missing");
  });
});

describe("inventory for the local testbed", () => {
  it("carries the node containers and root login, without become", () => {
    const inventory = buildInventory({
      testbed: "smoke", target: "local", sshUser: "root", sshPrivateKeyFile: "/state/id_ed25519",
      knownHostsFile: "/state/known_hosts", sharedStorage: "bind", sharedDir: "/state/shared",
      clusterCidr: "10.77.0.0/24", workerImage: "ringlab/worker:cpu", workerImageSource: "present",
      nodes: [1, 0].map((rank) => ({
        name: `smoke-node-${rank}`, rank, sshAddress: `10.77.0.${10 + rank}`, privateIp: `10.77.0.${10 + rank}`,
        container: `ringlab-smoke-node-${rank}`,
      })),
    });
    const listed = ansibleInventoryList(renderInventory(inventory));
    expect(listed.head.hosts).toEqual(["smoke-node-0"]);
    expect(listed.workers.hosts).toEqual(["smoke-node-1"]);
    expect(listed._meta.hostvars["smoke-node-1"]).toMatchObject({
      ringlab_node_container: "ringlab-smoke-node-1", ansible_user: "root", ringlab_shared_storage: "bind",
      ringlab_known_hosts_file: "/state/known_hosts",
    });
    expect(listed._meta.hostvars["smoke-node-1"]).not.toHaveProperty("ansible_become");
  });

  it("refuses node ranks with gaps", () => {
    const node = (rank: number) => ({ name: `n${rank}`, rank, sshAddress: "10.0.0.1", privateIp: "10.0.0.1" });
    expect(() => buildInventory({
      testbed: "t", target: "local", nodes: [node(0), node(2)], sshUser: "root", sshPrivateKeyFile: "/k", knownHostsFile: "/kh",
      sharedStorage: "bind", sharedDir: "/s", clusterCidr: "10.0.0.0/24", workerImage: "w", workerImageSource: "present",
    })).toThrowError("node ranks must be 0..1; found rank 2 at position 1");
  });
});
