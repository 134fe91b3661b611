/**
 * The images a local testbed needs, built here from docker/ (no registry needed). Builds run every time and
 * are cheap when nothing changed (Docker's layer cache), so a testbed never runs stale worker code.
 */
import { join } from "node:path";
import type { Docker } from "../../adapters/docker.ts";
import { DEFAULTS } from "../../config/schema.ts";
import type { Context } from "../../context/context.ts";
import { PrerequisiteError } from "../../util/errors.ts";
import { NODE_IMAGE } from "./plan.ts";

export const BASE_IMAGE = "ringlab/debian:bookworm";

/**
 * The images built side by side on BASE_IMAGE: docker/<dir>, at stage `target` where given. Each Dockerfile's
 * first instruction after FROM must be its own (docker/node/Dockerfile says why).
 */
export const SIDE_BY_SIDE_BUILDS: readonly { name: "node" | "worker"; dir: string; target?: string }[] = [
  { name: "node", dir: "node" },
  { name: "worker", dir: "worker", target: "cpu" },
];

export async function buildLocalImages(ctx: Context, docker: Docker, workerImage: string): Promise<void> {
  const docker_ = (path: string) => join(ctx.repoDir, "docker", path);
  await ctx.reporter.step(`base image ${BASE_IMAGE}`, async (detail) => {
    if (await docker.imageExists(BASE_IMAGE)) return;
    detail("debootstrap from the host's Debian mirror (about a minute, once)");
    await docker.runScript(docker_("base/build-base.sh"), [BASE_IMAGE]);
  });
  // An image of the user's own is used as it is, never overwritten with a build from docker/worker.
  const ownWorkerImage = workerImage !== DEFAULTS.local.workerImage;
  if (ownWorkerImage && !(await docker.imageExists(workerImage))) {
    throw new PrerequisiteError(`worker image ${workerImage} (testbed.workerImage) is not in the local Docker engine`, {
      hint: `build or load it first, or drop testbed.workerImage to use ${DEFAULTS.local.workerImage}, built from docker/worker`,
    });
  }
  const builds = SIDE_BY_SIDE_BUILDS.filter((b) => b.name === "node" || !ownWorkerImage).map((b) => ({
    ...b,
    tag: b.name === "node" ? NODE_IMAGE : workerImage,
  }));
  // Both build on the base image and not on each other: side by side, each showing the Dockerfile step it is at.
  await ctx.reporter.step(`${builds.map((b) => `${b.name} image ${b.tag}`).join(" and ")}`, async (detail) => {
    const at = new Map<string, string>();
    const show = (name: string, step: string) => {
      at.set(name, step);
      detail([...at].map(([image, text]) => `${image} ${text}`).join(" · "));
    };
    if (!ownWorkerImage) {
      // The worker's Python wheels (PyTorch's CPU build and the rest) for docker/worker/wheels/, which the build
      // installs from without reaching an index: fetched once, then found there.
      show("worker", "Python wheels into docker/worker/wheels (PyTorch's CPU build, once)");
      await docker.runScript(docker_("worker/wheels.sh"), [docker_("worker/wheels")]);
      if (!(await docker.imageExists(workerImage)))
        show("worker", "installing PyTorch from its wheels (about a minute, once)");
    }
    await Promise.all(
      builds.map((b) =>
        docker.build(docker_(b.dir), b.tag, {
          ...(b.target === undefined ? {} : { target: b.target }),
          buildArgs: { BASE_IMAGE },
          onStep: (step) => show(b.name, step),
        }),
      ),
    );
  });
}
