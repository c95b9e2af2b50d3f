// Every process the Cline core starts runs as the agent's user, not the core's (issue 42): the
// core, its host and the supervisor are another user of the sandbox, so nothing the agent's
// commands run can signal, stop, ptrace or read them. Loaded into the core with
// `node --require agent-user-install.cjs cline-core.js`; the ids come in FLAKEGYM_AGENT_USER
// ("<uid>:<gid>", removed from the core's environment at once, so no child sees it). The core needs
// CAP_SETUID and CAP_SETGID for it (workers/local/bwrap-args.ts `apartPrefix`): a child that cannot
// change its user fails to start (EPERM), it never runs as the core.
//
// Every asynchronous child goes through ChildProcess.prototype.spawn (spawn, exec, execFile, fork,
// execa); the synchronous ones are wrapped one by one. The core itself keeps the agent's group and
// a umask of 002, so what it writes into the workspace (write_to_file, replace_in_file) the agent's
// commands may change, as in a sandbox of one user.
"use strict";

const ID = /^(\d+):(\d+)$/;

/** The `{ uid, gid }` of `text` ("<uid>:<gid>"), or undefined when it is not two decimal ids. Pure. */
function parseAgentUser(text) {
  const m = ID.exec(typeof text === "string" ? text : "");
  if (!m) return undefined;
  const uid = Number(m[1]);
  const gid = Number(m[2]);
  return Number.isSafeInteger(uid) && Number.isSafeInteger(gid) ? { uid, gid } : undefined;
}

/** `options` with the agent's ids (whatever ids it named are replaced). Pure. */
function demoted(options, ids) {
  return { ...(options && typeof options === "object" ? options : {}), uid: ids.uid, gid: ids.gid };
}

/**
 * The arguments of a synchronous call (`execSync(cmd, opts?)`, `execFileSync(file, args?, opts?)`,
 * `spawnSync(file, args?, opts?)`) with the agent's ids in its options: the options object after the
 * command and its optional argument array, made when absent. Pure.
 */
function demotedSyncArgs(call, ids) {
  const [first, ...rest] = call;
  const args = Array.isArray(rest[0]) ? [rest.shift()] : [];
  // a null or undefined placeholder for the args array stays where it was
  if (!Array.isArray(args[0]) && rest.length > 1 && (rest[0] === undefined || rest[0] === null))
    args.push(rest.shift());
  const [options, ...after] = rest;
  return [first, ...args, demoted(options, ids), ...after];
}

const SYNC = ["execSync", "execFileSync", "spawnSync"];

/** Makes every child of this process run as `ids`, and this process write files its group may change. */
function install(ids, cp = require("node:child_process"), proc = process) {
  const asyncSpawn = cp.ChildProcess.prototype.spawn;
  cp.ChildProcess.prototype.spawn = function spawnAsAgent(options) {
    return asyncSpawn.call(this, demoted(options, ids));
  };
  for (const name of SYNC) {
    const real = cp[name];
    cp[name] = function syncAsAgent(...call) {
      return real.apply(this, demotedSyncArgs(call, ids));
    };
  }
  proc.setgid(ids.gid);
  proc.umask(0o002);
}

/** The preload's work: read and remove FLAKEGYM_AGENT_USER, then {@link install}; a bad value ends the core. */
function installFromEnv(env = process.env) {
  const ids = parseAgentUser(env.FLAKEGYM_AGENT_USER);
  delete env.FLAKEGYM_AGENT_USER;
  if (!ids) {
    process.stderr.write(
      "flakegym agent-user: FLAKEGYM_AGENT_USER must be <uid>:<gid> (the agent's user in the sandbox); the core does not start without it\n",
    );
    process.exit(78);
  }
  install(ids);
}

module.exports = { parseAgentUser, demoted, demotedSyncArgs, install, installFromEnv };
