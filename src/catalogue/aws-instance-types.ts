/**
 * What ringlab knows about EC2 instance types: accelerators, vCPUs, network and on-demand price. Data only,
 * with where each column comes from; the schema (EFA), ClusterNodes (EFA) and the estimate (price) read it.
 *
 * Figures were taken from the sources below in 2025. Prices change (AWS cut P4/P5 prices in June 2025):
 * check before you spend. An entry's `uncertain` lists the columns whose figure was not confirmed against
 * the source page and may be off.
 */

export interface Source {
  readonly url: string;
  /** When the figure was read from the source, YYYY-MM. */
  readonly retrieved: string;
}

export interface InstanceTypeFacts {
  readonly gpus: number;
  /** null for instance types without GPUs. */
  readonly gpuModel: string | null;
  /** Memory of one GPU. */
  readonly gpuMemoryGiB: number;
  readonly vcpus: number;
  /** Whether an Elastic Fabric Adapter can be attached. */
  readonly efa: boolean;
  /** Sustained bandwidth; equal to burst for types without "up to". */
  readonly baselineNetworkGbps: number;
  /** The advertised figure ("up to 25 Gigabit"); the sum over all cards for multi-card types. */
  readonly burstNetworkGbps: number;
  /** On-demand Linux price in us-east-1, USD per instance-hour. */
  readonly onDemandUsdPerHour: number;
  /** Columns whose figure is from memory of the source rather than checked against it. */
  readonly uncertain?: readonly (keyof Omit<InstanceTypeFacts, "uncertain">)[];
}

const SPECS_PAGE = { url: "https://docs.aws.amazon.com/ec2/latest/instancetypes/ac.html", retrieved: "2025-06" };
const COMPUTE_SPECS_PAGE = {
  url: "https://docs.aws.amazon.com/ec2/latest/instancetypes/co.html",
  retrieved: "2025-06",
};

/** Where each column comes from. */
export const SOURCES: Readonly<Record<keyof Omit<InstanceTypeFacts, "uncertain">, readonly Source[]>> = {
  gpus: [SPECS_PAGE],
  gpuModel: [SPECS_PAGE],
  gpuMemoryGiB: [SPECS_PAGE],
  vcpus: [SPECS_PAGE, COMPUTE_SPECS_PAGE],
  efa: [
    { url: "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa.html#efa-instance-types", retrieved: "2025-06" },
  ],
  baselineNetworkGbps: [SPECS_PAGE, COMPUTE_SPECS_PAGE],
  burstNetworkGbps: [SPECS_PAGE, COMPUTE_SPECS_PAGE],
  onDemandUsdPerHour: [{ url: "https://aws.amazon.com/ec2/pricing/on-demand/", retrieved: "2025-06" }],
};

type Row = readonly [
  gpus: number,
  gpuModel: string | null,
  gpuMemoryGiB: number,
  vcpus: number,
  efa: boolean,
  baselineNetworkGbps: number,
  burstNetworkGbps: number,
  onDemandUsdPerHour: number,
];

function facts(row: Row, uncertain?: InstanceTypeFacts["uncertain"]): InstanceTypeFacts {
  const [gpus, gpuModel, gpuMemoryGiB, vcpus, efa, baselineNetworkGbps, burstNetworkGbps, onDemandUsdPerHour] = row;
  return {
    gpus,
    gpuModel,
    gpuMemoryGiB,
    vcpus,
    efa,
    baselineNetworkGbps,
    burstNetworkGbps,
    onDemandUsdPerHour,
    ...(uncertain ? { uncertain } : {}),
  };
}

const T4 = "NVIDIA T4";
const A10G = "NVIDIA A10G";
const L4 = "NVIDIA L4";
const L40S = "NVIDIA L40S";
const V100 = "NVIDIA V100";
const A100 = "NVIDIA A100";
const H100 = "NVIDIA H100";

//                                               gpus model gpuGiB vcpu  efa   base  burst  USD/h
export const AWS_INSTANCE_TYPES: Readonly<Record<string, InstanceTypeFacts>> = {
  "g4dn.xlarge": facts([1, T4, 16, 4, false, 5, 25, 0.526]),
  "g4dn.2xlarge": facts([1, T4, 16, 8, false, 10, 25, 0.752]),
  "g4dn.4xlarge": facts([1, T4, 16, 16, false, 20, 25, 1.204]),
  "g4dn.8xlarge": facts([1, T4, 16, 32, true, 50, 50, 2.176]),
  "g4dn.12xlarge": facts([4, T4, 16, 48, true, 50, 50, 3.912]),
  "g4dn.16xlarge": facts([1, T4, 16, 64, true, 50, 50, 4.352]),
  "g4dn.metal": facts([8, T4, 16, 96, true, 100, 100, 7.824]),
  "g5.xlarge": facts([1, A10G, 24, 4, false, 2.5, 10, 1.006]),
  "g5.2xlarge": facts([1, A10G, 24, 8, false, 5, 10, 1.212]),
  "g5.4xlarge": facts([1, A10G, 24, 16, false, 10, 25, 1.624]),
  "g5.8xlarge": facts([1, A10G, 24, 32, true, 25, 25, 2.448]),
  "g5.12xlarge": facts([4, A10G, 24, 48, true, 40, 40, 5.672]),
  "g5.16xlarge": facts([1, A10G, 24, 64, true, 25, 25, 4.096]),
  "g5.24xlarge": facts([4, A10G, 24, 96, true, 50, 50, 8.144]),
  "g5.48xlarge": facts([8, A10G, 24, 192, true, 100, 100, 16.288]),
  "g6.xlarge": facts([1, L4, 24, 4, false, 2.5, 10, 0.805]),
  "g6.8xlarge": facts([1, L4, 24, 32, true, 25, 25, 2.014]),
  "g6.12xlarge": facts([4, L4, 24, 48, true, 40, 40, 4.602]),
  "g6.16xlarge": facts([1, L4, 24, 64, true, 25, 25, 3.397], ["onDemandUsdPerHour"]),
  "g6.24xlarge": facts([4, L4, 24, 96, true, 50, 50, 6.675], ["onDemandUsdPerHour"]),
  "g6.48xlarge": facts([8, L4, 24, 192, true, 100, 100, 13.35]),
  "g6e.xlarge": facts([1, L40S, 48, 4, false, 2.5, 20, 1.861], ["baselineNetworkGbps"]),
  "g6e.8xlarge": facts([1, L40S, 48, 32, true, 25, 25, 4.529], ["onDemandUsdPerHour"]),
  "g6e.12xlarge": facts([4, L40S, 48, 48, true, 100, 100, 10.493]),
  "g6e.16xlarge": facts([1, L40S, 48, 64, true, 35, 35, 7.577], ["onDemandUsdPerHour"]),
  "g6e.24xlarge": facts([4, L40S, 48, 96, true, 200, 200, 15.066], ["onDemandUsdPerHour"]),
  "g6e.48xlarge": facts([8, L40S, 48, 192, true, 400, 400, 30.131]),
  "p3.2xlarge": facts([1, V100, 16, 8, false, 2.5, 10, 3.06], ["baselineNetworkGbps"]),
  "p3.8xlarge": facts([4, V100, 16, 32, false, 10, 10, 12.24]),
  "p3.16xlarge": facts([8, V100, 16, 64, false, 25, 25, 24.48]),
  "p3dn.24xlarge": facts([8, V100, 32, 96, true, 100, 100, 31.212]),
  "p4d.24xlarge": facts([8, A100, 40, 96, true, 400, 400, 32.773], ["onDemandUsdPerHour"]),
  "p4de.24xlarge": facts([8, A100, 80, 96, true, 400, 400, 40.966], ["onDemandUsdPerHour"]),
  "p5.48xlarge": facts([8, H100, 80, 192, true, 3200, 3200, 98.32], ["onDemandUsdPerHour"]),
  "c5n.9xlarge": facts([0, null, 0, 36, true, 50, 50, 1.944]),
  "c5n.18xlarge": facts([0, null, 0, 72, true, 100, 100, 3.888]),
  "c5n.metal": facts([0, null, 0, 72, true, 100, 100, 3.888]),
};

export function instanceTypeFacts(instanceType: string): InstanceTypeFacts | undefined {
  return Object.hasOwn(AWS_INSTANCE_TYPES, instanceType) ? AWS_INSTANCE_TYPES[instanceType] : undefined;
}

/** Instance types with an Elastic Fabric Adapter, as far as the catalogue knows them. */
export const EFA_INSTANCE_TYPES: ReadonlySet<string> = new Set(
  Object.entries(AWS_INSTANCE_TYPES)
    .filter(([, entry]) => entry.efa)
    .map(([instanceType]) => instanceType),
);

/** The EFA rule shared by the schema and ClusterNodes. */
export function checkEfaInstanceType(instanceType: string): string | undefined {
  if (EFA_INSTANCE_TYPES.has(instanceType)) return undefined;
  const known = instanceTypeFacts(instanceType) === undefined ? " (or is not in ringlab's catalogue)" : "";
  return `instance type ${instanceType} has no EFA${known}; use one of ${[...EFA_INSTANCE_TYPES].slice(0, 6).join(", ")}, ... or efa: false`;
}

/** On-demand us-east-1 price, or undefined for a type the catalogue does not list. */
export function onDemandUsdPerHour(instanceType: string): number | undefined {
  return instanceTypeFacts(instanceType)?.onDemandUsdPerHour;
}

/**
 * GPU instance types whose baseline bandwidth is at least `gbps`, cheapest first: what to suggest when a shaped
 * rate is above the chosen type's baseline.
 */
export function gpuTypesSustaining(gbps: number): string[] {
  return Object.entries(AWS_INSTANCE_TYPES)
    .filter(([, entry]) => entry.gpus > 0 && entry.baselineNetworkGbps >= gbps)
    .sort(([, a], [, b]) => a.onDemandUsdPerHour - b.onDemandUsdPerHour)
    .map(([instanceType]) => instanceType);
}

/**
 * The shaped-rate rule shared by the schema and the CLI: tc can only slow a link down, so a rate above what the
 * instance sustains measures the instance's baseline (or its burst, for as long as the credits last), not the rate.
 * Undefined when the rate fits or the type is not in the catalogue.
 */
export function checkShapedRate(instanceType: string, rate: string, rateGbps: number): string | undefined {
  const entry = instanceTypeFacts(instanceType);
  if (entry === undefined || rateGbps <= entry.baselineNetworkGbps) return undefined;
  const burst =
    entry.burstNetworkGbps > entry.baselineNetworkGbps
      ? ` (it bursts to ${entry.burstNetworkGbps} Gbit/s only until its network credits run out, then drops back)`
      : "";
  const sustaining = gpuTypesSustaining(rateGbps).slice(0, 5);
  const suggestion =
    sustaining.length > 0
      ? `use an instance type that sustains it (${sustaining.join(", ")}, ...) or a lower rate`
      : "use a lower rate";
  return (
    `found ${rate}, above the ${entry.baselineNetworkGbps} Gbit/s that ${instanceType} sustains${burst}, ` +
    `so the runs would measure the instance, not ${rate}; ${suggestion}`
  );
}

/** EFA traffic bypasses the kernel's network stack, so tc shaping cannot apply to it. */
export const EFA_SHAPING_PROBLEM =
  "found true with a shaped bandwidth: NCCL over EFA bypasses the kernel's network stack (OS bypass), where tc " +
  "shapes the links, so the runs would measure EFA at full speed, not the shaped rate; use efa: false to shape " +
  "the links, or set every bandwidth to unlimited to measure EFA";
