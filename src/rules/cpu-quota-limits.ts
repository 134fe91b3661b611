/**
 * Limits that both the campaign schema (src/config) and the testbeds (src/testbed) apply, kept below both so that
 * neither imports the other for them. A leaf: imports nothing.
 */

/**
 * The CFS period of every local worker's CPU quota, ms (ansible/roles/worker/defaults/main.yml's
 * worker_cpu_period_us says the same): the worker may use its quota's share of every such period. Not Docker's
 * `--cpus` period of 100 ms: a worker that waited on the network then runs at a whole core for up to half the next
 * period (at 0.5 cores), so every step after an all-reduce ran faster than the quota, by an amount that changed from
 * run to run with where the wait ended in the period (test/bench/README.md, "The CPU quota's period").
 */
export const CPU_PERIOD_MS = 10;

/** The kernel refuses a CFS quota below 1 ms: 0.1 cores of a 10 ms period. */
export const SMALLEST_CPU_QUOTA = 0.1;
