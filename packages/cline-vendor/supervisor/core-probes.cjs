// Answers the Cline core's tool probes in its own process (issue 47), loaded into the core with
// `node --require core-probes.cjs cline-core.js`. Per trajectory the core asks ≈ 40 times
// `execSync("which <tool>")` (its environment details' "Detected CLI Tools") and 16 times
// `execa("which", ["xdg-user-dir"])` + `execa("xdg-user-dir", ["DOCUMENTS"])` (the documents dir, at
// each rules lookup): every one a fork of the 300 MB core and a shell's start, ≈ 0.3 CPU-s a
// trajectory. Here the same answers are computed from the same files, at the moment of the call (no
// cache: nothing of one trajectory can reach the next), and only where they are provably the same:
// the `which` and `xdg-user-dir` that would run are the scripts whose semantics this file implements
// (their bytes' sha256 pinned below, read at each call), the environment holds nothing those scripts
// would read differently, and the user-dirs file the script would source is absent. Anything else
// runs the real program. The decisions are pure functions exported for the tests (core-probes.test.ts
// compares them with the real programs); core-probes-install.cjs, the preload, installs them.
"use strict";
const { createHash } = require("node:crypto");
const { EventEmitter } = require("node:events");
const fs = require("node:fs");
const { Readable, Writable } = require("node:stream");

/** sha256 of the `which` (Debian's debianutils) and `xdg-user-dir` (xdg-user-dirs) scripts implemented here. */
const KNOWN = {
  which: ["7bdde142dc5cb004ab82f55adba0c56fc78430a6f6b23afd33be491d4c7c238b"],
  "xdg-user-dir": ["66f6896a88c333b2c3152617fd3be51d7e896481abc07028a064dad17e64f6b8"],
};
const TOOL_NAME = /^[A-Za-z0-9][A-Za-z0-9._+-]*$/;
// a HOME that `eval echo` prints unchanged: no blanks, globs, quotes, backslashes or expansions
const PLAIN_PATH = /^\/[A-Za-z0-9._/-]*$/;

/** The real fs calls the decisions need (tests pass their own). */
const realFs = {
  isExecFile(p) {
    try {
      if (!fs.statSync(p).isFile()) return false;
      fs.accessSync(p, fs.constants.X_OK);
      return true;
    } catch {
      return false;
    }
  },
  isFile(p) {
    try {
      return fs.statSync(p).isFile();
    } catch {
      return false;
    }
  },
  sha256(p) {
    try {
      return createHash("sha256").update(fs.readFileSync(p)).digest("hex");
    } catch {
      return undefined;
    }
  },
};

/**
 * What debianutils' `which <name>` prints for a plain name: the first `<dir>/<name>` over PATH that
 * is a regular file (symlinks followed) and executable; an empty entry is `.` (relative to `cwd`).
 * Undefined when none is. Pure over `fsx`.
 */
function whichPath(name, pathVar, cwd, fsx) {
  if (typeof pathVar !== "string" || pathVar === "") return undefined;
  for (const entry of pathVar.split(":")) {
    const dir = entry === "" ? "." : entry;
    const shown = `${dir}/${name}`;
    const onDisk = shown.startsWith("/") ? shown : `${cwd}/${shown}`;
    if (fsx.isExecFile(onDisk)) return { shown, onDisk };
  }
  return undefined;
}

/** Whether `name`, looked up over PATH, is one of the scripts this file implements. Pure over `fsx`. */
function isKnownScript(name, pathVar, cwd, fsx) {
  const found = whichPath(name, pathVar, cwd, fsx);
  if (found === undefined || !fsx.isExecFile("/bin/sh")) return false;
  return KNOWN[name].includes(fsx.sha256(found.onDisk) ?? "");
}

/**
 * The answer of `sh -c "which <tool>"` (found or not), or undefined where it must really run: a
 * name `which` would treat specially, or a `which` on PATH that is not the known script. Pure over `fsx`.
 */
function whichToolAnswer(command, env, cwd, fsx) {
  const m = /^which (\S+)$/.exec(command);
  if (!m || !TOOL_NAME.test(m[1])) return undefined;
  if (!isKnownScript("which", env.PATH, cwd, fsx)) return undefined;
  return { found: whichPath(m[1], env.PATH, cwd, fsx) !== undefined };
}

/**
 * The result of spawning `file args` with `env`/`cwd` for the two documents-dir probes, as
 * `{ stdout, code }`, or undefined where the real program must run. Pure over `fsx`.
 */
function spawnProbeAnswer(file, args, env, cwd, fsx) {
  if (!Array.isArray(args) || args.length !== 1 || typeof env?.PATH !== "string") return undefined;
  if (file === "which" && args[0] === "xdg-user-dir") {
    if (!isKnownScript("which", env.PATH, cwd, fsx)) return undefined;
    const found = whichPath("xdg-user-dir", env.PATH, cwd, fsx);
    return found ? { stdout: `${found.shown}\n`, code: 0 } : { stdout: "", code: 1 };
  }
  if (file === "xdg-user-dir" && args[0] === "DOCUMENTS") {
    if (!isKnownScript("xdg-user-dir", env.PATH, cwd, fsx)) return undefined;
    const home = env.HOME;
    if (typeof home !== "string" || !PLAIN_PATH.test(home)) return undefined;
    if ("XDG_CONFIG_HOME" in env || "XDG_DOCUMENTS_DIR" in env) return undefined;
    // the script sources this file when it is a regular file: then only the script can say
    if (fsx.isFile(`${home}/.config/user-dirs.dirs`)) return undefined;
    return { stdout: `${home}\n`, code: 0 };
  }
  return undefined;
}

/** A finished child process as `child_process.spawn` returns one (execa 9 reads it). */
function answeredChild(file, args, answer) {
  const child = new EventEmitter();
  const out = (text) => {
    const r = new Readable({ read() {} });
    if (text !== "") r.push(text);
    r.push(null);
    return r;
  };
  child.stdin = new Writable({ write: (_c, _e, cb) => cb() });
  child.stdout = out(answer.stdout);
  child.stderr = out("");
  child.stdio = [child.stdin, child.stdout, child.stderr];
  Object.assign(child, { pid: undefined, connected: false, killed: false, exitCode: null, signalCode: null });
  Object.assign(child, { spawnfile: file, spawnargs: [file, ...args] });
  child.kill = () => false;
  child.ref = () => child;
  child.unref = () => child;
  child.disconnect = () => undefined;
  process.nextTick(() => {
    child.emit("spawn");
    setImmediate(() => {
      child.exitCode = answer.code;
      // as Node does when a child exits: its stdin is destroyed (execa waits for that)
      child.stdin.destroy();
      child.emit("exit", answer.code, null);
      child.emit("close", answer.code, null);
    });
  });
  return child;
}

function commandFailed(command) {
  const err = new Error(`Command failed: ${command}`);
  Object.assign(err, {
    status: 1,
    signal: null,
    output: [null, null, null],
    pid: 0,
    stdout: null,
    stderr: null,
  });
  return err;
}

/** Patches child_process's execSync and spawn exports for the probes above; everything else unchanged. */
function install(cp = require("node:child_process")) {
  const { execSync, spawn } = cp;
  cp.execSync = function probedExecSync(...call) {
    const [command, options] = call;
    const plain = typeof command === "string" && options?.stdio === "ignore" && !options.env && !options.cwd;
    const a = plain ? whichToolAnswer(command, process.env, process.cwd(), realFs) : undefined;
    if (a === undefined) return execSync.apply(this, call);
    if (!a.found) throw commandFailed(command);
    return null;
  };
  cp.spawn = function probedSpawn(...call) {
    const [file, args, options] = call;
    const env = options?.env ?? process.env;
    const cwd = typeof options?.cwd === "string" ? options.cwd : process.cwd();
    const plain =
      typeof file === "string" &&
      !options?.shell &&
      (options?.cwd === undefined || typeof options.cwd === "string");
    const a = plain ? spawnProbeAnswer(file, args, env, cwd, realFs) : undefined;
    if (a === undefined) return spawn.apply(this, call);
    return answeredChild(file, args, a);
  };
}

module.exports = { whichPath, whichToolAnswer, spawnProbeAnswer, answeredChild, install, realFs, KNOWN };
