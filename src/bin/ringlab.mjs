#!/usr/bin/env node
// The `ringlab` command: checks the Node.js it runs on, then loads TypeScript through tsx and hands over to the CLI.
//
// Plain JavaScript with no import of ringlab's own until the check: it has to run on an older Node.js to say what it
// needs. On one older than the floor (@kubernetes/client-node 2 needs undici 8, which needs 22.19) it runs again on the
// Node.js that `npm ci` puts into node_modules on Linux x64 and arm64 (node-linux-*, package.json's
// optionalDependencies), so that a system Node.js 20 still does; without one it says what to install, exit 2.
//
// That Node.js, tsx and the CLI's dependencies are taken from this checkout's node_modules only: Node's module lookup
// climbs into every parent folder's node_modules, and ringlab often runs as root, so a checkout below a folder others
// can write (a folder under /tmp) would otherwise run their `node` or their tsx. The bundled Node.js and tsx must
// also be owned by root or the caller and writable by nobody else, like every folder from the checkout down to them.
import { readFileSync, realpathSync, statSync } from "node:fs";
import { spawn } from "node:child_process";
import { constants } from "node:os";
import { dirname, isAbsolute, join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";

const FLOOR = [22, 19];
/** The signals a launcher passes on to the CLI it started (the CLI stops cleanly on SIGINT and SIGTERM). */
const RELAYED = ["SIGINT", "SIGTERM", "SIGHUP"];
/** Set in the CLI's environment by the launcher: the Node.js version it was started with. */
const RELAUNCHED_FROM = "RINGLAB_RELAUNCHED_FROM";
/** The checkout this script belongs to (src/bin/ringlab.mjs in it; Node gives the script's real path). */
const CHECKOUT = dirname(dirname(dirname(fileURLToPath(import.meta.url))));

const [major, minor] = process.versions.node.split(".").map(Number);
if (major < FLOOR[0] || (major === FLOOR[0] && minor < FLOOR[1])) {
  const bundled = process.env[RELAUNCHED_FROM] === undefined ? bundledNode() : {};
  if (bundled.path === undefined) tooOld(bundled.problem);
  relaunch(bundled.path);
} else {
  const missing = missingDependencies();
  if (missing !== undefined) notInstalled(missing);
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

/**
 * The Node.js binary of package node-<platform>-<arch> in this checkout's node_modules (npm installs the one for this
 * machine): { path } when it is there and trusted, { problem } when it is there and not, {} when it is not there.
 */
function bundledNode() {
  const binary = join(CHECKOUT, "node_modules", `node-${process.platform}-${process.arch}`, "bin", "node");
  const problem = untrustedInCheckout(binary);
  if (problem === "missing") return {};
  return problem === undefined ? { path: binary } : { problem: `it is not used: ${problem}` };
}

/**
 * Why `path` (in this checkout) could be someone else's: "missing"; outside the checkout (through a link); or the
 * checkout, or a folder on the way to it, or itself, owned by another user than root and the caller, or writable by
 * group or others. Undefined when it is trusted.
 */
function untrustedInCheckout(path) {
  let real;
  let checkout;
  try {
    real = realpathSync(path);
    checkout = realpathSync(CHECKOUT);
  } catch {
    return "missing";
  }
  const way = relative(checkout, real);
  if (way.startsWith("..") || isAbsolute(way)) return `${path} leads to ${real}, outside ringlab's folder ${checkout}`;
  const uid = process.getuid?.();
  let at = checkout;
  for (const part of ["", ...way.split(sep)]) {
    at = join(at, part);
    const { uid: owner, mode } = statSync(at);
    if (uid !== undefined && owner !== 0 && owner !== uid) return `${at} is owned by uid ${owner}, not by root or you`;
    if ((mode & 0o022) !== 0) return `${at} can be written by other users (mode ${(mode & 0o7777).toString(8)})`;
  }
  return undefined;
}

/** The first of package.json's dependencies (tsx among them) missing from, or untrusted in, this checkout. */
function missingDependencies() {
  let manifest;
  try {
    manifest = JSON.parse(readFileSync(join(CHECKOUT, "package.json"), "utf8"));
  } catch (error) {
    return `${join(CHECKOUT, "package.json")} cannot be read (${error.code ?? error.message})`;
  }
  for (const name of Object.keys(manifest.dependencies ?? {})) {
    const problem = untrustedInCheckout(join(CHECKOUT, "node_modules", name));
    if (problem === "missing") return `${name} is not in ${join(CHECKOUT, "node_modules")}`;
    // Every file of every dependency is not checked: tsx, which loads all of ringlab's code, is.
    if (name === "tsx" && problem !== undefined) return problem;
  }
  return undefined;
}

function notInstalled(problem) {
  process.stderr.write(
    `error: ringlab's dependencies are not installed in its folder: ${problem} (Node.js would look for them in the ` +
      "folders above, where anyone who can write would choose them)\n" +
      `hint: run \`npm ci\` in ${CHECKOUT}\n`,
  );
  process.exit(2);
}

function tooOld(problem) {
  process.stderr.write(
    `error: ringlab needs Node.js ${FLOOR.join(".")} or newer (22 or 24 LTS); this is Node.js ${process.version} (${process.execPath})` +
      `${problem === undefined ? "" : `, and the Node.js in node_modules ${problem}`}\n` +
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
  child.on("error", (error) => tooOld(`did not start: ${error.message}`));
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
