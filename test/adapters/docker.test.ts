import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { Docker } from "../../src/adapters/docker.ts";
import { PrerequisiteError, ToolError } from "../../src/util/errors.ts";

const logFile = () => join(mkdtempSync(join(tmpdir(), "ringlab-docker-")), "tool.log");

describe("Docker adapter", () => {
  it("says Docker is not installed, and how to install it, when the CLI is missing", async () => {
    const error = await new Docker({ binary: "docker-that-does-not-exist" }).assertAvailable().catch((e) => e);
    expect(error).toBeInstanceOf(PrerequisiteError);
    expect(error.message).toBe("docker-that-does-not-exist is not installed (needed for docker)");
    expect(error.hint).toMatch(/npm run setup/);
  });

  it("says the engine is not reachable, and how to start it, when nothing answers on the socket", async () => {
    const docker = new Docker({ env: { DOCKER_HOST: "unix:///tmp/ringlab-no-such-docker.sock" } });
    const error = await docker.assertAvailable().catch((e) => e);
    expect(error).toBeInstanceOf(PrerequisiteError);
    expect(error.message).toMatch(
      /^Docker is installed but its engine is not reachable: .*Cannot connect to the Docker daemon/,
    );
    expect(error.hint).toMatch(/dockerd/);
  });

  it("answers with the engine version when it runs", async () => {
    expect(await new Docker().assertAvailable()).toMatch(/^\d+\.\d+/);
  });

  it("turns a failed command into a ToolError with its exit code and output, and logs the output", async () => {
    const log = logFile();
    const error = await new Docker({ logFile: log }).remove("network", ["ringlab-no-such-network"]).catch((e) => e);
    expect(error).toBeInstanceOf(ToolError);
    expect(error.details.toolExitCode).toBe(1);
    expect(error.details.outputTail).toMatch(/ringlab-no-such-network/);
    expect(readFileSync(log, "utf8")).toMatch(
      /\$ docker network rm ringlab-no-such-network\n.*ringlab-no-such-network/,
    );
  });

  it("lists nothing for a label no resource carries", async () => {
    expect(await new Docker().listByLabel("container", "ringlab.testbed=no-such-testbed-label")).toEqual([]);
  });
});
