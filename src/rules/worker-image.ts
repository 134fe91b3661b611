/**
 * How the nodes get the worker image: the one rule the inventory (ansible/roles/worker's worker_image_source) and
 * the estimate (`ringlab plan`) share. Pure.
 *
 *   present  - the nodes use the engine where docker/worker/build.sh built the image (the local testbed: its target
 *              says so, src/targets/local/target.ts, and this rule is not asked);
 *   tarball  - workerImageTarball is set: a `docker save` archive copied from the operator's machine to every node;
 *   build    - ringlab's own image name (ringlab/worker:<tag>): each node pulls NVIDIA's PyTorch base and builds the
 *              small ringlab layer on itself from docker/worker, so nothing large leaves the operator's machine;
 *   registry - any other name: the user pushed the image to a registry, and every node pulls it.
 */
export type WorkerImageSource = "present" | "tarball" | "build" | "registry";

/** Names ringlab builds itself; anything else is the user's own image in a registry. */
const RINGLAB_IMAGE_PATTERN = /^ringlab\/worker(:[\w.-]+)?$/;

/** How nodes that do not have the image get it: copied, built on them, or pulled. */
export function workerImageSourceOf(
  workerImage: string,
  workerImageTarball: string | null | undefined,
): Exclude<WorkerImageSource, "present"> {
  if (workerImageTarball !== null && workerImageTarball !== undefined) return "tarball";
  return RINGLAB_IMAGE_PATTERN.test(workerImage) ? "build" : "registry";
}
