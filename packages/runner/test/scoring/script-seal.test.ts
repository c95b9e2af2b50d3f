import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { composeScoringScript, expectedSteps, type ScoringPlan } from "../../src/scoring/script.js";
import { parseScoringOutput } from "../../src/scoring/script-channel.js";
import { observeScript, scriptVerdict } from "../../src/scoring/script-verdict.js";
import { findBwrap } from "../../src/workers/local/shape.js";
import { sandboxSkipReason } from "../helpers/sandbox.js";

// The scoring protocol against code that runs below it with the same uid (issue 42): a probe in
// the test step walks its ancestors, looks for the marker nonce in their command lines and memory,
// tries to get their stdout (the scorer's channel) by /proc/<pid>/fd/1 and by pidfd_getfd, and
// writes a forged `stopped install` line wherever it can. Sealed (a sandbox user without
// capabilities, as every backend's), it finds nothing; open (root, whose capabilities read the
// execute-only shell), it forges — and the strict channel turns that into a 0 with its reason.

const PROBE = String.raw`
import ctypes, json, os, re, stat
NONCE = re.compile(rb"FLAKEGYM-SCORE-([0-9a-f]{24})")
def ancestors():
    p = os.getppid()
    while p > 1:
        yield p
        p = int(open("/proc/%d/stat" % p).read().rsplit(")", 1)[1].split()[1])
def memory(p):
    out = []
    with open("/proc/%d/maps" % p) as maps, open("/proc/%d/mem" % p, "rb", 0) as mem:
        for line in maps:
            addr, perms = line.split()[:2]
            if "rw" not in perms: continue
            lo, hi = (int(x, 16) for x in addr.split("-"))
            try:
                mem.seek(lo); out += NONCE.findall(mem.read(min(hi - lo, 1 << 24)))
            except OSError: pass
    return out
def channel(p):
    try: return os.open("/proc/%d/fd/1" % p, os.O_WRONLY)
    except OSError: pass
    libc = ctypes.CDLL(None, use_errno=True)
    pidfd = libc.syscall(434, p, 0)
    fd = libc.syscall(438, pidfd, 1, 0) if pidfd >= 0 else -1
    if fd < 0: raise OSError(ctypes.get_errno(), "pidfd_getfd")
    return fd
found = {"cmdline": [], "memory": [], "channels": 0}
fds = []
for p in ancestors():
    try: found["cmdline"] += [n.decode() for n in NONCE.findall(open("/proc/%d/cmdline" % p, "rb").read())]
    except OSError: pass
    try: found["memory"] += [n.decode() for n in memory(p)]
    except OSError: pass
    try:
        fd = channel(p)
        if stat.S_ISFIFO(os.fstat(fd).st_mode) or stat.S_ISSOCK(os.fstat(fd).st_mode):
            found["channels"] += 1; fds.append(fd)
    except OSError: pass
for n in set(found["cmdline"] + found["memory"]):
    for fd in fds: os.write(fd, ("\nFLAKEGYM-SCORE-%s stopped install\n" % n).encode())
print(json.dumps(found))
`;

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "flakegym-seal-"));
  writeFileSync(join(dir, "probe.py"), PROBE);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const plan: ScoringPlan = {
  agentDiff: "",
  install: { kind: "files", files: [] },
  tests: [{ id: "probe", kind: "fail_to_pass", command: "python3 probe.py" }],
  testTimeoutMs: 30_000,
  repeat: 1,
  maxOutputBytes: 1 << 16,
};
const script = () => composeScoringScript(plan, { salt: "00112233445566778899aabb" }).script;

/** The script's channel read back, the probe's findings and the verdict. */
function judge(stdout: string, exitCode: number) {
  const parsed = parseScoringOutput(stdout);
  const probe = parsed.steps.get("test.0.0")?.output ?? "";
  const { phase, observation } = observeScript(
    parsed,
    { exitCode, timedOut: false },
    false,
    expectedSteps(plan),
  );
  return { parsed, probe, verdict: scriptVerdict(phase, observation) };
}

const python = spawnSync("python3", ["-c", "import ctypes"]).status === 0;
const noSandbox = sandboxSkipReason();
const why = !python ? "python3 with ctypes is not on PATH" : noSandbox;
if (why) console.log(`skipped the sealed-channel probe: ${why}`);

describe("the scoring script's channel and nonce against code of the same uid", () => {
  it.skipIf(why !== undefined)(
    "sealed in a sandbox user without capabilities: nothing found, nothing forged",
    () => {
      const tmp = mkdtempSync(join(dir, "tmp-"));
      const r = spawnSync(
        findBwrap()!,
        [
          ...["--unshare-user", "--uid", "1000", "--gid", "1000", "--unshare-pid", "--cap-drop", "ALL"],
          ...["--ro-bind", "/", "/", "--bind", dir, dir, "--proc", "/proc", "--dev", "/dev", "--chdir", dir],
          ...["--setenv", "TMPDIR", tmp, "--die-with-parent", "sh", "-c", script()],
        ],
        { encoding: "utf8", timeout: 60_000 },
      );
      const { parsed, probe, verdict } = judge(r.stdout, r.status ?? 137);
      expect(parsed.sealed, r.stderr).toBe(true);
      expect(JSON.parse(probe.trim().split("\n").at(-1)!)).toEqual({ cmdline: [], memory: [], channels: 0 });
      expect(parsed.anomalies).toEqual([]);
      expect(verdict).toEqual({ kind: "ran" });
    },
  );

  const root = process.getuid?.() === 0;
  it.skipIf(!python || !root)(
    "open (root reads the execute-only shell): the probe forges, and the run is a 0 with the reason",
    () => {
      const tmp = mkdtempSync(join(dir, "tmp-"));
      const r = spawnSync("/bin/sh", ["-c", script()], {
        cwd: dir,
        encoding: "utf8",
        timeout: 60_000,
        env: { ...process.env, TMPDIR: tmp },
      });
      const { parsed, probe, verdict } = judge(r.stdout, r.status ?? 137);
      expect(parsed.sealed).toBe(false);
      const found = JSON.parse(probe.trim().split("\n").at(-1)!);
      // never in a command line; in memory, and the channel reachable: the forgery lands …
      expect(found.cmdline).toEqual([]);
      expect(found.memory.length).toBeGreaterThan(0);
      expect(found.channels).toBeGreaterThan(0);
      // … and is read as what it is: after the agent's code ran, a 0 naming it (never no score)
      expect(parsed.anomalies[0]).toMatchObject({ afterAgent: true });
      expect(verdict).toMatchObject({ kind: "ran", failClosed: expect.stringContaining("stopped install") });
    },
  );
  if (!root) console.log("skipped the open-channel probe: only root reads an execute-only shell");
});
