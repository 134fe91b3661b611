import { Construct } from "constructs";
import { EfsFileSystem } from "@cdktf/provider-aws/lib/efs-file-system/index.js";
import { EfsMountTarget } from "@cdktf/provider-aws/lib/efs-mount-target/index.js";

export interface EfsSharedStorageProps {
  /** Name tag and creation token of the file system. */
  readonly name: string;
  /** The cluster's subnet: the mount target gets an address there. */
  readonly subnetId: string;
  /** The cluster's security group: its self rules let the nodes reach NFS (2049) and nothing else can. */
  readonly securityGroupId: string;
}

/**
 * An encrypted EFS file system with one mount target in the cluster's subnet, for `sharedStorage: efs`.
 *
 * Deliberate exceptions (also in .checkov.yaml): the AWS-managed key, not a customer-managed KMS key
 * (CKV_AWS_184), which would outlive the testbed and bill monthly; no backup plan (CKV2_AWS_18): the file
 * system holds a campaign's scratch data for hours, and results are copied to the controller.
 *
 * Construct IDs: file-system, mount-target.
 */
export class EfsSharedStorage extends Construct {
  readonly fileSystem: EfsFileSystem;
  readonly mountTarget: EfsMountTarget;

  constructor(scope: Construct, id: string, props: EfsSharedStorageProps) {
    super(scope, id);
    if (props.name.trim() === "") throw new Error("EfsSharedStorage: name must not be empty");
    this.fileSystem = new EfsFileSystem(this, "file-system", {
      creationToken: `ringlab-${props.name}`,
      encrypted: true,
      tags: { Name: props.name },
    });
    this.mountTarget = new EfsMountTarget(this, "mount-target", {
      fileSystemId: this.fileSystem.id,
      subnetId: props.subnetId,
      securityGroups: [props.securityGroupId],
    });
  }

  /** The zone-specific DNS name of the mount target: what the nodes mount. */
  get mountDnsName(): string {
    return this.mountTarget.mountTargetDnsName;
  }
}
