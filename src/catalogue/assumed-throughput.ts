/**
 * ringlab's planning figure for a T4 (g4dn, the default instance type) in fp32, images per second of one worker:
 * coarse guesses, since nobody publishes T4 training throughput. `ringlab plan` and `ringlab predict` use them
 * only where no measured, published or scaled figure answers (src/predict/inputs.ts), and call them assumed.
 *
 * Each image model's figure is written in the worker's registry (registry.json: planning.t4Fp32ImagesPerSecond,
 * beside where it came from), so that a new model is its entry there; this table names them for the catalogue.
 */
import { PLANNING } from "../config/registry.ts";
import type { Model } from "../config/schema.ts";

export const ASSUMED_T4_FP32_IMAGES_PER_SECOND: Readonly<Partial<Record<Model, number>>> = Object.fromEntries(
  Object.entries(PLANNING).flatMap(([model, figures]) =>
    figures === undefined ? [] : [[model, figures.t4Fp32ImagesPerSecond]],
  ),
);
