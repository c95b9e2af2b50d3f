import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { composeScoringScript, type ScoringPlan } from "../../src/scoring/script.js";
import { parseScoringOutput } from "../../src/scoring/script-channel.js";
import { SCORING_INIT_ARGS } from "../../src/workers/local/bwrap-args.js";
import { findBwrap } from "../../src/workers/local/shape.js";
import { sandboxSkipReason } from "../helpers/sandbox.js";

// The scorer's channel against a process the code under test leaves behind (issue 42): the test
// step starts a detached watcher (its own session, same uid) that, for the rest of the script,
// scans every process's descriptors, takes any pipe or socket it can (open `/proc/<pid>/fd/<n>`,
// else `pidfd_getfd`), writes a token line into each socket (the channel is one) and reads from it.
// A token on the script's stdout means the channel was reached; the watcher logs what it took.
// Before the fix it wrote into the channel through bwrap's init and the script's helpers (wc, tr,
// base64, sha256sum, cut, cp, rm, dirname, cat); the pipes of the helpers that hand a value to the
// shell stay takeable (logged), and what the shell prints of them is checked first (script.ts).

const WATCHER = String.raw`
import ctypes, os, select, stat, sys, time
log = sys.argv[1]
if os.fork(): sys.exit(0)
os.setsid()
if os.fork(): os._exit(0)
libc = ctypes.CDLL(None, use_errno=True)
me, seen, end = os.getpid(), set(), time.time() + 20
with open(log, "a") as f: f.write("start\n")
def take(p, n):
    try: return os.open("/proc/%d/fd/%s" % (p, n), os.O_RDWR | os.O_NONBLOCK)
    except OSError: pass
    pidfd = libc.syscall(434, p, 0)
    if pidfd < 0: return -1
    fd = libc.syscall(438, pidfd, int(n), 0); os.close(pidfd)
    return fd
while time.time() < end:
    for p in [int(d) for d in os.listdir("/proc") if d.isdigit()]:
        if p == me: continue
        try: fds = os.listdir("/proc/%d/fd" % p); comm = open("/proc/%d/comm" % p).read().strip()
        except OSError: continue
        for n in fds:
            if (comm, n) in seen: continue
            fd = take(p, n)
            if fd < 0: continue
            m = os.fstat(fd).st_mode
            if stat.S_ISFIFO(m) or stat.S_ISSOCK(m):
                seen.add((comm, n))
                kind = "socket" if stat.S_ISSOCK(m) else "pipe"
                # the channel is a socket (Node's child stdio, as the local backend's): write a
                # token into every socket taken, and read whatever it holds, for the nonce
                if kind == "socket":
                    try: os.write(fd, ("\nFLAKEGYM-WATCH %s %s\n" % (comm, n)).encode())
                    except OSError: pass
                try: got = os.read(fd, 1 << 16) if kind == "socket" and select.select([fd], [], [], 0)[0] else b""
                except OSError: got = b""
                with open(log, "a") as f: f.write("%s %s %s%s\n" % (kind, comm, n, " NONCE" if b"FLAKEGYM-SCORE-" in got else ""))
            os.close(fd)
`;

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "flakegym-watch-"));
  writeFileSync(join(dir, "watcher.py"), WATCHER);
  writeFileSync(join(dir, "hidden.txt"), "hidden\n");
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// helpers between and after the runs: resets, checks, emits, the trap's clean-up
const plan: ScoringPlan = {
  agentDiff: "",
  install: { kind: "files", files: [{ path: "hidden.txt", content: Buffer.from("hidden\n") }] },
  hiddenFiles: ["hidden.txt"],
  tests: [
    { id: "watch", kind: "fail_to_pass", command: `python3 watcher.py "$PWD/reached"; sleep 1` },
    { id: "more", kind: "fail_to_pass", command: "seq 1 20000" },
  ],
  testTimeoutMs: 30_000,
  repeat: 3,
  maxOutputBytes: 1 << 16,
};

/** Runs the script in a capability-less sandbox user; `init`: bwrap's arguments for PID 1. */
function score(init: readonly string[]) {
  const tmp = mkdtempSync(join(dir, "tmp-"));
  rmSync(join(dir, "reached"), { force: true });
  const script = composeScoringScript(plan, { salt: "00112233445566778899aabb" }).script;
  const r = spawnSync(
    findBwrap()!,
    [
      ...["--unshare-user", "--uid", "1000", "--gid", "1000", "--unshare-pid", "--cap-drop", "ALL", ...init],
      ...["--ro-bind", "/", "/", "--bind", dir, dir, "--proc", "/proc", "--dev", "/dev", "--chdir", dir],
      ...["--setenv", "TMPDIR", tmp, "--new-session", "--die-with-parent", "sh", "-c", script],
    ],
    { encoding: "utf8", timeout: 60_000 },
  );
  let reached: string[] = [];
  try {
    reached = readFileSync(join(dir, "reached"), "utf8").trim().split("\n").filter(Boolean);
  } catch {}
  return { r, parsed: parseScoringOutput(r.stdout), reached };
}

const python = spawnSync("python3", ["-c", "import ctypes"]).status === 0;
const why = !python ? "python3 with ctypes is not on PATH" : sandboxSkipReason();
if (why) console.log(`skipped the channel watcher: ${why}`);

describe("a detached watcher left by the code under test, against the scorer's channel", () => {
  it.skipIf(why !== undefined)(
    "as the local backend runs scoring: no process it can reach holds the channel",
    () => {
      const { r, parsed, reached } = score(SCORING_INIT_ARGS);
      // each line the watcher wrote into a descriptor that turned out to be the channel
      expect(r.stdout.match(/^FLAKEGYM-WATCH .*$/gm) ?? []).toEqual([]);
      expect(parsed.sealed, r.stderr).toBe(true);
      expect(parsed.done, `${r.status} ${r.stderr} ${r.stdout.slice(-2000)}`).toBe(true);
      expect(parsed.anomalies).toEqual([]);
      // it ran (what it did reach: pipes of the script's command substitutions, never the channel)
      expect(reached[0]).toBe("start");
      console.log(`the watcher took: ${reached.filter((l) => l !== "start").join(", ") || "nothing"}`);
    },
  );
});
