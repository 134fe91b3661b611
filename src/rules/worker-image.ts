/**
 * How the nodes get the worker image: the one rule the inventory (ansible/roles/worker's worker_image_source) and
 * the estimate (`ringlab plan`) share. Pure.
 *
 *   present  - the local testbed: its nodes use the host's engine, where docker/worker/build.sh built the image;
 *   tarball  - workerImageTarball is set: a `docker save` archive copied from the operator's machine to every node;
 *   build    - ringlab's own image name (ringlab/worker:<tag>): each node pulls NVIDIA's PyTorch base and builds the
 *              small ringlab layer on itself from docker/worker, so nothing large leaves the operator's machine;
 *   registry - any other name: the user pushed the image to a registry, and every node pulls it.
 */
export type WorkerImageSource = "present" | "tarball" | "build" | "registry";

/** Names ringlab builds itself; anything else is the user's own image in a registry. */
const RINGLAB_IMAGE_PATTERN = /^ringlab\/worker(:[\w.-]+)?$/;

export function workerImageSourceOf(target: "local" | "aws", workerImage: string, workerImageTarball: string | null | undefined): WorkerImageSource {
  if (target === "local") return "present";
  if (workerImageTarball !== null && workerImageTarball !== undefined) return "tarball";
  return RINGLAB_IMAGE_PATTERN.test(workerImage) ? "build" : "registry";
}
