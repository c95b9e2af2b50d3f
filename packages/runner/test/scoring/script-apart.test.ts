import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  composeScoringScript,
  expectedSteps,
  resultsStep,
  type ScoringPlan,
} from "../../src/scoring/script.js";
import { parseScoringOutput } from "../../src/scoring/script-channel.js";
import { observeScript, scriptVerdict } from "../../src/scoring/script-verdict.js";
import type { BwrapSpec } from "../../src/workers/local/bwrap-args.js";
import { apartRunner } from "../../src/workers/local/exec.js";
import { runSandboxed } from "../../src/workers/local/sandbox.js";
import { findBwrap, SANDBOX_GID, SANDBOX_UID } from "../../src/workers/local/shape.js";
import { sandboxSkipReason } from "../helpers/sandbox.js";

// The scorer and the code under test as two users (issue 42), through the local backend's own
// sandbox command line (runSandboxed, bwrap-args.ts apartPrefix). The code under test uses what a
// process of the script's own uid has even when the script's shells are sealed: it finds which
// processes it may signal, writes into the script's temp files, and leaves a detached daemon that,
// after the test ends, rewrites the script's temp files (the results it grepped, the base64 block
// before its checksum is taken) turning its `case FAILED` line into `case PASSED`. One user (the
// sealed scoring of f8d47ca): the daemon's forgery reaches the channel with a valid checksum when
// it wins the race (printed, not asserted: it is a race). Apart: nothing is reached, every block
// says FAILED, and the daemon was ended before the script read what the test wrote.

const ATTACK = String.raw`
import base64, glob, json, os, sys, time
log = os.path.join(os.getcwd(), "reached.log")
def note(s):
    with open(log, "a") as f: f.write(s + "\n")
print("case FAILED", flush=True)
me, uid, found = os.getpid(), os.getuid(), {"signalable": 0, "environ": 0, "fds": 0, "tmp": 0}
for d in [x for x in os.listdir("/proc") if x.isdigit() and int(x) != me]:
    p = int(d)
    try:
        if os.stat("/proc/%d" % p).st_uid == uid: continue
        os.kill(p, 0); found["signalable"] += 1
    except OSError: pass
    try:
        open("/proc/%d/environ" % p, "rb").read(); found["environ"] += 1
    except OSError: pass
    try:
        found["fds"] += len(os.listdir("/proc/%d/fd" % p))
    except OSError: pass
for f in glob.glob("/tmp/flakegym-score-*/*"):
    try:
        open(f, "a").close(); found["tmp"] += 1
    except OSError: pass
# a user namespace of its own (to mount over what it may not write)
found["userns"] = os.system("unshare --user true 2>/dev/null") == 0
print(json.dumps(found), flush=True)
if os.path.exists(log) or os.fork(): sys.exit(0)
os.setsid()
if os.fork(): os._exit(0)
note("daemon")
end = time.time() + 8
while time.time() < end:
    for f in glob.glob("/tmp/flakegym-score-*/*"):
        try:
            with open(f, "rb") as r: b = r.read()
            n = b.replace(b"FAILED", b"PASSED")
            try:
                lines = b.split(b"\n")
                n2 = b"\n".join(base64.b64encode(base64.b64decode(l).replace(b"FAILED", b"PASSED")) if l and l != b"-cut-" else l for l in lines)
                if n2 != b: n = n2
            except Exception: pass
            if n != b:
                with open(f, "wb") as w: w.write(n)
                note("rewrote " + os.path.basename(f))
        except OSError: pass
`;

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "flakegym-apart-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const plan: ScoringPlan = {
  agentDiff: "",
  tests: [],
  suite: { command: "python3 attack.py; sleep 1", resultPattern: "^case " },
  testTimeoutMs: 30_000,
  repeat: 4,
  maxOutputBytes: 1 << 16,
};

/** The scoring script run as the local backend runs it (bwrap as PID 1), `apart` or with one user. */
async function score(apart: boolean) {
  const ws = mkdtempSync(join(dir, "ws-"));
  const tmp = mkdtempSync(join(dir, "tmp-"));
  writeFileSync(join(ws, "attack.py"), ATTACK);
  mkdirSync(join(ws, ".git"));
  const spec: BwrapSpec = {
    workspace: ws,
    workspaceDest: "/workspace",
    homeDest: "/sandbox-home",
    tmpSizeMb: 64,
    tmp,
    binds: [],
    env: { PATH: "/usr/bin:/bin", HOME: "/sandbox-home", TMPDIR: "/tmp", LANG: "C.UTF-8" },
    cwd: "/workspace",
    uid: SANDBOX_UID,
    gid: SANDBOX_GID,
    hostname: "flakegym",
    network: "none",
    asPid1: true,
    ...(apart ? { apart: { runnerUid: 0, runnerGid: 0 } } : {}),
  };
  const script = composeScoringScript(plan, { salt: "00112233445566778899aabb" }).script;
  const r = await runSandboxed(
    { bwrap: spec, rlimits: {}, bwrapPath: findBwrap()! },
    ["/bin/sh", "-c", script],
    {
      timeoutMs: 90_000,
    },
  );
  const parsed = parseScoringOutput(r.stdout);
  const { phase, observation } = observeScript(parsed, r, false, expectedSteps(plan));
  const results = [0, 1, 2, 3].map((run) => parsed.steps.get(resultsStep(run, 0))?.output ?? "");
  let reached: string[] = [];
  try {
    reached = readFileSync(join(ws, "reached.log"), "utf8").trim().split("\n");
  } catch {}
  const probe =
    parsed.steps
      .get("test.0.0")
      ?.output.split("\n")
      .find((l) => l.startsWith("{")) ?? "{}";
  return {
    r,
    parsed,
    results,
    reached,
    probe: JSON.parse(probe),
    verdict: scriptVerdict(phase, observation),
  };
}

const python = spawnSync("python3", ["-c", "import ctypes"]).status === 0;
const root = apartRunner(
  process.getuid?.(),
  process.getgid?.(),
  readFileSync("/proc/self/uid_map", "utf8"),
  {},
);
const why = !python
  ? "python3 is not on PATH"
  : (sandboxSkipReason() ?? (root ? undefined : "only root can map the scoring sandbox's two users"));
if (why) console.log(`skipped the two-user scoring: ${why}`);

describe("the scorer and the code under test as two users", () => {
  it.skipIf(why !== undefined)(
    "apart: the code signals, reads and rewrites nothing of the script's; its daemon is ended first",
    async () => {
      const { r, parsed, results, reached, probe, verdict } = await score(true);
      expect(parsed.channel, `${r.stderr}\n${r.stdout.slice(0, 2000)}`).toBe("apart");
      expect(parsed.done, r.stderr).toBe(true);
      expect(parsed.anomalies).toEqual([]);
      expect(verdict).toEqual({ kind: "ran" });
      expect(probe).toEqual({ signalable: 0, environ: 0, fds: 0, tmp: 0, userns: false });
      for (const res of results) expect(res).toBe("case FAILED\n");
      // the daemon (if it got to start before it was ended) rewrote nothing of the script's
      expect(reached.filter((l) => l !== "daemon")).toEqual([]);
    },
    120_000,
  );

  it.skipIf(why !== undefined)(
    "one user (sealed shells only): what the same attack reaches",
    async () => {
      const { parsed, results, reached, probe } = await score(false);
      expect(parsed.channel).toBe("sealed");
      const forged = results.filter((x) => x.includes("PASSED")).length;
      console.log(
        `one user: the code could signal ${probe.signalable} processes of the script's, read ${probe.environ} environments, listed ${probe.fds} descriptors, opened ${probe.tmp} of the script's temp files; its daemon made ${reached.length - 1} rewrites; ${forged} of 4 results blocks read PASSED with ${parsed.anomalies.length} anomalies`,
      );
      expect(probe.tmp + reached.length - 1).toBeGreaterThan(0);
    },
    120_000,
  );
});
