/**
 * The test-only endpoint override of the stack's AWS provider (RINGLAB_TEST_AWS_ENDPOINT, see src/aws/clients.ts):
 * every service the stack's resources belong to is sent to one emulator on loopback, with fake credentials and
 * no calls to STS, IAM or the instance metadata service on the side.
 *
 * SERVICE_OF_TYPE is the contract: a resource type the stack uses must be listed here, and its service must be
 * in OVERRIDDEN_SERVICES; test/stacks/endpoints.test.ts fails otherwise, so a new resource cannot quietly
 * reach AWS itself during an emulator test.
 */
import type { AwsProviderConfig } from "@cdktf/provider-aws/lib/provider/index.js";
import { FAKE_CREDENTIALS } from "../src/targets/aws/clients.ts";

/** The provider's endpoint keys the override sets: the stack's services, plus sts and iam the provider calls itself. */
export const OVERRIDDEN_SERVICES = ["ec2", "efs", "s3", "sts", "iam"] as const;
export type OverriddenService = (typeof OVERRIDDEN_SERVICES)[number];

/** The API each resource and data source type of the stack is created through. */
export const SERVICE_OF_TYPE: Readonly<Record<string, OverriddenService>> = {
  aws_vpc: "ec2",
  aws_subnet: "ec2",
  aws_internet_gateway: "ec2",
  aws_route: "ec2",
  aws_route_table: "ec2",
  aws_route_table_association: "ec2",
  aws_default_security_group: "ec2",
  aws_security_group: "ec2",
  aws_vpc_security_group_ingress_rule: "ec2",
  aws_vpc_security_group_egress_rule: "ec2",
  aws_placement_group: "ec2",
  aws_key_pair: "ec2",
  aws_launch_template: "ec2",
  aws_instance: "ec2",
  aws_ami: "ec2",
  aws_efs_file_system: "efs",
  aws_efs_mount_target: "efs",
};

/** The provider settings that send it to `endpoint` (a loopback URL checked by testAwsEndpoint). */
export function endpointOverride(endpoint: string): Partial<AwsProviderConfig> {
  return {
    endpoints: [Object.fromEntries(OVERRIDDEN_SERVICES.map((service) => [service, endpoint]))],
    accessKey: FAKE_CREDENTIALS.accessKeyId,
    secretKey: FAKE_CREDENTIALS.secretAccessKey,
    skipCredentialsValidation: true,
    skipRequestingAccountId: true,
    skipMetadataApiCheck: "true",
    s3UsePathStyle: true,
  };
}
