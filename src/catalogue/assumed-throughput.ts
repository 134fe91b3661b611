/**
 * ringlab's planning figure for a T4 (g4dn, the default instance type) in fp32, images per second of one worker:
 * coarse guesses, since nobody publishes T4 training throughput. `ringlab plan` and `ringlab predict` use them
 * only where no measured, published or scaled figure answers (src/predict/inputs.ts), and call them assumed.
 * Data only.
 */
import type { Model } from "../config/schema.ts";

export const ASSUMED_T4_FP32_IMAGES_PER_SECOND: Readonly<Partial<Record<Model, number>>> = {
  tiny: 5_000, small: 4_000, resnet50: 90, resnet101: 55, resnet152: 38, inception_v3: 60,
};
