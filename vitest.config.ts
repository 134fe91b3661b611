import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Every test's temporary folder goes under one that is removed at the end (test/global-setup.ts).
    globalSetup: ["test/global-setup.ts"],
    // Tests start real processes (ansible, cdktf, docker); give them room on a 2-core machine.
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
  },
});
