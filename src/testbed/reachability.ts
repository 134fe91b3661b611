/** Whether a node's SSH server answers: connects and reads the "SSH-2.0-..." banner. No process spawned. */
import { connect } from "node:net";
import { ToolError } from "../util/errors.ts";
import { isLoopbackHost } from "../rules/loopback.ts";

export function sshAnswers(host: string, port = 22, timeoutMs = 3_000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (answer: boolean) => {
      socket.destroy();
      resolve(answer);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once("data", (data) => done(data.toString("latin1").startsWith("SSH-")));
    socket.once("error", () => done(false));
  });
}

export interface SshWaitOptions {
  /**
   * Probe loopback hosts only; any other host counts as not answering, without a packet sent to it. Set under
   * the test-only AWS endpoint override, where the emulator's instance addresses belong to nobody.
   * @default false
   */
  readonly loopbackOnly?: boolean;
}

/** Waits until every host answers; throws naming the ones that never did. */
export async function waitForSsh(
  hosts: readonly string[],
  timeoutMs: number,
  signal?: AbortSignal,
  onWaiting?: (pending: string[]) => void,
  options: SshWaitOptions = {},
): Promise<void> {
  const probe = (host: string) =>
    options.loopbackOnly === true && !isLoopbackHost(host) ? Promise.resolve(false) : sshAnswers(host);
  const deadline = Date.now() + timeoutMs;
  let pending = [...hosts];
  while (pending.length > 0) {
    signal?.throwIfAborted();
    const answers = await Promise.all(pending.map(probe));
    pending = pending.filter((_, index) => !answers[index]);
    if (pending.length === 0) return;
    onWaiting?.(pending);
    if (Date.now() > deadline) {
      throw new ToolError(
        "ssh",
        `SSH did not answer within ${Math.round(timeoutMs / 1000)} s on ${pending.join(", ")}`,
        {
          hint: "check that the nodes run (`ringlab status`); on AWS, that testbed.adminCidr holds your current address",
        },
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}
