/**
 * powersgd: ring all-reduces of fewer bytes (each gradient matrix as two rank-r factors, the vectors whole), so the
 * ring's bound with S its bytes per step. Those follow from the model's matrix shapes, which a run of it records
 * (the worker's wireBytesPerStep): before a run they are unknown here. Three all-reduces per DDP bucket (the
 * uncompressed tensors, then P, then Q; the buckets hold the whole fp32 gradient).
 */
import { numericKnob } from "../config/registry.ts";
import { DDP_DEFAULT_BUCKET_CAP_MB } from "../results/comm-model.ts";
import { ring } from "./ring.ts";
import type { ReductionUnit } from "./unit.ts";

export const powersgd: ReductionUnit = {
  lowerBoundSeconds: ring.lowerBoundSeconds,
  wireBytesPerStep: () => ({
    missing:
      "PowerSGD's bytes per step follow from the model's matrix shapes, which a run of it records: its report predicts it from the ring's probe",
  }),
  allReducesPerStep: (gradientBytes, knobs) => {
    const bucketBytes = (numericKnob(knobs, "bucketCapMb") ?? DDP_DEFAULT_BUCKET_CAP_MB) * 1024 * 1024;
    return 3 * Math.max(1, Math.ceil(gradientBytes / bucketBytes));
  },
};
