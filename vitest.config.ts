import { defineConfig } from "vitest/config";

/**
 * Three groups of tests, each run by its own npm script (README, "Tests and benchmarks"):
 * - quick: everything that needs no Docker engine, no terraform and no AWS emulator (npm run test:quick);
 * - tools: the AWS path through the real terraform and provider against moto on 127.0.0.1, and the Docker adapter
 *   against the engine;
 * - e2e: the local testbed end to end, one file at a time (they share the Docker engine and the 2 cores).
 */
const TOOLS = ["test/targets/aws/**/*.test.ts", "test/stacks/terraform.test.ts", "test/adapters/docker.test.ts"];
const E2E = ["test/e2e/**/*.test.ts"];

export default defineConfig({
  test: {
    // Every test's temporary folder goes under one that is removed at the end (test/global-setup.ts).
    globalSetup: ["test/global-setup.ts"],
    // Tests start real processes (ansible, terraform, docker); give them room on a 2-core machine.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    env: {
      CHECKPOINT_DISABLE: "1",
      // No test may reach AWS: the SDK, the AWS CLI and the Terraform provider all fall back to this endpoint,
      // where nothing listens, and to credentials that are not anyone's. Tests that need AWS start an emulator
      // on 127.0.0.1 and point at it themselves (RINGLAB_TEST_AWS_ENDPOINT).
      AWS_ENDPOINT_URL: "http://127.0.0.1:9",
      AWS_ACCESS_KEY_ID: "testing-not-a-key",
      AWS_SECRET_ACCESS_KEY: "testing-not-a-secret",
      AWS_EC2_METADATA_DISABLED: "true",
      AWS_CONFIG_FILE: "/dev/null",
      AWS_SHARED_CREDENTIALS_FILE: "/dev/null",
    },
    projects: [
      { extends: true, test: { name: "quick", include: ["test/**/*.test.ts"], exclude: [...TOOLS, ...E2E] } },
      // Mostly waiting on terraform's polling of the emulator: runs beside the quick files.
      { extends: true, test: { name: "tools", include: TOOLS } },
      // One file at a time: npm run test:e2e passes --no-file-parallelism.
      { extends: true, test: { name: "e2e", include: E2E } },
    ],
  },
});
