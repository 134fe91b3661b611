import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { TerraformResource, Testing } from "cdktf";
import { describe, expect, it } from "vitest";
import { parseCampaign } from "../../src/config/load.ts";
import { resolveTestbedSpec } from "../../src/testbed/spec.ts";
import { stackPropsFromSpec } from "../../stacks/from-spec.ts";
import { TestbedStack } from "../../stacks/testbed-stack.ts";
import {
  awsSpec,
  CREATED_AT,
  PUBLIC_KEY,
  resourcesOf,
  synthTestbed,
  type Block,
  type StackFixture,
} from "./fixtures.ts";

const REQUIRED_TAGS = {
  "ringlab:testbed": "tb",
  "ringlab:campaign": "scaling",
  "ringlab:expires-at": "2025-03-01T18:00:00Z",
};
/** Resources the stack creates that have no tags argument at all. */
const UNTAGGABLE_TYPES = ["aws_route", "aws_route_table_association", "aws_efs_mount_target"];

function instancesByName(fixture: StackFixture): Map<string, string> {
  const byName = new Map<string, string>();
  for (const [logicalId, instance] of Object.entries(resourcesOf(fixture.json, "aws_instance"))) {
    byName.set(instance["tags"]["Name"] as string, logicalId);
  }
  return byName;
}

function defaultTags(fixture: StackFixture): Record<string, string> {
  const providers = fixture.json.provider?.["aws"] ?? [];
  expect(providers).toHaveLength(1);
  return providers[0]!["default_tags"][0]["tags"] as Record<string, string>;
}

/** Every resource whose provider class has a `tags` argument, with the tags it ends up with. */
function effectiveTagsOfTaggableResources(fixture: StackFixture): { type: string; tags: Record<string, string> }[] {
  const taggable = fixture.stack.node
    .findAll()
    .filter((c): c is TerraformResource => c instanceof TerraformResource && "tagsInput" in c);
  return taggable.map((resource) => {
    const type = resource.terraformResourceType;
    const block = resourcesOf(fixture.json, type)[fixture.stack.getLogicalId(resource)];
    expect(block, `${type} ${resource.node.path} in the JSON`).toBeDefined();
    return { type, tags: { ...defaultTags(fixture), ...(block!["tags"] ?? {}) } };
  });
}

describe.each([1, 10])("TestbedStack with %i node(s)", (nodeCount) => {
  const fixture = synthTestbed({ nodes: nodeCount });
  const { json, synthesized } = fixture;
  const names = Array.from({ length: nodeCount }, (_, rank) => `tb-node-${rank}`);

  it("has the network: VPC, subnet in the region's a zone, internet gateway and default route", () => {
    expect(Testing.toHaveResourceWithProperties(synthesized, "aws_vpc", { cidr_block: "10.78.0.0/16" })).toBe(true);
    expect(
      Testing.toHaveResourceWithProperties(synthesized, "aws_subnet", {
        cidr_block: "10.78.1.0/24",
        availability_zone: "us-east-1a",
        map_public_ip_on_launch: true,
      }),
    ).toBe(true);
    expect(Testing.toHaveResource(synthesized, "aws_internet_gateway")).toBe(true);
    expect(
      Testing.toHaveResourceWithProperties(synthesized, "aws_route", { destination_cidr_block: "0.0.0.0/0" }),
    ).toBe(true);
    expect(Testing.toHaveResource(synthesized, "aws_route_table_association")).toBe(true);
    expect(Testing.toHaveProviderWithProperties(synthesized, "aws", { region: "us-east-1" })).toBe(true);
  });

  it("opens SSH only to adminCidr, everything within the group, NFS only inside, every rule described", () => {
    const [groupId] = Object.keys(resourcesOf(json, "aws_security_group"));
    const self = `\${aws_security_group.${groupId}.id}`;
    const ingress = Object.values(resourcesOf(json, "aws_vpc_security_group_ingress_rule"));
    const egress = Object.values(resourcesOf(json, "aws_vpc_security_group_egress_rule"));
    expect(ingress.filter((r) => r["cidr_ipv4"] !== undefined)).toEqual([
      expect.objectContaining({ cidr_ipv4: "203.0.113.7/32", from_port: 22, to_port: 22, ip_protocol: "tcp" }),
    ]);
    expect(ingress).toContainEqual(expect.objectContaining({ ip_protocol: "-1", referenced_security_group_id: self }));
    expect(egress).toContainEqual(expect.objectContaining({ ip_protocol: "-1", referenced_security_group_id: self }));
    expect(ingress).toContainEqual(
      expect.objectContaining({ from_port: 2049, to_port: 2049, referenced_security_group_id: self }),
    );
    for (const rule of [...ingress, ...egress]) expect(rule["description"]).toMatch(/\S/);
  });

  it(`creates ${nodeCount} instance(s) in a cluster placement group, named in rank order`, () => {
    expect(Testing.toHaveResourceWithProperties(synthesized, "aws_placement_group", { strategy: "cluster" })).toBe(
      true,
    );
    expect(Testing.toHaveResourceWithProperties(synthesized, "aws_key_pair", { key_name: "ringlab-tb" })).toBe(true);
    expect([...instancesByName(fixture).keys()].sort()).toEqual([...names].sort());
    const roles = Object.values(resourcesOf(json, "aws_instance")).map((i) => i["tags"]["ringlab:role"]);
    expect(roles.filter((role) => role === "head")).toHaveLength(1);
    expect(roles.filter((role) => role === "worker")).toHaveLength(nodeCount - 1);
  });

  it("gives every instance an encrypted gp3 root volume of the default size and IMDSv2 with hop limit 2", () => {
    const instances = Object.values(resourcesOf(json, "aws_instance"));
    expect(instances).toHaveLength(nodeCount);
    for (const instance of instances) {
      expect(instance["root_block_device"]).toMatchObject({ volume_type: "gp3", encrypted: true, volume_size: 100 });
      expect(instance["metadata_options"]).toMatchObject({ http_tokens: "required", http_put_response_hop_limit: 2 });
      expect(instance).not.toHaveProperty("instance_market_options");
    }
    expect(synthesized).not.toContain("interface_type");
    expect(Testing.toHaveResource(synthesized, "aws_efs_file_system")).toBe(false);
    expect(Testing.toHaveDataSource(synthesized, "aws_ami")).toBe(true);
  });

  it("tags every taggable resource with testbed, campaign and expiry, through default tags or its own", () => {
    const tagged = effectiveTagsOfTaggableResources(fixture);
    expect(tagged.map((t) => t.type)).toEqual(
      expect.arrayContaining([
        "aws_vpc",
        "aws_subnet",
        "aws_internet_gateway",
        "aws_route_table",
        "aws_security_group",
        "aws_vpc_security_group_ingress_rule",
        "aws_vpc_security_group_egress_rule",
        "aws_placement_group",
        "aws_key_pair",
        "aws_launch_template",
        "aws_instance",
      ]),
    );
    for (const { tags } of tagged) expect(tags).toMatchObject(REQUIRED_TAGS);
    const taggableTypes = new Set(tagged.map((t) => t.type));
    for (const type of Object.keys(json.resource ?? {}).filter((t) => !taggableTypes.has(t))) {
      expect(UNTAGGABLE_TYPES).toContain(type);
    }
  });

  it("tags root volumes and launch-time network interfaces, which default tags miss", () => {
    for (const instance of Object.values(resourcesOf(json, "aws_instance"))) {
      expect(instance["volume_tags"]).toMatchObject(REQUIRED_TAGS);
    }
    const [template] = Object.values(resourcesOf(json, "aws_launch_template"));
    for (const specification of template!["tag_specifications"] as Block[]) {
      expect(specification["tags"]).toMatchObject(REQUIRED_TAGS);
    }
  });

  it("outputs the nodes in rank order, the head's private IP as NFS endpoint, and the SSH user", () => {
    const byName = instancesByName(fixture);
    expect(json.output?.["nodes"]?.value).toEqual(
      names.map((name, rank) => ({
        name,
        role: rank === 0 ? "head" : "worker",
        publicIp: `\${aws_instance.${byName.get(name)}.public_ip}`,
        privateIp: `\${aws_instance.${byName.get(name)}.private_ip}`,
        instanceType: "g4dn.xlarge",
      })),
    );
    expect(json.output?.["sharedStorageEndpoint"]?.value).toBe(
      `\${aws_instance.${byName.get("tb-node-0")}.private_ip}`,
    );
    expect(json.output?.["sshUser"]?.value).toBe("ubuntu");
    expect(Object.keys(json.output ?? {}).sort()).toEqual(["nodes", "sharedStorageEndpoint", "sshUser"]);
  });

  it("keeps local state in the testbed's state folder", () => {
    expect(json.terraform?.["backend"]).toEqual({ local: { path: "/state/testbeds/tb/terraform.tfstate" } });
  });
});

describe("TestbedStack options", () => {
  it("creates EFS only for sharedStorage efs, and outputs its mount target's DNS name", () => {
    const fixture = synthTestbed({ sharedStorage: "efs" });
    expect(Testing.toHaveResourceWithProperties(fixture.synthesized, "aws_efs_file_system", { encrypted: true })).toBe(
      true,
    );
    const [mountTargetId] = Object.keys(resourcesOf(fixture.json, "aws_efs_mount_target"));
    expect(fixture.json.output?.["sharedStorageEndpoint"]?.value).toBe(
      `\${aws_efs_mount_target.${mountTargetId}.mount_target_dns_name}`,
    );
    const tagged = effectiveTagsOfTaggableResources(fixture);
    expect(tagged.map((t) => t.type)).toContain("aws_efs_file_system");
    for (const { tags } of tagged) expect(tags).toMatchObject(REQUIRED_TAGS);
  });

  it("uses EFA and spot when asked, and tags the spot requests", () => {
    const fixture = synthTestbed({ efa: true, spot: true, instanceType: "g5.12xlarge" });
    const [template] = Object.values(resourcesOf(fixture.json, "aws_launch_template"));
    expect(template!["network_interfaces"][0]).toMatchObject({ interface_type: "efa" });
    expect(template!["tag_specifications"]).toContainEqual({
      resource_type: "spot-instances-request",
      tags: REQUIRED_TAGS,
    });
    for (const instance of Object.values(resourcesOf(fixture.json, "aws_instance"))) {
      expect(instance).toMatchObject({
        instance_type: "g5.12xlarge",
        instance_market_options: { market_type: "spot" },
      });
    }
  });

  it("passes an explicit AMI, zone, root volume size and the user's tags through", () => {
    const fixture = synthTestbed({
      ami: "ami-0123456789abcdef0",
      region: "eu-west-1",
      availabilityZone: "eu-west-1c",
      rootVolumeGiB: 250,
      tags: { team: "ml" },
    });
    expect(Testing.toHaveDataSource(fixture.synthesized, "aws_ami")).toBe(false);
    expect(
      Testing.toHaveResourceWithProperties(fixture.synthesized, "aws_subnet", { availability_zone: "eu-west-1c" }),
    ).toBe(true);
    for (const instance of Object.values(resourcesOf(fixture.json, "aws_instance"))) {
      expect(instance).toMatchObject({ ami: "ami-0123456789abcdef0", root_block_device: { volume_size: 250 } });
      expect(instance["volume_tags"]).toMatchObject({ team: "ml" });
    }
    expect(defaultTags(fixture)).toEqual({ ...REQUIRED_TAGS, team: "ml" });
  });

  it("stores state in S3 when configured, in the testbed's region unless the state names one", () => {
    const s3 = synthTestbed({
      region: "eu-west-1",
      state: { backend: "s3", bucket: "ringlab-state", key: "testbeds/tb.tfstate" },
    });
    expect(s3.json.terraform?.["backend"]).toEqual({
      s3: { bucket: "ringlab-state", key: "testbeds/tb.tfstate", region: "eu-west-1", encrypt: true },
    });
    const elsewhere = synthTestbed({
      state: { backend: "s3", bucket: "ringlab-state", key: "k", region: "us-west-2" },
    });
    expect(elsewhere.json.terraform?.["backend"]["s3"]).toMatchObject({ region: "us-west-2" });
  });

  it("refuses a relative local state path, which would land wherever cdktf runs terraform", () => {
    expect(() => synthTestbed({}, { terraformState: { backend: "local", path: ".ringlab/tb.tfstate" } })).toThrow(
      /must be absolute/,
    );
  });

  it("synthesizes the example campaign campaigns/aws-example.yaml", () => {
    const path = resolve(import.meta.dirname, "../../campaigns/aws-example.yaml");
    const text = readFileSync(path, "utf8");
    // The example names a key file under ~/.ssh, which test machines lack: give the key text instead.
    expect(text).toContain("sshPublicKeyFile: ~/.ssh/ringlab.pub");
    const { testbed } = parseCampaign(
      text.replace(
        "sshPublicKeyFile: ~/.ssh/ringlab.pub",
        `sshPublicKey: ${PUBLIC_KEY}\n  sshPrivateKeyFile: /k/ringlab`,
      ),
      path,
    );
    const spec = resolveTestbedSpec(testbed, {
      campaign: "aws-example",
      testbedDir: "/state/testbeds/example",
      createdAt: CREATED_AT,
    });
    if (testbed.target !== "aws" || spec.target !== "aws") throw new Error("the example is an AWS campaign");
    const stack = new TestbedStack(Testing.app(), "ringlab-example", stackPropsFromSpec(spec));
    const synthesized = Testing.synth(stack);
    expect(Testing.toHaveResourceWithProperties(synthesized, "aws_instance", { instance_type: "g4dn.xlarge" })).toBe(
      true,
    );
    expect(Object.keys(resourcesOf(JSON.parse(synthesized), "aws_instance"))).toHaveLength(testbed.nodes);
  });

  it("takes the file's SSH-source limit through the spec: a wider admin range the file allows synthesizes", () => {
    const fixture = synthTestbed({ adminCidr: "198.18.0.0/15", sshSourceMinPrefix: 15 });
    expect(
      Testing.toHaveResourceWithProperties(fixture.synthesized, "aws_vpc_security_group_ingress_rule", {
        cidr_ipv4: "198.18.0.0/15",
      }),
    ).toBe(true);
  });

  it("refuses user tags with reserved prefixes", () => {
    expect(() => synthTestbed({ tags: { "ringlab:role": "x" } })).toThrow(/reserved prefix/);
  });

  it("is built from the spec alone: the same stack whatever the campaign file says after up", () => {
    const spec = awsSpec({ nodes: 3 });
    const fromSpec = Testing.synth(
      new TestbedStack(Testing.app(), "ringlab-tb", stackPropsFromSpec(JSON.parse(JSON.stringify(spec)))),
    );
    expect(fromSpec).toEqual(synthTestbed({ nodes: 3 }).synthesized);
  });
});
