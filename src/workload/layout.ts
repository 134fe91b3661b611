/**
 * A workload's layout degrees, as predict/ and plan ask them: each layout's rules are its unit's (src/layouts/), the
 * worker's docker/worker/ringlab_worker/parallel/dims.py on the other side; the two are kept the same by one table of
 * cases that both test suites read (test/fixtures/layout-dims.json). Pure.
 */
export { dataParallel, stageBlocks, type DimsResult, type ParallelDims } from "../layouts/dims.ts";
export { dimsOf } from "../layouts/index.ts";
