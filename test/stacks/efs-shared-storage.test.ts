import { Testing } from "cdktf";
import { describe, expect, it } from "vitest";
import { EfsSharedStorage, type EfsSharedStorageProps } from "../../stacks/constructs/efs-shared-storage.ts";
import { parse, resourcesOf } from "./fixtures.ts";

const props: EfsSharedStorageProps = {
  name: "tb",
  subnetId: "subnet-0123456789abcdef0",
  securityGroupId: "sg-0123456789abcdef0",
};

describe("EfsSharedStorage", () => {
  const synthesized = Testing.synthScope((scope) => {
    new EfsSharedStorage(scope, "shared-storage", props);
  });

  it("creates an encrypted file system", () => {
    expect(Testing.toHaveResourceWithProperties(synthesized, "aws_efs_file_system", { encrypted: true })).toBe(true);
  });

  it("puts its mount target in the cluster subnet behind the cluster security group", () => {
    const json = parse(synthesized);
    const [fileSystemId] = Object.keys(resourcesOf(json, "aws_efs_file_system"));
    expect(Object.values(resourcesOf(json, "aws_efs_mount_target"))).toEqual([
      {
        file_system_id: `\${aws_efs_file_system.${fileSystemId}.id}`,
        subnet_id: props.subnetId,
        security_groups: [props.securityGroupId],
      },
    ]);
  });

  it("rejects an empty name", () => {
    expect(() =>
      Testing.synthScope((scope) => {
        new EfsSharedStorage(scope, "shared-storage", { ...props, name: "" });
      }),
    ).toThrow(/name must not be empty/);
  });
});
