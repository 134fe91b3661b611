/**
 * The host firewall around a local testbed. A testbed's containers sit on a Docker bridge that every user of this
 * machine can route to, and the worker's ports (torchrun's rendezvous store, the probe's iperf3 server) take any
 * connection. While the testbed exists, connections from this machine to its subnet are let through only for root,
 * for the user running ringlab and for the Docker socket's group (who own the machine anyway): another user's are
 * rejected. The rules are docker/node/host-firewall.sh's, run in a throw-away container of the node image on the
 * host's network namespace, so nobody needs sudo for them.
 */
import { createHash } from "node:crypto";
import { statSync } from "node:fs";
import type { Docker } from "../../adapters/docker.ts";
import { ToolError, type RinglabError } from "../../util/errors.ts";
import { NODE_IMAGE } from "./plan.ts";

const TOOL = "/usr/local/bin/ringlab-host-firewall";
const DOCKER_SOCKET = "/var/run/docker.sock";

/** The testbed's iptables chain: a name of its own (at most 28 characters), whatever the testbed is called. */
export function firewallChain(testbed: string): string {
  return `RINGLAB-${createHash("sha256").update(testbed).digest("hex").slice(0, 12)}`;
}

/** The comment on OUTPUT's jump to the chain: what `iptables -S OUTPUT` shows an administrator. */
export function firewallComment(testbed: string): string {
  return `ringlab testbed ${testbed}`;
}

/** Rejects other users' connections to the testbed's subnet; safe to repeat (a reused testbed after a reboot). */
export async function guardSubnet(docker: Docker, testbed: string, subnet: string): Promise<void> {
  const uid = process.getuid?.() ?? 0;
  const gid = socketGroup();
  const args = [
    "guard",
    firewallChain(testbed),
    subnet,
    firewallComment(testbed),
    String(uid),
    ...(gid === undefined ? [] : [String(gid)]),
  ];
  await docker.runOnHostNetwork(NODE_IMAGE, [TOOL, ...args]).catch((error: unknown) => {
    throw new ToolError(
      "iptables",
      `could not keep the host's other users away from testbed ${testbed}'s subnet ${subnet}: ${(error as RinglabError).message}`,
      {
        hint:
          "the host firewall needs iptables' owner and conntrack matches in this kernel (modprobe xt_owner xt_conntrack) " +
          "and a Docker engine that may start a container with --network host and NET_ADMIN",
        cause: error,
      },
    );
  });
}

/** Removes the testbed's rules; nothing to remove is not an error. A failure says how to remove them by hand. */
export async function unguardSubnet(docker: Docker, testbed: string): Promise<void> {
  const chain = firewallChain(testbed);
  await docker.runOnHostNetwork(NODE_IMAGE, [TOOL, "unguard", chain]).catch((error: unknown) => {
    throw new ToolError(
      "iptables",
      `could not remove the host firewall's rules for testbed ${testbed}: ${(error as RinglabError).message}`,
      {
        hint: `as root: iptables -D OUTPUT <each rule \`iptables -S OUTPUT | grep -- "-j ${chain}"\` prints, after its -A OUTPUT>, then iptables -F ${chain} && iptables -X ${chain}`,
        cause: error,
      },
    );
  });
}

/** The group that may use the Docker engine here, when the engine is reached through its local socket. */
function socketGroup(): number | undefined {
  try {
    return statSync(DOCKER_SOCKET).gid;
  } catch {
    return undefined;
  }
}
