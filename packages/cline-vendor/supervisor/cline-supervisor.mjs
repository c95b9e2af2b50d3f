#!/usr/bin/env node
// cline-supervisor: starts cline-host and cline-core as its children and keeps them on a short
// leash. Plain Node (built-ins only, no tsx, no npm dependencies) so it runs unchanged inside a
// network-less bubblewrap sandbox or a container.
//
//   node cline-supervisor.mjs --host-bin <path> --core-js <path> --node-path <a:b> \
//     --workspace <dir> --config <dir> [--core-address 127.0.0.1:<port>|unix:<path>] \
//     [--host-port <port>] [--log <file>] [--forward 127.0.0.1:<port>=unix:<path>]... \
//     [--expose unix:<path>=127.0.0.1:<port>]... [--watch-stdin] [--grace-ms <ms>] [--node <bin>] \
//     [--diff-dir <dir> [--base-commit <sha>]] [--nice <0-19>] [--core-prefix <arg>]... [--core-node-arg <arg>]...
//
// Port 0 (the default for --host-port and a tcp --core-address) means: pick a free port here,
// inside whatever network namespace the supervisor runs in.
//
// Behaviour:
// - Children get the supervisor's own environment (the launcher builds it from an allow-list)
//   plus NODE_PATH, PROTOBUS_ADDRESS and HOST_BRIDGE_ADDRESS. Nothing else is added.
// - Both children's stdout/stderr are appended to --log (default: <config>/core.log).
// - Progress goes to stdout as JSON lines: {"event":"started",...}, {"event":"listening",...},
//   {"event":"exit",...}. Problems go to stderr. Every second it also writes {"event":"heartbeat"}:
//   a liveness signal apart from the agent's progress (a stopped or wedged supervisor sends none),
//   so the runner can tell a sandbox frozen from outside from an agent that made no progress.
// - SIGTERM/SIGINT/SIGHUP, either child exiting, the parent dying (ppid changes, or stdin closes
//   with --watch-stdin) all lead to the same shutdown: SIGTERM every descendant, SIGKILL what is
//   left after --grace-ms, exit.
// - --forward listens on TCP inside and connects each connection to a unix socket (e.g. the
//   policy gateway's socket bind-mounted into the sandbox). --expose listens on a unix socket and
//   connects to a TCP port inside (e.g. to reach the core's gRPC from outside).
// - --diff-dir: before the children start, the base (--base-commit, else the workspace's HEAD read
//   as data) and everything it reaches are sealed into a repository of ours outside the workspace,
//   so the agent's commits, resets or gc cannot move or remove it (<dir>/base.git, removed at exit). On SIGUSR2 the workspace's
//   changes against it (workspace-diff.mjs: untracked files included, binary-safe, no agent config
//   ever read) are written to <dir>/diff.patch, then <dir>/diff.json ({"seq","baseCommit","bytes",
//   "excluded","excludedTotal"} or {"seq","error","unsafe"}), each atomically. This is how a remote
//   runner can read them; a remote runner (Nomad) asks the gate instead (below), because the agent
//   can write that directory.
// - --nice: the supervisor lowers its own CPU priority to that niceness before it starts anything,
//   so cline-host, cline-core and every command the agent runs inherit it: the runner and its policy
//   gateway, which serve many agents at once, go first when the machine is busy. (Raising a
//   process's niceness needs no privilege; CPU-time limits count CPU seconds and are unaffected.)
// - --core-prefix (repeatable): the core is started as `<prefix...> <node> <core.js> ...`, e.g. the
//   same-page merging helper (`/usr/bin/python3 merge-memory-exec.py`, which sets a prctl and execs
//   Node, so the core keeps its pid).
// - --core-node-arg (repeatable): a Node flag for the core, between <node> and <core.js>, e.g.
//   `--require <dir>/core-gc.cjs` (a worker's reset asks the core for a full garbage collection).
// - FLAKEGYM_CORE_TOKEN (environment): the core then listens on a free loopback port and the
//   supervisor serves --core-address itself as an HTTP/2 gate that forwards only calls carrying
//   `authorization: Bearer <token>` and answers every other one with gRPC UNAUTHENTICATED (16).
//   The token is removed from the children's environment. This is how a remote runner (Nomad)
//   keeps anyone else who can reach the published port from driving the core. With --diff-dir too,
//   the gate answers an authorized `POST /flakegym.Supervisor/Diff` (header `flakegym-seq: <n>`)
//   itself: the body is one line of JSON (diff.json's fields with `seq` = n and the patch's
//   `sha256`) then the patch's bytes, streamed from the supervisor's own memory over the runner's
//   connection: nothing the agent can write is read on the way.

import { spawn } from "node:child_process";
import { createHash, timingSafeEqual } from "node:crypto";
import {
  closeSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  unlinkSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { createServer as createHttp2Server, connect as http2Connect } from "node:http2";
import { createConnection, createServer } from "node:net";
import { getPriority, setPriority } from "node:os";
import { dirname, join, resolve } from "node:path";
import { readHead, sealBase, workspaceDiff } from "./workspace-diff.mjs";

const USAGE =
  "usage: cline-supervisor --host-bin <path> --core-js <path> --node-path <dirs> --workspace <dir> " +
  "--config <dir> [--core-address 127.0.0.1:<port>|unix:<path>] [--host-port <port>] [--log <file>] " +
  "[--forward 127.0.0.1:<port>=unix:<path>]... [--expose unix:<path>=127.0.0.1:<port>]... " +
  "[--watch-stdin] [--grace-ms <ms>] [--node <bin>] [--diff-dir <dir> [--base-commit <sha>]] [--nice <0-19>] " +
  "[--core-prefix <arg>]... [--core-node-arg <arg>]...";

/** How often the supervisor says it is alive (stdout, `{"event":"heartbeat"}`). */
const HEARTBEAT_MS = 1000;

function fail(message) {
  process.stderr.write(`cline-supervisor: ${message}\n${USAGE}\n`);
  process.exit(2);
}

function parseArgs(argv) {
  const opts = {
    hostBin: undefined,
    coreJs: undefined,
    nodePath: undefined,
    workspace: undefined,
    config: undefined,
    coreAddress: "127.0.0.1:0",
    hostPort: 0,
    log: undefined,
    forward: [],
    expose: [],
    corePrefix: [],
    coreNodeArgs: [],
    watchStdin: false,
    graceMs: 3000,
    node: process.execPath,
    diffDir: undefined,
    baseCommit: undefined,
    nice: undefined,
  };
  const takesValue = {
    "--host-bin": "hostBin",
    "--core-js": "coreJs",
    "--node-path": "nodePath",
    "--workspace": "workspace",
    "--config": "config",
    "--core-address": "coreAddress",
    "--host-port": "hostPort",
    "--log": "log",
    "--grace-ms": "graceMs",
    "--node": "node",
    "--diff-dir": "diffDir",
    "--base-commit": "baseCommit",
    "--nice": "nice",
  };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    if (flag === "--watch-stdin") {
      opts.watchStdin = true;
      continue;
    }
    if (flag === "--help" || flag === "-h") {
      process.stdout.write(`${USAGE}\n`);
      process.exit(0);
    }
    const value = argv[i + 1];
    if (flag === "--core-prefix" || flag === "--core-node-arg") {
      if (value === undefined || value === "") fail(`${flag} needs a value`);
      (flag === "--core-prefix" ? opts.corePrefix : opts.coreNodeArgs).push(value);
      i++;
      continue;
    }
    if (flag === "--forward" || flag === "--expose") {
      if (value === undefined) fail(`${flag} needs a value`);
      const [from, to, extra] = value.split("=");
      if (extra !== undefined || !from || !to) fail(`${flag} '${value}': expected <listen>=<connect>`);
      const pair = { listen: parseEndpoint(from, flag), connect: parseEndpoint(to, flag) };
      if (flag === "--forward" && (pair.listen.kind !== "tcp" || pair.connect.kind !== "unix"))
        fail(`--forward '${value}': expected 127.0.0.1:<port>=unix:<path>`);
      if (flag === "--expose" && (pair.listen.kind !== "unix" || pair.connect.kind !== "tcp"))
        fail(`--expose '${value}': expected unix:<path>=127.0.0.1:<port>`);
      (flag === "--forward" ? opts.forward : opts.expose).push(pair);
      i++;
      continue;
    }
    const key = takesValue[flag];
    if (key === undefined) fail(`unknown flag '${flag}'`);
    if (value === undefined) fail(`${flag} needs a value`);
    opts[key] = value;
    i++;
  }
  for (const [flag, key] of [
    ["--host-bin", "hostBin"],
    ["--core-js", "coreJs"],
    ["--node-path", "nodePath"],
    ["--workspace", "workspace"],
    ["--config", "config"],
  ]) {
    if (opts[key] === undefined) fail(`${flag} is required`);
  }
  opts.hostPort = Number(opts.hostPort);
  if (!Number.isInteger(opts.hostPort) || opts.hostPort < 0 || opts.hostPort > 65535)
    fail(`--host-port '${opts.hostPort}': expected a port number (0 = pick a free one)`);
  opts.graceMs = Number(opts.graceMs);
  if (!Number.isFinite(opts.graceMs) || opts.graceMs < 0) fail(`--grace-ms '${opts.graceMs}': expected ms`);
  opts.coreAddress = parseEndpoint(opts.coreAddress, "--core-address");
  opts.log ??= join(opts.config, "core.log");
  if (opts.nice !== undefined) {
    opts.nice = Number(opts.nice);
    if (!Number.isInteger(opts.nice) || opts.nice < 0 || opts.nice > 19)
      fail(`--nice '${opts.nice}': expected a niceness from 0 to 19`);
  }
  return opts;
}

/** `unix:<path>` or `<host>:<port>` → {kind, path} | {kind, host, port}. */
function parseEndpoint(text, flag) {
  if (text.startsWith("unix:")) {
    const path = text.slice("unix:".length);
    if (!path.startsWith("/")) fail(`${flag} '${text}': unix socket paths must be absolute`);
    return { kind: "unix", path };
  }
  const m = /^([^:]+):(\d+)$/.exec(text);
  if (!m) fail(`${flag} '${text}': expected <host>:<port> or unix:<path>`);
  const port = Number(m[2]);
  if (port > 65535) fail(`${flag} '${text}': port out of range`);
  return { kind: "tcp", host: m[1], port };
}

const endpointText = (e) => (e.kind === "unix" ? `unix:${e.path}` : `${e.host}:${e.port}`);

function emit(event) {
  try {
    writeSync(1, `${JSON.stringify({ ...event, t: Date.now() })}\n`);
  } catch {
    // nobody is reading stdout any more
  }
}

/** Asks the kernel for a free TCP port on `host` in this network namespace. */
/**
 * Free ports for `hosts` (one each), held open together until all are picked: two ports picked one
 * after the other can be the same one (the kernel hands a just-closed port out again), and a core
 * whose port is its host's fails to bind.
 */
async function freePorts(hosts) {
  const servers = [];
  try {
    for (const host of hosts) {
      const srv = createServer();
      servers.push(srv);
      await new Promise((resolve, reject) => {
        srv.once("error", reject);
        srv.listen(0, host, resolve);
      });
    }
    return servers.map((srv) => srv.address().port);
  } finally {
    await Promise.all(servers.map((srv) => new Promise((r) => srv.close(() => r()))));
  }
}

/**
 * True when /proc shows this process under its own pid. Inside a pid namespace whose /proc is the
 * host's (bwrap --unshare-pid without --proc), the pids in /proc are not ours to signal.
 */
function procIsOurs() {
  try {
    const stat = readFileSync("/proc/self/stat", "utf8");
    return Number(stat.slice(0, stat.indexOf(" "))) === process.pid;
  } catch {
    return false;
  }
}

/** Every process below `root` in the process tree (Linux /proc); [] where /proc is not usable. */
function descendants(root) {
  if (!procIsOurs()) return [];
  let names;
  try {
    names = readdirSync("/proc");
  } catch {
    return [];
  }
  const children = new Map();
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (!children.has(ppid)) children.set(ppid, []);
      children.get(ppid).push(Number(name));
    } catch {
      // ended while we looked
    }
  }
  const out = [];
  const queue = [root];
  while (queue.length > 0) {
    for (const c of children.get(queue.shift()) ?? []) {
      out.push(c);
      queue.push(c);
    }
  }
  return out;
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return err.code === "EPERM";
  }
}

function signal(pid, sig) {
  try {
    process.kill(pid, sig);
  } catch {
    // already gone
  }
}

function startRelay(pair, servers) {
  return new Promise((resolve, reject) => {
    const server = createServer((inbound) => {
      const target =
        pair.connect.kind === "unix"
          ? createConnection(pair.connect.path)
          : createConnection(pair.connect.port, pair.connect.host);
      inbound.pipe(target);
      target.pipe(inbound);
      const close = () => {
        inbound.destroy();
        target.destroy();
      };
      inbound.on("error", close);
      target.on("error", close);
      inbound.on("close", close);
      target.on("close", close);
    });
    server.on("error", reject);
    if (pair.listen.kind === "unix") {
      try {
        unlinkSync(pair.listen.path);
      } catch {
        // no stale socket
      }
      server.listen(pair.listen.path, () => resolve());
    } else server.listen(pair.listen.port, pair.listen.host, () => resolve());
    servers.push(server);
  });
}

function writeAtomic(path, data) {
  const tmp = `${path}.tmp-${process.pid}`;
  writeFileSync(tmp, data);
  renameSync(tmp, path);
}

/**
 * --diff-dir: seals the base before the agent runs. Resolves to {base, objects} or {error}; the
 * sealed repository lives in `sealDir` (outside the workspace) until the supervisor exits.
 */
async function sealWorkspaceBase(workspace, baseCommit, sealDir) {
  const base = baseCommit ?? readHead(workspace);
  if (!base) return { error: `${workspace} was not a git repository with a HEAD at start` };
  try {
    rmSync(sealDir, { recursive: true, force: true });
    mkdirSync(dirname(sealDir), { recursive: true });
    const objects = await sealBase({
      sourceObjects: join(workspace, ".git", "objects"),
      baseCommit: base,
      dir: sealDir,
    });
    return { base, objects };
  } catch (err) {
    return { error: `could not seal the base ${base}: ${err?.message ?? err}` };
  }
}

/**
 * --diff-dir: the workspace's changes against the sealed base. Resolves to {info, patch}: info is
 * diff.json's content ({seq, baseCommit, bytes, sha256, excluded, excludedTotal} or {seq, error,
 * unsafe}); patch is a Buffer, or undefined with an error.
 */
async function computeDiff(workspace, dir, sealed, seq) {
  mkdirSync(dir, { recursive: true });
  if (sealed.error) return { info: { seq, error: sealed.error } };
  try {
    const d = await workspaceDiff({
      workspace,
      baseCommit: sealed.base,
      baseObjects: sealed.objects,
      scratchDir: dir,
    });
    const info = {
      seq,
      baseCommit: sealed.base,
      bytes: d.patch.length,
      sha256: createHash("sha256").update(d.patch).digest("hex"),
      excluded: d.excluded,
      excludedTotal: d.excludedTotal,
    };
    return { info, patch: d.patch };
  } catch (err) {
    const error = err?.message ?? String(err);
    return { info: { seq, error, ...(err?.code === "E_DIFF_UNSAFE" ? { unsafe: true } : {}) } };
  }
}

/** --diff-dir, on SIGUSR2: the diff written as diff.patch, then diff.json, each atomically. */
async function writeDiff(workspace, dir, sealed, seq) {
  const { info, patch } = await computeDiff(workspace, dir, sealed, seq);
  if (patch) writeAtomic(join(dir, "diff.patch"), patch);
  writeAtomic(join(dir, "diff.json"), `${JSON.stringify(info)}\n`);
}

/** The gate's own path: the runner's diff request (see FLAKEGYM_CORE_TOKEN above). */
const DIFF_PATH = "/flakegym.Supervisor/Diff";

/** Answers an authorized diff request on `stream`: a JSON line, then the patch, with backpressure. */
async function answerDiff(stream, headers, diffFor) {
  const seq = Number(headers["flakegym-seq"]);
  if (!Number.isSafeInteger(seq) || seq < 1) {
    stream.respond({ ":status": 400, "content-type": "text/plain" });
    stream.end("flakegym-seq must be a positive integer\n");
    return;
  }
  if (!diffFor) {
    stream.respond({ ":status": 404, "content-type": "text/plain" });
    stream.end("this supervisor runs without --diff-dir: no diff to give\n");
    return;
  }
  const { info, patch } = await diffFor(seq);
  if (stream.destroyed) return;
  stream.respond({ ":status": 200, "content-type": "application/octet-stream" });
  stream.write(`${JSON.stringify(info)}\n`);
  const CHUNK = 64 * 1024;
  for (let at = 0; patch && at < patch.length; at += CHUNK) {
    if (stream.destroyed) return;
    if (!stream.write(patch.subarray(at, at + CHUNK))) await new Promise((r) => stream.once("drain", r));
  }
  stream.end();
}

/**
 * The token gate in front of the core's gRPC (see FLAKEGYM_CORE_TOKEN above): one upstream HTTP/2
 * session, each authorized stream forwarded with its headers, body and trailers.
 */
function startCoreGate(listen, upstream, token, servers, diffFor) {
  const expected = Buffer.from(`Bearer ${token}`);
  let session;
  const upstreamSession = () => {
    if (!session || session.closed || session.destroyed) {
      session = http2Connect(`http://${upstream}`);
      session.on("error", () => {});
    }
    return session;
  };
  const server = createHttp2Server();
  server.on("session", (s) => s.on("error", () => {}));
  server.on("stream", (stream, headers) => {
    stream.on("error", () => {});
    const got = Buffer.from(String(headers.authorization ?? ""));
    if (got.length !== expected.length || !timingSafeEqual(got, expected)) {
      stream.respond(
        {
          ":status": 200,
          "content-type": "application/grpc",
          "grpc-status": "16",
          "grpc-message": "flakegym core gate: missing or wrong per-trajectory token",
        },
        { endStream: true },
      );
      return;
    }
    if (headers[":path"] === DIFF_PATH) {
      answerDiff(stream, headers, diffFor).catch(() => stream.close(2));
      return;
    }
    const fwd = {};
    for (const [k, v] of Object.entries(headers)) if (k !== "authorization" && k !== ":authority") fwd[k] = v;
    let up;
    try {
      up = upstreamSession().request(fwd);
    } catch {
      stream.close(2);
      return;
    }
    let trailers = {};
    up.on("error", () => stream.close(2));
    up.on("trailers", (t) => {
      trailers = t;
    });
    up.on("response", (rh) => {
      const out = { ...rh };
      if (rh["grpc-status"] !== undefined) {
        // trailers-only answer (an error status): pass it through as is
        stream.respond(out, { endStream: true });
        return;
      }
      stream.respond(out, { waitForTrailers: true });
      stream.on("wantTrailers", () => {
        const t = {};
        for (const [k, v] of Object.entries(trailers)) if (!k.startsWith(":")) t[k] = v;
        stream.sendTrailers(t);
      });
      up.pipe(stream);
    });
    stream.pipe(up);
    stream.on("close", () => {
      if (!up.closed) up.close();
    });
  });
  servers.push({ close: () => server.close() });
  return new Promise((resolveListen, reject) => {
    server.once("error", reject);
    server.listen(listen.port, listen.host, () => resolveListen());
  });
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  // never below the niceness it was started with (lowering it would need privilege)
  if (opts.nice !== undefined) setPriority(Math.max(opts.nice, getPriority()));
  mkdirSync(dirname(opts.log), { recursive: true });
  const logFd = openSync(opts.log, "a");
  const writeLog = (chunk) => {
    try {
      writeSync(logFd, chunk);
    } catch {
      // disk full or closed: the children must not die of it
    }
  };

  const children = new Map(); // pid → name
  const servers = [];
  let stopping = false;
  let exitCode = 0;

  const shutdown = async (reason, code) => {
    if (stopping) return;
    stopping = true;
    exitCode = code;
    emit({ event: "stopping", reason });
    for (const s of servers) s.close();
    const targets = new Set([...descendants(process.pid), ...children.keys()]);
    for (const pid of targets) signal(pid, "SIGTERM");
    const deadline = Date.now() + opts.graceMs;
    while (Date.now() < deadline && [...targets].some(alive)) await new Promise((r) => setTimeout(r, 25));
    for (const pid of new Set([...targets, ...descendants(process.pid)])) {
      if (alive(pid)) signal(pid, "SIGKILL");
    }
    emit({ event: "exit", reason, code });
    try {
      closeSync(logFd);
    } catch {
      // already closed
    }
    process.exit(exitCode);
  };

  for (const sig of ["SIGTERM", "SIGINT", "SIGHUP"]) process.on(sig, () => shutdown(`received ${sig}`, 0));
  let sealing = Promise.resolve();
  let diffFor;
  if (opts.diffDir) {
    const workspace = resolve(opts.workspace);
    // Next to the diff (a directory the supervisor can surely write), removed when it exits.
    const sealDir = join(resolve(opts.diffDir), "base.git");
    process.on("exit", () => rmSync(sealDir, { recursive: true, force: true }));
    const sealed = sealWorkspaceBase(workspace, opts.baseCommit, sealDir);
    sealing = sealed.then((s) => {
      if (s.error) process.stderr.write(`cline-supervisor: --diff-dir: ${s.error}\n`);
    });
    let seq = 0;
    let chain = Promise.resolve();
    process.on("SIGUSR2", () => {
      const n = ++seq;
      chain = chain
        .then(async () => writeDiff(workspace, opts.diffDir, await sealed, n))
        .catch((err) => process.stderr.write(`cline-supervisor: --diff-dir: ${err?.message ?? err}\n`));
    });
    // The gate's diff requests run one at a time too (each reads the whole workspace).
    diffFor = (n) => {
      const next = chain.then(async () => computeDiff(workspace, opts.diffDir, await sealed, n));
      chain = next.catch(() => {});
      return next;
    };
  }
  const initialPpid = process.ppid;
  setInterval(() => {
    if (process.ppid !== initialPpid) shutdown(`parent ${initialPpid} died`, 1);
  }, 250);
  setInterval(() => emit({ event: "heartbeat" }), HEARTBEAT_MS);
  if (opts.watchStdin) {
    process.stdin.on("data", () => {});
    process.stdin.on("end", () => shutdown("stdin closed (parent gone)", 1));
    process.stdin.on("error", () => shutdown("stdin failed (parent gone)", 1));
  }

  try {
    for (const pair of [...opts.forward, ...opts.expose]) await startRelay(pair, servers);
  } catch (err) {
    process.stderr.write(`cline-supervisor: could not start a forwarder: ${err.message}\n`);
    await shutdown("forwarder failed", 1);
    return;
  }

  // The base is sealed before the agent can run anything.
  await sealing;
  const core = { ...opts.coreAddress };
  const pickCore = core.kind === "tcp" && core.port === 0;
  const picked = await freePorts([...(opts.hostPort ? [] : ["127.0.0.1"]), ...(pickCore ? [core.host] : [])]);
  const hostPort = opts.hostPort || picked.shift();
  if (pickCore) core.port = picked.shift();
  // an explicit --host-port is not held while the core's port is picked: never hand out the same one
  if (pickCore && core.port === hostPort)
    core.port = (await freePorts([core.host, core.host])).find((p) => p !== hostPort);
  const gateToken = process.env.FLAKEGYM_CORE_TOKEN ?? "";
  const gated = gateToken !== "" && core.kind === "tcp";
  // behind the gate the core listens on loopback; the gate takes the requested address
  const innerCore = gated
    ? { kind: "tcp", host: "127.0.0.1", port: (await freePorts(["127.0.0.1"]))[0] }
    : core;
  const coreAddress = endpointText(innerCore);
  // The gate opens once the core listens, so a readiness probe on the published address means
  // what it meant without the gate.
  const openGate = async () => {
    try {
      await startCoreGate(core, coreAddress, gateToken, servers, diffFor);
      return true;
    } catch (err) {
      process.stderr.write(`cline-supervisor: could not start the core gate: ${err.message}\n`);
      await shutdown("gate failed", 1);
      return false;
    }
  };
  const childEnv = { ...process.env };
  delete childEnv.FLAKEGYM_CORE_TOKEN;

  const startChild = (name, command, args, extraEnv, cwd) => {
    const child = spawn(command, args, {
      cwd,
      env: { ...childEnv, ...extraEnv },
      stdio: ["ignore", "pipe", "pipe"],
    });
    child.stdout.on("data", (c) => writeLog(c));
    child.stderr.on("data", (c) => writeLog(c));
    child.on("error", (err) => {
      process.stderr.write(`cline-supervisor: could not start ${name} (${command}): ${err.message}\n`);
      shutdown(`${name} failed to start`, 1);
    });
    child.on("exit", (code, sig) => {
      children.delete(child.pid);
      emit({ event: "child-exit", name, code, signal: sig });
      if (!stopping) shutdown(`${name} exited (code ${code}, signal ${sig})`, 1);
    });
    if (child.pid !== undefined) children.set(child.pid, name);
    return child;
  };

  const host = startChild(
    "cline-host",
    opts.hostBin,
    ["--port", String(hostPort), "--workspace", opts.workspace],
    {},
    opts.workspace,
  );
  const [coreCommand, ...coreArgs] = [
    ...opts.corePrefix,
    opts.node,
    ...opts.coreNodeArgs,
    opts.coreJs,
    "--config",
    opts.config,
  ];
  const coreChild = startChild(
    "cline-core",
    coreCommand,
    coreArgs,
    {
      NODE_PATH: opts.nodePath,
      PROTOBUS_ADDRESS: coreAddress,
      HOST_BRIDGE_ADDRESS: `127.0.0.1:${hostPort}`,
    },
    dirname(opts.coreJs),
  );
  // The core logs this line right after its gRPC server has bound; the launcher confirms with a
  // real gRPC call.
  let tail = "";
  let announced = false;
  coreChild.stdout.on("data", (chunk) => {
    if (announced) return;
    tail = (tail + chunk.toString("utf8")).slice(-4096);
    if (tail.includes("ProtoBus gRPC server listening")) {
      announced = true;
      tail = "";
      if (!gated) emit({ event: "listening", coreAddress });
      else
        void openGate().then((ok) => {
          if (ok) emit({ event: "listening", coreAddress: endpointText(core) });
        });
    }
  });
  emit({
    event: "started",
    supervisorPid: process.pid,
    hostPid: host.pid,
    corePid: coreChild.pid,
    hostPort,
    coreAddress: gated ? endpointText(core) : coreAddress,
    ...(gated ? { gated: true } : {}),
    log: opts.log,
  });
}

main().catch((err) => {
  process.stderr.write(`cline-supervisor: ${err?.stack ?? err}\n`);
  process.exit(1);
});
