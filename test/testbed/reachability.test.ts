import { createServer, type Server } from "node:net";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";

const connected: string[] = [];
vi.mock("node:net", async (importOriginal) => {
  const net = await importOriginal<typeof import("node:net")>();
  return {
    ...net,
    connect: (options: { host: string; port: number }) => {
      connected.push(options.host);
      return net.connect(options);
    },
  };
});

const { waitForSsh } = await import("../../src/testbed/reachability.ts");

let server: Server;
let port = 0;
beforeAll(async () => {
  server = createServer((socket) => socket.end("SSH-2.0-test\r\n"));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as { port: number }).port;
});
afterAll(() => server.close());

describe("waitForSsh with loopbackOnly (the test-only AWS endpoint override)", () => {
  it("never connects to a host off loopback, and fails after the bound naming it", async () => {
    connected.length = 0;
    const started = Date.now();
    const error = await waitForSsh(["192.0.2.10", "198.51.100.7"], 1_000, undefined, undefined, {
      loopbackOnly: true,
    }).catch((e: unknown) => e);
    expect((error as Error).message).toBe("SSH did not answer within 1 s on 192.0.2.10, 198.51.100.7");
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_000);
    expect(connected).toEqual([]);
  });

  it("still probes loopback hosts", async () => {
    connected.length = 0;
    const { sshAnswers } = await import("../../src/testbed/reachability.ts");
    expect(await sshAnswers("127.0.0.1", port)).toBe(true);
    // Port 22 here may or may not answer: what matters is that loopback was asked.
    await waitForSsh(["127.0.0.1"], 500, undefined, undefined, { loopbackOnly: true }).catch(() => undefined);
    expect(connected.length).toBeGreaterThan(1);
    expect(connected.every((host) => host === "127.0.0.1")).toBe(true);
  });
});
