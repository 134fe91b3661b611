/**
 * A moto server (the AWS API emulator installed in the build machines' python3) on 127.0.0.1 for one test file:
 * started on a free port, stopped by the test. Tests hand its URL to the code as RINGLAB_TEST_AWS_ENDPOINT, the only
 * way the code reaches an AWS endpoint in tests.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createServer } from "node:net";

export interface Moto {
  readonly url: string;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() =>
        typeof address === "object" && address !== null ? resolve(address.port) : reject(new Error("no port")),
      );
    });
  });
}

export async function startMoto(timeoutMs = 30_000): Promise<Moto> {
  const port = await freePort();
  const child: ChildProcess = spawn("python3", ["-m", "moto.server", "-H", "127.0.0.1", "-p", String(port)], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`moto exited with ${child.exitCode}: ${stderr}`);
    try {
      if ((await fetch(`${url}/moto-api/`)).ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill("SIGTERM");
      throw new Error(`moto did not answer on ${url} within ${timeoutMs} ms: ${stderr}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return {
    url,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
      }),
  };
}
