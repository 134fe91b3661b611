/**
 * Checks before `terraform apply` that would otherwise fail after money is spent (or half-way through creating the
 * stack): the worker image tarball exists, the zone offers the instance type, and the account's vCPU quota for the
 * type's family covers the testbed. Reads only; creates nothing.
 *
 * The AWS calls sit behind two small interfaces so that tests can give the quota lookup a double: the emulator the
 * tests use (moto) answers DescribeInstanceTypeOfferings but holds no EC2 quotas in Service Quotas.
 */
import { DescribeInstanceTypeOfferingsCommand, DescribeInstanceTypesCommand, EC2Client } from "@aws-sdk/client-ec2";
import { GetServiceQuotaCommand, ServiceQuotasClient } from "@aws-sdk/client-service-quotas";
import { instanceTypeFacts } from "../../catalogue/aws-instance-types.ts";
import { tarballProblem } from "../../config/load.ts";
import { PrerequisiteError, UsageError } from "../../util/errors.ts";
import type { AwsTestbedSpec } from "../../testbed/spec.ts";
import { awsClientConfig } from "./clients.ts";

/** What preflight asks EC2. */
export interface Ec2Lookups {
  /** Whether the availability zone offers the instance type. */
  offeredInZone(instanceType: string, availabilityZone: string): Promise<boolean>;
  /** The type's default vCPU count, or undefined when EC2 does not know the type. */
  vcpus(instanceType: string): Promise<number | undefined>;
}

/** What preflight asks Service Quotas. */
export interface VcpuQuotaLookup {
  /** The applied value of an EC2 quota (vCPUs), or a reason it could not be read. */
  quota(quotaCode: string): Promise<{ readonly vcpus: number } | { readonly unreadable: string }>;
}

export interface PreflightOptions {
  /** @default EC2 through the AWS SDK (or the RINGLAB_TEST_AWS_ENDPOINT emulator) */
  readonly ec2?: Ec2Lookups;
  /** @default Service Quotas through the AWS SDK (or the RINGLAB_TEST_AWS_ENDPOINT emulator) */
  readonly quotas?: VcpuQuotaLookup;
  /** Where RINGLAB_TEST_AWS_ENDPOINT is read. @default process.env */
  readonly env?: NodeJS.ProcessEnv;
  /** Bound on each AWS call. @default 20 seconds */
  readonly callTimeoutMs?: number;
}

export interface PreflightReport {
  /** vCPUs the testbed needs from its family's quota. */
  readonly vcpusNeeded: number;
  /** The quota that was checked, if it could be read. */
  readonly quota?: { readonly code: string; readonly name: string; readonly vcpus: number };
  /** Checks that could not be made (e.g. no permission to read quotas); the deploy may still fail on them. */
  readonly warnings: readonly string[];
}

export const QUOTA_REQUEST_URL = "https://console.aws.amazon.com/servicequotas/home";

export interface VcpuQuota {
  readonly code: string;
  readonly name: string;
}

/** Service Quotas codes of EC2's vCPU limits, by instance family; on-demand and spot count separately. */
const VCPU_QUOTAS: readonly { readonly family: RegExp; readonly onDemand: VcpuQuota; readonly spot: VcpuQuota }[] = [
  {
    family: /^(g|vt)\d/,
    onDemand: { code: "L-DB2E81BA", name: "Running On-Demand G and VT instances" },
    spot: { code: "L-3819A6DF", name: "All G and VT Spot Instance Requests" },
  },
  {
    family: /^p\d/,
    onDemand: { code: "L-417A185B", name: "Running On-Demand P instances" },
    spot: { code: "L-7212CCBC", name: "All P Spot Instance Requests" },
  },
  {
    family: /^[acdhimrtz]\d/,
    onDemand: { code: "L-1216C47A", name: "Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances" },
    spot: { code: "L-34B43A08", name: "All Standard (A, C, D, H, I, M, R, T, Z) Spot Instance Requests" },
  },
];

/** The quota an instance type's vCPUs count against, or undefined for a family ringlab has no code for. */
export function vcpuQuotaFor(instanceType: string, spot: boolean): VcpuQuota | undefined {
  const entry = VCPU_QUOTAS.find((quota) => quota.family.test(instanceType));
  return entry === undefined ? undefined : spot ? entry.spot : entry.onDemand;
}

/** The message of a quota too small for the testbed. */
export function quotaShortMessage(
  spec: AwsTestbedSpec,
  quota: VcpuQuota,
  vcpusPerNode: number,
  quotaVcpus: number,
): string {
  return (
    `${spec.nodes} × ${spec.instanceType} need ${spec.nodes * vcpusPerNode} vCPUs (${vcpusPerNode} each), but the ` +
    `account's quota "${quota.name}" (${quota.code}) in ${spec.region} is ${quotaVcpus} vCPUs`
  );
}

/**
 * Runs the checks for a testbed about to be deployed. Throws a UsageError (exit 2) for a missing tarball or an
 * instance type the zone does not offer, a PrerequisiteError (exit 3) for a quota too small or an EC2 that cannot be
 * asked (credentials); a quota that cannot be read is a warning in the report.
 */
export async function preflightAws(spec: AwsTestbedSpec, options: PreflightOptions = {}): Promise<PreflightReport> {
  if (spec.workerImageTarball !== null) {
    const problem = tarballProblem(spec.workerImageTarball);
    if (problem !== undefined) throw new UsageError(`workerImageTarball: ${problem}`);
  }
  const env = options.env ?? process.env;
  const timeoutMs = options.callTimeoutMs ?? 20_000;
  const ec2 = options.ec2 ?? sdkEc2Lookups(spec.region, env, timeoutMs);
  await checkOffered(spec, ec2);
  const vcpusPerNode =
    instanceTypeFacts(spec.instanceType)?.vcpus ?? (await askEc2(spec, () => ec2.vcpus(spec.instanceType)));
  if (vcpusPerNode === undefined) throw new UsageError(`EC2 does not know the instance type ${spec.instanceType}`);
  const vcpusNeeded = spec.nodes * vcpusPerNode;
  const quota = vcpuQuotaFor(spec.instanceType, spec.spot);
  if (quota === undefined) {
    return {
      vcpusNeeded,
      warnings: [
        `no vCPU quota code known for ${spec.instanceType}; its quota was not checked (${vcpusNeeded} vCPUs needed)`,
      ],
    };
  }
  const answer = await (options.quotas ?? sdkVcpuQuotas(spec.region, env, timeoutMs)).quota(quota.code);
  if ("unreadable" in answer) {
    return {
      vcpusNeeded,
      warnings: [
        `could not read the quota "${quota.name}" (${quota.code}): ${answer.unreadable}; ${vcpusNeeded} vCPUs are needed`,
      ],
    };
  }
  if (answer.vcpus < vcpusNeeded) {
    throw new PrerequisiteError(quotaShortMessage(spec, quota, vcpusPerNode, answer.vcpus), {
      hint: `request at least ${vcpusNeeded} vCPUs for ${quota.code} in ${spec.region} at ${QUOTA_REQUEST_URL} (running instances count against it too), or use fewer or smaller nodes`,
    });
  }
  return { vcpusNeeded, quota: { ...quota, vcpus: answer.vcpus }, warnings: [] };
}

async function checkOffered(spec: AwsTestbedSpec, ec2: Ec2Lookups): Promise<void> {
  const offered = await askEc2(spec, () => ec2.offeredInZone(spec.instanceType, spec.availabilityZone));
  if (!offered) {
    throw new UsageError(`the availability zone ${spec.availabilityZone} does not offer ${spec.instanceType}`, {
      hint:
        `pick another testbed.availabilityZone of ${spec.region} (aws ec2 describe-instance-type-offerings --location-type availability-zone ` +
        `--filters Name=instance-type,Values=${spec.instanceType} --region ${spec.region} lists them) or another instance type`,
    });
  }
}

/** An EC2 call that fails (no credentials, no network) stops here, before anything is created. */
async function askEc2<T>(spec: AwsTestbedSpec, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    throw new PrerequisiteError(
      `cannot ask EC2 in ${spec.region} about ${spec.instanceType}: ${(error as Error).message}`,
      {
        hint: "check the AWS credentials and region (aws sts get-caller-identity)",
        cause: error,
      },
    );
  }
}

/** EC2 through the SDK. */
export function sdkEc2Lookups(region: string, env: NodeJS.ProcessEnv = process.env, timeoutMs = 20_000): Ec2Lookups {
  const client = new EC2Client({ maxAttempts: 2, ...awsClientConfig(region, env) });
  return {
    async offeredInZone(instanceType, availabilityZone) {
      const answer = await client.send(
        new DescribeInstanceTypeOfferingsCommand({
          LocationType: "availability-zone",
          Filters: [
            { Name: "location", Values: [availabilityZone] },
            { Name: "instance-type", Values: [instanceType] },
          ],
        }),
        { abortSignal: AbortSignal.timeout(timeoutMs) },
      );
      return (answer.InstanceTypeOfferings ?? []).some(
        (offering) => offering.InstanceType === instanceType && offering.Location === availabilityZone,
      );
    },
    async vcpus(instanceType) {
      try {
        const answer = await client.send(new DescribeInstanceTypesCommand({ InstanceTypes: [instanceType as never] }), {
          abortSignal: AbortSignal.timeout(timeoutMs),
        });
        return answer.InstanceTypes?.[0]?.VCpuInfo?.DefaultVCpus;
      } catch (error) {
        if ((error as { name?: string }).name === "InvalidInstanceType") return undefined;
        throw error;
      }
    },
  };
}

/** Service Quotas through the SDK; a quota it cannot read (no permission, unknown code) is reported, not thrown. */
export function sdkVcpuQuotas(
  region: string,
  env: NodeJS.ProcessEnv = process.env,
  timeoutMs = 20_000,
): VcpuQuotaLookup {
  const client = new ServiceQuotasClient({ maxAttempts: 2, ...awsClientConfig(region, env) });
  return {
    async quota(quotaCode) {
      try {
        const answer = await client.send(new GetServiceQuotaCommand({ ServiceCode: "ec2", QuotaCode: quotaCode }), {
          abortSignal: AbortSignal.timeout(timeoutMs),
        });
        const vcpus = answer.Quota?.Value;
        return vcpus === undefined ? { unreadable: "Service Quotas returned no value" } : { vcpus };
      } catch (error) {
        const name = (error as { name?: string }).name ?? "Error";
        return { unreadable: `${name}: ${(error as Error).message}` };
      }
    },
  };
}
