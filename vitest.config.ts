import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Tests start real processes (ansible, cdktf, docker); give them room on a 2-core machine.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    env: { CHECKPOINT_DISABLE: "1" },
  },
});
