/**
 * Policy checks on the synthesized stacks: the rules checkov's AWS checks express for these resources, one `it`
 * per check id (checkov itself cannot be installed on the build machines). Each deliberate exception is listed
 * in .checkov.yaml and explained next to its resource in stacks/; the last tests keep those two in step.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { TerraformResource } from "cdktf";
import { load } from "js-yaml";
import { describe, expect, it } from "vitest";
import { resourcesOf, synthTestbed, type Block, type StackFixture } from "./fixtures.ts";

const ROOT = resolve(import.meta.dirname, "../..");

/** The stacks the checks run on: the default, the largest, every option on, and state in S3. */
const VARIANTS: Record<string, StackFixture> = {
  "1 node, nfs": synthTestbed({ nodes: 1 }),
  "10 nodes": synthTestbed({ nodes: 10 }),
  "efs + efa + spot": synthTestbed({
    nodes: 2,
    sharedStorage: "efs",
    efa: true,
    spot: true,
    instanceType: "g5.12xlarge",
  }),
  "s3 backend": synthTestbed({
    region: "eu-west-1",
    state: { backend: "s3", bucket: "ringlab-state", key: "testbeds/tb.tfstate" },
  }),
};

const each = (check: (fixture: StackFixture, variant: string) => void) => {
  for (const [variant, fixture] of Object.entries(VARIANTS)) check(fixture, variant);
};
const blocks = (fixture: StackFixture, type: string): Block[] => Object.values(resourcesOf(fixture.json, type));
const ingressRules = (fixture: StackFixture): Block[] => [
  ...blocks(fixture, "aws_vpc_security_group_ingress_rule"),
  ...blocks(fixture, "aws_security_group").flatMap((group) => group["ingress"] ?? []),
];
const RESERVED_TAGS = ["ringlab:testbed", "ringlab:campaign", "ringlab:expires-at"];

describe("policy (checkov AWS checks) on the synthesized stacks", () => {
  it("CKV_AWS_8: every node's root volume is encrypted", () =>
    each((fixture, variant) => {
      for (const instance of blocks(fixture, "aws_instance"))
        expect(instance["root_block_device"], variant).toMatchObject({ encrypted: true });
    }));

  it("CKV_AWS_79: IMDSv2 is required on every instance and on the launch template", () =>
    each((fixture, variant) => {
      for (const block of [...blocks(fixture, "aws_instance"), ...blocks(fixture, "aws_launch_template")]) {
        expect(block["metadata_options"], variant).toMatchObject({ http_endpoint: "enabled", http_tokens: "required" });
      }
    }));

  it("CKV_AWS_24: no SSH from 0.0.0.0/0, and port 22 only from adminCidr", () =>
    each((fixture, variant) => {
      const reachesSsh = (rule: Block) =>
        rule["ip_protocol"] === "-1" || (rule["from_port"] <= 22 && rule["to_port"] >= 22);
      const fromRanges = ingressRules(fixture).filter(
        (rule) => rule["cidr_ipv4"] !== undefined || rule["cidr_ipv6"] !== undefined,
      );
      expect(
        fromRanges.filter(reachesSsh).map((rule) => rule["cidr_ipv4"]),
        variant,
      ).toEqual(["203.0.113.7/32"]);
      for (const rule of fromRanges) expect([rule["cidr_ipv4"], rule["cidr_ipv6"]], variant).not.toContain("0.0.0.0/0");
      for (const rule of fromRanges) expect(rule["cidr_ipv6"], variant).toBeUndefined();
    }));

  it("CKV_AWS_24 holds by the rule too: an adminCidr of 0.0.0.0/0 is refused unless allowSshFromAnywhere", () => {
    expect(() => synthTestbed({}, { adminCidr: "0.0.0.0/0" })).toThrow(/adminCidr "0.0.0.0\/0"/);
  });

  it("CKV2_AWS_12: the VPC's default security group is taken over with no rules", () =>
    each((fixture, variant) => {
      const [vpcId] = Object.keys(resourcesOf(fixture.json, "aws_vpc"));
      const defaults = blocks(fixture, "aws_default_security_group");
      expect(defaults, variant).toHaveLength(1);
      expect(defaults[0]!["vpc_id"]).toBe(`\${aws_vpc.${vpcId}.id}`);
      expect(defaults[0]!["ingress"] ?? []).toEqual([]);
      expect(defaults[0]!["egress"] ?? []).toEqual([]);
    }));

  it("CKV_AWS_42: the EFS file system is encrypted", () => {
    const fileSystems = blocks(VARIANTS["efs + efa + spot"]!, "aws_efs_file_system");
    expect(fileSystems).toHaveLength(1);
    expect(fileSystems[0]).toMatchObject({ encrypted: true });
  });

  it("S3 state (CKV_AWS_19 / CKV_AWS_21 for the bucket): the backend encrypts, and the stack creates no bucket", () => {
    const fixture = VARIANTS["s3 backend"]!;
    expect(fixture.json.terraform?.["backend"]["s3"]).toMatchObject({ encrypt: true });
    // Versioning is a property of the bucket, which is the user's: README's AWS section asks for it.
    each((other, variant) =>
      expect(
        Object.keys(other.json.resource ?? {}).filter((type) => type.startsWith("aws_s3_")),
        variant,
      ).toEqual([]),
    );
  });

  it("CKV_AWS_153-like tag policy: every taggable resource carries the ringlab tags, and launch-time volumes and interfaces too", () =>
    each((fixture, variant) => {
      const defaults = fixture.json.provider?.["aws"]?.[0]?.["default_tags"]?.[0]?.["tags"] as Record<string, string>;
      for (const key of RESERVED_TAGS) expect(defaults, variant).toHaveProperty([key]);
      const taggable = fixture.stack.node
        .findAll()
        .filter((c): c is TerraformResource => c instanceof TerraformResource && "tagsInput" in c);
      expect(taggable.length, variant).toBeGreaterThan(10);
      for (const instance of blocks(fixture, "aws_instance")) {
        for (const key of RESERVED_TAGS) expect(instance["volume_tags"], variant).toHaveProperty([key]);
      }
      const template = blocks(fixture, "aws_launch_template")[0]!;
      const specs = template["tag_specifications"] as { resource_type: string; tags: Record<string, string> }[];
      for (const spec of specs)
        for (const key of RESERVED_TAGS) expect(spec.tags, `${variant} ${spec.resource_type}`).toHaveProperty([key]);
    }));

  it("CKV_AWS_135: every instance is EBS-optimized", () =>
    each((fixture, variant) => {
      for (const instance of blocks(fixture, "aws_instance")) expect(instance["ebs_optimized"], variant).toBe(true);
    }));

  it("CKV_AWS_23: every security group rule says what it is for", () =>
    each((fixture, variant) => {
      const rules = [
        ...blocks(fixture, "aws_vpc_security_group_ingress_rule"),
        ...blocks(fixture, "aws_vpc_security_group_egress_rule"),
      ];
      expect(rules.length).toBeGreaterThan(0);
      for (const rule of rules) expect(String(rule["description"] ?? "").length, variant).toBeGreaterThan(10);
      for (const group of blocks(fixture, "aws_security_group"))
        expect(String(group["description"]).length).toBeGreaterThan(10);
    }));

  it("deliberate exceptions hold as documented: CKV_AWS_88 public IPs, CKV_AWS_126 no detailed monitoring", () =>
    each((fixture, variant) => {
      expect(blocks(fixture, "aws_launch_template")[0]!["network_interfaces"][0], variant).toMatchObject({
        associate_public_ip_address: "true",
      });
      for (const instance of blocks(fixture, "aws_instance")) expect(instance["monitoring"], variant).toBe(false);
    }));
});

describe(".checkov.yaml", () => {
  const config = load(readFileSync(join(ROOT, ".checkov.yaml"), "utf8")) as {
    framework: string[];
    "skip-check": string[];
  };
  const configText = readFileSync(join(ROOT, ".checkov.yaml"), "utf8");
  const stackSources = readdirSync(join(ROOT, "stacks/constructs"))
    .map((file) => readFileSync(join(ROOT, "stacks/constructs", file), "utf8"))
    .join("\n");

  it("scans the synthesized Terraform JSON", () => {
    expect(config.framework).toEqual(["terraform_json"]);
  });

  it("explains every skipped check in a comment above it and next to the resource in stacks/", () => {
    expect(config["skip-check"].length).toBeGreaterThan(0);
    for (const check of config["skip-check"]) {
      expect(configText, check).toMatch(new RegExp(`#[^\\n]*\\n(\\s*#[^\\n]*\\n)*\\s*- ${check}\\n`));
      expect(stackSources, `${check} explained in stacks/constructs`).toContain(check);
    }
  });

  it("skips none of the checks the tests above enforce", () => {
    for (const enforced of [
      "CKV_AWS_8",
      "CKV_AWS_79",
      "CKV_AWS_24",
      "CKV2_AWS_12",
      "CKV_AWS_42",
      "CKV_AWS_135",
      "CKV_AWS_23",
    ]) {
      expect(config["skip-check"]).not.toContain(enforced);
    }
  });
});
