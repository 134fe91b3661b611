/**
 * Limits that both the campaign schema (src/config) and the testbeds (src/testbed) apply, kept below both so that
 * neither imports the other for them. A leaf: imports nothing.
 */

/** Docker refuses a `--cpus` below this. */
export const SMALLEST_CPU_QUOTA = 0.01;
