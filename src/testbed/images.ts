/**
 * The images a local testbed needs, built here from docker/ (no registry needed). Builds run every time and
 * are cheap when nothing changed (Docker's layer cache), so a testbed never runs stale worker code.
 */
import { join } from "node:path";
import type { Docker } from "../adapters/docker.ts";
import { DEFAULTS } from "../config/schema.ts";
import type { Context } from "../context.ts";
import { PrerequisiteError } from "../errors.ts";
import { NODE_IMAGE } from "./local-plan.ts";

export const BASE_IMAGE = "ringlab/debian:bookworm";

export async function buildLocalImages(ctx: Context, docker: Docker, workerImage: string): Promise<void> {
  const docker_ = (path: string) => join(ctx.repoDir, "docker", path);
  await ctx.reporter.step(`base image ${BASE_IMAGE}`, async (detail) => {
    if (await docker.imageExists(BASE_IMAGE)) return;
    detail("debootstrap from the host's Debian mirror (about a minute, once)");
    await docker.runScript(docker_("base/build-base.sh"), [BASE_IMAGE]);
  });
  await ctx.reporter.step(`node image ${NODE_IMAGE}`, async () => {
    await docker.build(docker_("node"), NODE_IMAGE, { buildArgs: { BASE_IMAGE } });
  });
  await ctx.reporter.step(`worker image ${workerImage}`, async (detail) => {
    if (workerImage !== DEFAULTS.local.workerImage) {
      // An image of the user's own: use it as it is, never overwrite it with a build from docker/worker.
      if (!(await docker.imageExists(workerImage))) {
        throw new PrerequisiteError(`worker image ${workerImage} (testbed.workerImage) is not in the local Docker engine`, {
          hint: `build or load it first, or drop testbed.workerImage to use ${DEFAULTS.local.workerImage}, built from docker/worker`,
        });
      }
      return;
    }
    if (!(await docker.imageExists(workerImage))) detail("installing PyTorch from Debian packages (a few minutes, once)");
    await docker.build(docker_("worker"), workerImage, { target: "cpu", buildArgs: { BASE_IMAGE } });
  });
}
