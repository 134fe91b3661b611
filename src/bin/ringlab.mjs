#!/usr/bin/env node
// The `ringlab` command: checks the Node.js it runs on, then loads TypeScript through tsx and hands over to the CLI.
//
// Plain JavaScript with no import of ringlab's own until the check: it has to run on an older Node.js to say what it
// needs. On one older than the floor (@kubernetes/client-node 2 needs undici 8, which needs 22.19) it runs again on the
// Node.js that `npm ci` puts into node_modules on Linux x64 and arm64 (node-linux-*, package.json's
// optionalDependencies), so that a system Node.js 20 still does; without one it says what to install, exit 2.
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { constants } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const FLOOR = [22, 19];
/** The signals a launcher passes on to the CLI it started (the CLI stops cleanly on SIGINT and SIGTERM). */
const RELAYED = ["SIGINT", "SIGTERM", "SIGHUP"];
/** Set in the CLI's environment by the launcher: the Node.js version it was started with. */
const RELAUNCHED_FROM = "RINGLAB_RELAUNCHED_FROM";

const [major, minor] = process.versions.node.split(".").map(Number);
if (major < FLOOR[0] || (major === FLOOR[0] && minor < FLOOR[1])) {
  const bundled = process.env[RELAUNCHED_FROM] === undefined ? bundledNode() : undefined;
  if (bundled === undefined) tooOld();
  relaunch(bundled);
} else {
  // Not passed on to what the CLI starts.
  const relaunched = process.env[RELAUNCHED_FROM] !== undefined;
  delete process.env[RELAUNCHED_FROM];
  if (relaunched && process.send !== undefined) listenToLauncher();
  const { register } = await import("tsx/esm/api");
  register();
  const { ignoreClosedOutput, main } = await import("../cli/main.ts");
  ignoreClosedOutput();
  process.exitCode = await main(process.argv);
}

/** The Node.js binary of package node-<platform>-<arch> (npm installs the one for this machine), if there is one. */
function bundledNode() {
  try {
    const manifest = createRequire(import.meta.url).resolve(`node-${process.platform}-${process.arch}/package.json`);
    return join(dirname(manifest), "bin", "node");
  } catch {
    return undefined;
  }
}

function tooOld(startFailure) {
  process.stderr.write(
    `error: ringlab needs Node.js ${FLOOR.join(".")} or newer (22 or 24 LTS); this is Node.js ${process.version} (${process.execPath})` +
      `${startFailure === undefined ? "" : `, and the Node.js in node_modules did not start: ${startFailure}`}\n` +
      "hint: on Linux x64 or arm64, `npm ci` in ringlab's folder installs Node.js 24 into node_modules, and ringlab uses it; " +
      "otherwise install Node.js 22 or 24 (https://nodejs.org, or your package manager)\n",
  );
  process.exit(2);
}

/**
 * Runs this script again on `node` with the same arguments, streams and environment, passes on the signals it gets,
 * and exits as the CLI does. It passes them on over IPC, for the CLI to tell one sent to this process alone from one
 * sent to the whole process group (Ctrl-C), which it got itself: a second one would be "exit at once" to the CLI.
 */
function relaunch(node) {
  const child = spawn(node, [...process.execArgv, fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
    stdio: ["inherit", "inherit", "inherit", "ipc"],
    env: { ...process.env, [RELAUNCHED_FROM]: process.version },
  });
  let listening = false;
  child.on("message", (message) => {
    if (message?.ringlab === "listening") listening = true;
  });
  const relay = (signal) => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    // Before the CLI listens, the signal does what it would have done to it.
    if (listening) child.send({ ringlabSignal: signal }, () => {});
    else child.kill(signal);
  };
  for (const signal of RELAYED) process.on(signal, relay);
  child.on("error", (error) => tooOld(error.message));
  child.on("exit", (code, signal) => {
    for (const relayed of RELAYED) process.off(relayed, relay);
    if (signal === null) process.exit(code ?? 1);
    process.kill(process.pid, signal);
    process.exit(128 + (constants.signals[signal] ?? 0));
  });
}

/**
 * In the CLI a launcher started: takes each signal the launcher passes on as if it came here, unless the same one did
 * within the last second (a signal to the whole process group reaches both). Where nothing else listens for a
 * signal (before the CLI's handlers, after them), it does what it would have.
 */
function listenToLauncher() {
  const cameHere = new Map();
  for (const signal of RELAYED) {
    process.on(signal, function got() {
      cameHere.set(signal, Date.now());
      if (process.listenerCount(signal) === 1) {
        process.off(signal, got);
        process.kill(process.pid, signal);
      }
    });
  }
  process.on("message", (message) => {
    const signal = message?.ringlabSignal;
    if (!RELAYED.includes(signal)) return;
    const relayed = Date.now();
    // The group's signal may be handled here just after the launcher's word of it (this process was busy).
    setTimeout(() => {
      if (!(cameHere.get(signal) >= relayed - 1000)) process.kill(process.pid, signal);
    }, 200);
  });
  // The channel must not keep the CLI running.
  process.channel?.unref();
  process.send({ ringlab: "listening" }, () => {});
}
