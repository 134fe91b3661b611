/** AMI ids and root volumes: the node image rules shared by the schema and ClusterNodes. Pure. */

const AMI_PATTERN = /^ami-([0-9a-f]{8}|[0-9a-f]{17})$/;

export function checkAmiId(ami: string): string | undefined {
  return AMI_PATTERN.test(ami) ? undefined : "expected an AMI id such as ami-0123456789abcdef0";
}

/** gp3 limits: the AMI needs at least 8 GiB, a gp3 volume holds at most 16 TiB. */
export const ROOT_VOLUME_GIB = { min: 8, max: 16384 } as const;

export function checkRootVolumeGiB(sizeGiB: number): string | undefined {
  return Number.isInteger(sizeGiB) && sizeGiB >= ROOT_VOLUME_GIB.min && sizeGiB <= ROOT_VOLUME_GIB.max
    ? undefined
    : `expected a whole number of GiB from ${ROOT_VOLUME_GIB.min} to ${ROOT_VOLUME_GIB.max}`;
}
