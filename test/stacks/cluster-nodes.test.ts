import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Testing } from "cdktf";
import { load } from "js-yaml";
import { describe, expect, it } from "vitest";
import { DEFAULTS } from "../../src/config/schema.ts";
import type { NodeHostKey } from "../../src/rules/ssh-key.ts";
import { ClusterNodes, type ClusterNodesProps } from "../../stacks/constructs/cluster-nodes.ts";
import { expiryUserData } from "../../stacks/expiry.ts";
import { PUBLIC_KEY, parse, resourcesOf, type Block, type TerraformJson } from "./fixtures.ts";

/** A host key as src/testbed/host-keys.ts makes it: the real ssh-keygen's files. */
function hostKey(comment: string): NodeHostKey {
  const file = join(mkdtempSync(join(tmpdir(), "ringlab-host-key-")), "key");
  execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", file]);
  return { privateKey: readFileSync(file, "utf8"), publicKey: readFileSync(`${file}.pub`, "utf8").trim() };
}

const props: ClusterNodesProps = {
  name: "tb",
  nodeCount: 3,
  instanceType: "g4dn.xlarge",
  rootVolumeGiB: 120,
  subnetId: "subnet-0123456789abcdef0",
  securityGroupId: "sg-0123456789abcdef0",
  sshPublicKey: PUBLIC_KEY,
  launchTags: { "ringlab:testbed": "tb" },
  expiresAt: "2025-03-01T18:00:00Z",
};

function synthString(overrides: Partial<ClusterNodesProps> = {}): string {
  return Testing.synthScope((scope) => {
    new ClusterNodes(scope, "cluster", { ...props, ...overrides });
  });
}
const synth = (overrides: Partial<ClusterNodesProps> = {}): TerraformJson => parse(synthString(overrides));

function instances(json: TerraformJson): Block[] {
  return Object.values(resourcesOf(json, "aws_instance"));
}
function launchTemplate(json: TerraformJson): Block {
  const templates = Object.values(resourcesOf(json, "aws_launch_template"));
  expect(templates).toHaveLength(1);
  return templates[0]!;
}

describe("ClusterNodes", () => {
  it("names the nodes <name>-node-<rank>, node 0 the head and the others workers", () => {
    expect(instances(synth()).map((i) => i["tags"])).toEqual([
      { Name: "tb-node-0", "ringlab:role": "head" },
      { Name: "tb-node-1", "ringlab:role": "worker" },
      { Name: "tb-node-2", "ringlab:role": "worker" },
    ]);
  });

  it("puts every node in one cluster placement group, with the key pair", () => {
    const json = synth();
    const [groupId] = Object.keys(resourcesOf(json, "aws_placement_group"));
    const [keyId] = Object.keys(resourcesOf(json, "aws_key_pair"));
    expect(resourcesOf(json, "aws_placement_group")[groupId!]).toMatchObject({ strategy: "cluster" });
    expect(resourcesOf(json, "aws_key_pair")[keyId!]).toMatchObject({ public_key: PUBLIC_KEY });
    for (const instance of instances(json)) {
      expect(instance).toMatchObject({
        placement_group: `\${aws_placement_group.${groupId}.name}`,
        key_name: `\${aws_key_pair.${keyId}.key_name}`,
        instance_type: "g4dn.xlarge",
      });
    }
  });

  it("leaves the placement group out when placementGroup is false", () => {
    const json = synth({ placementGroup: false });
    expect(resourcesOf(json, "aws_placement_group")).toEqual({});
    for (const instance of instances(json)) expect(instance).not.toHaveProperty("placement_group");
  });

  it("terminates a node that powers itself off, and powers it off at expiresAt", () => {
    for (const instance of instances(synth())) {
      expect(instance["instance_initiated_shutdown_behavior"]).toBe("terminate");
      expect(instance["user_data"]).toBe(expiryUserData("2025-03-01T18:00:00Z"));
    }
  });

  it("gives each node its own SSH host key in its user data, in place of the AMI's, beside the expiry service", () => {
    const keys = [0, 1, 2].map((rank) => hostKey(`node-${rank}`));
    instances(synth({ hostKeys: keys })).forEach((instance, rank) => {
      const config = load(String(instance["user_data"])) as Record<string, unknown>;
      expect(config).toMatchObject({
        ssh_deletekeys: true,
        ssh_genkeytypes: [],
        ssh_keys: { ed25519_private: keys[rank]!.privateKey, ed25519_public: keys[rank]!.publicKey },
      });
      expect(config["runcmd"]).toEqual(
        (load(expiryUserData("2025-03-01T18:00:00Z")) as Record<string, unknown>)["runcmd"],
      );
    });
  });

  it("refuses host keys that are not one ed25519 key in OpenSSH's format per node", () => {
    const key = hostKey("node");
    expect(() => synth({ hostKeys: [key, key] })).toThrow("ClusterNodes: hostKeys: 2 keys for 3 nodes");
    expect(() =>
      synth({
        hostKeys: [
          key,
          key,
          { ...key, privateKey: "-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n" },
        ],
      }),
    ).toThrow("ClusterNodes: hostKeys[2]: expected an OpenSSH private key");
    expect(() =>
      synth({ hostKeys: [key, { ...key, publicKey: PUBLIC_KEY.replace("ssh-ed25519", "ssh-rsa") }, key] }),
    ).toThrow("ClusterNodes: hostKeys[1]: expected an ssh-ed25519 public key");
  });

  it("gives every node an encrypted gp3 root volume of rootVolumeGiB", () => {
    for (const instance of instances(synth())) {
      expect(instance["root_block_device"]).toMatchObject({ volume_type: "gp3", encrypted: true, volume_size: 120 });
    }
  });

  it("requires IMDSv2 with a hop limit of 2 (containers reach the metadata service)", () => {
    for (const instance of instances(synth())) {
      expect(instance["metadata_options"]).toMatchObject({ http_tokens: "required", http_put_response_hop_limit: 2 });
    }
  });

  it("launches nodes in the subnet and group with a public address, through the launch template", () => {
    const json = synth();
    const [templateId] = Object.keys(resourcesOf(json, "aws_launch_template"));
    expect(launchTemplate(json)["network_interfaces"]).toEqual([
      expect.objectContaining({
        device_index: 0,
        subnet_id: props.subnetId,
        security_groups: [props.securityGroupId],
        associate_public_ip_address: "true",
      }),
    ]);
    for (const instance of instances(json)) {
      expect(instance["launch_template"]).toMatchObject({ id: `\${aws_launch_template.${templateId}.id}` });
      // The template's interface carries subnet and group; EC2 refuses them twice in one request.
      expect(instance).not.toHaveProperty("subnet_id");
      expect(instance).not.toHaveProperty("vpc_security_group_ids");
    }
  });

  it("uses an EFA interface only when asked", () => {
    const plain = launchTemplate(synth())["network_interfaces"][0];
    expect(plain).not.toHaveProperty("interface_type");
    expect(synthString()).not.toContain("interface_type");
    const efa = launchTemplate(synth({ efa: true, instanceType: "p4d.24xlarge" }))["network_interfaces"][0];
    expect(efa).toMatchObject({ interface_type: "efa" });
  });

  it("requests spot instances only when asked, and tags their spot requests", () => {
    for (const instance of instances(synth())) expect(instance).not.toHaveProperty("instance_market_options");
    expect(launchTemplate(synth())["tag_specifications"].map((s: Block) => s["resource_type"])).toEqual([
      "network-interface",
    ]);

    const spot = synth({ spot: true });
    for (const instance of instances(spot)) {
      expect(instance["instance_market_options"]).toMatchObject({ market_type: "spot" });
    }
    expect(launchTemplate(spot)["tag_specifications"]).toContainEqual({
      resource_type: "spot-instances-request",
      tags: { "ringlab:testbed": "tb" },
    });
  });

  it("tags root volumes and network interfaces, which the provider's default tags do not reach", () => {
    const json = synth({ launchTags: { "ringlab:testbed": "tb", team: "ml" } });
    instances(json).forEach((instance, rank) => {
      expect(instance["volume_tags"]).toEqual({ "ringlab:testbed": "tb", team: "ml", Name: `tb-node-${rank}` });
    });
    expect(launchTemplate(json)["tag_specifications"]).toContainEqual({
      resource_type: "network-interface",
      tags: { "ringlab:testbed": "tb", team: "ml" },
    });
  });

  it("leaves tag specifications out when there are no launch tags", () => {
    const json = synth({ launchTags: undefined, spot: true });
    expect(launchTemplate(json)["tag_specifications"]).toBeUndefined();
    for (const instance of instances(json))
      expect(instance["volume_tags"]).toEqual({ Name: expect.stringMatching(/^tb-node-/) });
  });

  it("uses an explicit AMI as given, without a lookup", () => {
    const synthesized = synthString({ ami: "ami-0123456789abcdef0" });
    for (const instance of instances(parse(synthesized))) expect(instance["ami"]).toBe("ami-0123456789abcdef0");
    expect(Testing.toHaveDataSource(synthesized, "aws_ami")).toBe(false);
  });

  it("looks up the newest Deep Learning Base AMI when no AMI is given", () => {
    const synthesized = synthString();
    expect(
      Testing.toHaveDataSourceWithProperties(synthesized, "aws_ami", {
        most_recent: true,
        owners: [DEFAULTS.aws.amiOwner],
        filter: [
          { name: "name", values: [DEFAULTS.aws.amiNamePattern] },
          { name: "architecture", values: ["x86_64"] },
        ],
      }),
    ).toBe(true);
    const [amiId] = Object.keys(parse(synthesized).data?.["aws_ami"] ?? {});
    for (const instance of instances(parse(synthesized))) expect(instance["ami"]).toBe(`\${data.aws_ami.${amiId}.id}`);
  });

  it("does not replace running nodes when a later synth changes the launch template", () => {
    for (const instance of instances(synth())) {
      expect(instance["lifecycle"]).toEqual({ ignore_changes: ["launch_template"] });
    }
  });

  it("rejects invalid props before creating anything", () => {
    expect(() => synth({ nodeCount: 0 })).toThrow(/nodeCount must be a whole number >= 1, got 0/);
    expect(() => synth({ nodeCount: 1.5 })).toThrow(/nodeCount/);
    expect(() => synth({ rootVolumeGiB: 4 })).toThrow(
      /rootVolumeGiB 4: expected a whole number of GiB from 8 to 16384/,
    );
    expect(() => synth({ rootVolumeGiB: 16385 })).toThrow(/rootVolumeGiB 16385/);
    expect(() => synth({ efa: true, instanceType: "g4dn.xlarge" })).toThrow(/instance type g4dn.xlarge has no EFA/);
    expect(() => synth({ ami: "ubuntu-22.04" })).toThrow(/ami "ubuntu-22.04": expected an AMI id/);
    expect(() => synth({ sshPublicKey: "-----BEGIN OPENSSH PRIVATE KEY-----" })).toThrow(
      /sshPublicKey: expected an OpenSSH public key/,
    );
    expect(() => synth({ sshPublicKey: "ssh-ed25519" })).toThrow(/sshPublicKey: expected an OpenSSH public key/);
    expect(() => synth({ name: "" })).toThrow(/name "": expected 1-24 lower-case letters/);
    expect(() => synth({ name: "tb-{{x}}" })).toThrow(/name "tb-\{\{x\}\}"/);
    expect(() => synth({ expiresAt: "tomorrow" })).toThrow(/expiresAt "tomorrow": expected an ISO-8601 time/);
  });
});
