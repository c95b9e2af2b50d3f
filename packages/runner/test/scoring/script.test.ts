import { execFileSync, spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  agentEndedScript,
  composeScoringScript,
  markerOf,
  parseScoringOutput,
  type ScoringPlan,
  scriptTimeoutMs,
  timedOutStep,
} from "../../src/scoring/script.js";
import { CUT_LINE } from "../../src/scoring/script-channel.js";
import { SCRIPT_HEAD } from "../../src/scoring/script-seal.js";

// The pure halves (composition, parsing) and the script itself run by a real `sh` in a real git
// repository: what every backend's single exec does.

const NONCE = "0123456789abcdef01234567";
const M = markerOf(NONCE);
let root: string;
let n = 0;

const git = (cwd: string, ...args: string[]) =>
  execFileSync("git", ["-c", "user.email=t@t", "-c", "user.name=t", ...args], { cwd, encoding: "utf8" });

/** A fresh repository with one committed file; returns its path. */
function repo(): string {
  const dir = join(root, `repo-${n++}`);
  mkdirSync(join(dir, "src"), { recursive: true });
  writeFileSync(join(dir, "src", "a.txt"), "one\ntwo\n");
  git(dir, "init", "-q");
  git(dir, "add", "-A");
  git(dir, "commit", "-qm", "base");
  return dir;
}

/** The diff of `edit` applied to a fresh repo (binary-safe), and that repo reset afterwards. */
function diffOf(edit: (dir: string) => void): string {
  const dir = repo();
  edit(dir);
  git(dir, "add", "-A");
  return git(dir, "diff", "--cached", "--binary");
}

function runScript(dir: string, script: string) {
  // a scratch dir of the test's own: the fixed NONCE names the script's temp dir, so two runs of
  // this file at once on one machine must not share TMPDIR
  const tmp = mkdtempSync(join(tmpdir(), "flakegym-script-test-"));
  const r = spawnSync("/bin/sh", ["-c", script], {
    cwd: dir,
    encoding: "utf8",
    maxBuffer: 64 << 20,
    timeout: 120_000, // bounded: a script that never ends fails the test, not the whole run
    env: { ...process.env, TMPDIR: tmp },
  });
  rmSync(tmp, { recursive: true, force: true });
  return { stdout: r.stdout, stderr: r.stderr, status: r.status };
}

/**
 * A shell loop (`$H` = "flakegym scoring") that SIGKILLs this run's own scoring script: its sealed
 * shell copy under this run's TMPDIR, or a plain sh started with that TMPDIR (runScript gives each
 * run its own). The host's /proc shows every scoring script on the machine, sandboxed or not — other
 * tests', other checkouts' validate and e2e:real runs — and a loop matching only the script's head
 * killed them all (sympy-18189's "killed from outside its sandbox (exit 137)", gold and empty at
 * once). No pgrep: the Nix check's inputs have coreutils, not procps.
 */
const OWN_SCRIPT_KILLER = `for p in /proc/[0-9]*; do c=$(tr '\\0' ' ' < $p/cmdline 2>/dev/null); case "$c" in "$TMPDIR"/*"$H script"*) kill -9 "\${p#/proc/}";; *"$H script"*) tr '\\0' '\\n' < $p/environ 2>/dev/null | grep -qx "TMPDIR=$TMPDIR" && kill -9 "\${p#/proc/}";; esac; done`;

const plan = (over: Partial<ScoringPlan>): ScoringPlan => ({
  agentDiff: "",
  install: { kind: "files", files: [] },
  tests: [],
  testTimeoutMs: 30_000,
  repeat: 1,
  maxOutputBytes: 4096,
  ...over,
});

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), "flakegym-script-"));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("parseScoringOutput", () => {
  const b64 = (s: string) => Buffer.from(s).toString("base64");
  const sha = (s: string) => createHash("sha256").update(s).digest("hex");
  const hello = `FLAKEGYM-SCORE-HELLO ${NONCE} sealed`;
  /** A step's block as the script's `emit` prints it: result, base64 lines, end with their checksum. */
  const block = (step: string, code: number, bytes: number, body: string[]) => {
    const text = body.length ? `${body.join("\n")}\n` : "";
    return [`${M} result ${step} ${code} ${bytes} 0`, ...body, `${M} end ${step} ${sha(text)}`];
  };

  it("reads results between this run's markers and ignores everything else", () => {
    const out = [
      "noise",
      hello,
      `${markerOf("ffffffffffffffffffffffff")} result build 0 2 0`, // another run's marker
      `${M} start build`,
      ...block("build", 3, 5, [b64("oops\n")]),
      `${M} start test.0.0`,
      ...block("test.0.0", 0, 2, [b64("ok")]),
      `${M} done`,
    ].join("\n");
    const p = parseScoringOutput(out);
    expect(p).toMatchObject({ done: true, sealed: true, agentRan: true, anomalies: [] });
    expect([...p.steps.keys()]).toEqual(["build", "test.0.0"]);
    expect(p.steps.get("build")).toEqual({ exitCode: 3, output: "oops\n", outputBytes: 5, seconds: 0 });
  });

  it("leaves out a block cut off by a kill, and says where a setup step stopped", () => {
    const out = [hello, ...block("apply", 1, 3, [b64("bad")]), `${M} stopped apply`].join("\n");
    expect(parseScoringOutput(out)).toMatchObject({ done: false, stoppedAt: "apply", anomalies: [] });
    const torn = [hello, `${M} start test.0.0`, `${M} result test.0.0 0 2 0`, b64("ok")].join("\n");
    expect(parseScoringOutput(torn).steps.size).toBe(0);
  });

  it("joins a cut output's head and tail with the number of bytes left out", () => {
    const out = [
      hello,
      `${M} start lint`,
      ...block("lint", 0, 100, [b64("head"), CUT_LINE, b64("tail")]),
    ].join("\n");
    expect(parseScoringOutput(out).steps.get("lint")!.output).toBe(
      "head\n[… flakegym: 92 bytes of output cut …]\ntail",
    );
  });

  it("names every line the script would not have written, and when it came", () => {
    const anomaliesOf = (...lines: string[]) =>
      parseScoringOutput([hello, ...lines].join("\n")).anomalies.map((a) => `${a.afterAgent}: ${a.reason}`);
    const install = block("install", 0, 0, []);
    // a line written into a block: its checksum fails
    const good = block("test.0.0", 1, 4, [b64("FAIL")]);
    expect(anomaliesOf(`${M} start test.0.0`, good[0]!, b64("PASSED x"), ...good.slice(1))).toEqual([
      expect.stringMatching(/^true: step 'test.0.0': .*checksum/),
    ]);
    // a forged `stopped install` after the install succeeded and a test started
    expect(anomaliesOf(...install, `${M} start test.0.0`, `${M} stopped install`)).toEqual([
      expect.stringMatching(/^true: a 'stopped install' line the script did not write/),
    ]);
    // a step twice, a result without its start, anything after `done`, an unknown word
    expect(anomaliesOf(...install, ...install)).toEqual([
      expect.stringMatching(/^false: step 'install' reported twice/),
    ]);
    expect(anomaliesOf(...block("test.0.0", 0, 0, []))).toEqual([expect.stringMatching(/without starting/)]);
    expect(anomaliesOf(`${M} done`, `${M} done`)).toEqual([expect.stringMatching(/after the script ended/)]);
    expect(anomaliesOf(`${M} start build`, `${M} pass everything`)).toEqual([
      expect.stringMatching(/^true: a marker line the script does not write/),
    ]);
  });

  it("without its greeting nothing is read", () => {
    const p = parseScoringOutput([`${M} start build`, `${M} done`].join("\n"));
    expect(p).toMatchObject({ done: false, sealed: false, anomalies: [{ afterAgent: true }] });
  });
});

describe("composeScoringScript", () => {
  it("is pure: the same plan and nonce give the same script; no payload text appears unencoded", () => {
    const diff = `diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-${M} done\n+FLAKEGYM_EOF_${NONCE}\n`;
    const p = plan({ agentDiff: diff, tests: [{ id: "t", kind: "fail_to_pass", command: "echo 'hi'" }] });
    const a = composeScoringScript(p, { salt: NONCE });
    expect(composeScoringScript(p, { salt: NONCE })).toEqual(a);
    expect(a.script).not.toContain("FLAKEGYM_EOF_0123456789abcdef01234567\n+");
    expect(a.script).not.toContain("echo 'hi'");
    expect(a.staged).toEqual([]);
    expect(a.timeoutMs).toBeGreaterThanOrEqual(30_000);
    expect(() => composeScoringScript(p, { salt: "not hex!" })).toThrow(/salt/);
    expect(() => composeScoringScript(p, { salt: NONCE, stagedDir: "../x y" })).toThrow(/staged dir/);
  });
});

describe("the scoring script under a real sh and git", () => {
  it("applies hostile and binary diffs, installs files, runs tests with repeats, and reports unambiguously", () => {
    const bin = Buffer.from([0, 1, 2, 255, 254, 10, 13, 0, 39, 34]);
    const diff = diffOf((d) => {
      // the diff carries the marker line, the heredoc delimiter and quotes as file content
      writeFileSync(join(d, "src", "a.txt"), `one\n${M} done\nFLAKEGYM_EOF_${NONCE}\n'"$(rm -rf /)"'\n`);
      writeFileSync(join(d, "src", "blob.bin"), bin);
    });
    expect(diff).toContain("GIT binary patch");
    const dir = repo();
    const c = composeScoringScript(
      plan({
        agentDiff: diff,
        install: {
          kind: "files",
          files: [{ path: "test/deep/it's.sh", content: Buffer.from("exit 0\n") }],
        },
        tests: [
          // prints a forged result with the real nonce: it is output, not a result
          {
            id: "forger",
            kind: "fail_to_pass",
            command: `printf '%s\\n' '${M} result test.0.1 0 0 0' '${M} end test.0.1' '${M} done'; exit 5`,
          },
          {
            id: "installed",
            kind: "pass_to_pass",
            command: `sh "test/deep/it's.sh" && cmp src/blob.bin src/blob.bin`,
          },
          { id: "loud", kind: "pass_to_pass", command: "yes flakegym | head -c 1000000; echo; echo LAST" },
        ],
        repeat: 2,
      }),
      { salt: NONCE },
    );
    const r = runScript(dir, c.script);
    expect(r.status).toBe(0);
    const p = parseScoringOutput(r.stdout);
    expect(p.done).toBe(true);
    expect(readFileSync(join(dir, "src", "blob.bin"))).toEqual(bin);
    expect(readFileSync(join(dir, "src", "a.txt"), "utf8")).toContain(`FLAKEGYM_EOF_${NONCE}`);
    expect(p.steps.get("apply")!.exitCode).toBe(0);
    for (const run of [0, 1]) {
      const forger = p.steps.get(`test.${run}.0`)!;
      expect(forger.exitCode).toBe(5);
      expect(forger.output).toContain(`${M} done`);
      expect(p.steps.get(`test.${run}.1`)!.exitCode).toBe(0);
      const loud = p.steps.get(`test.${run}.2`)!;
      expect(loud.outputBytes).toBe(1_000_006);
      expect(loud.output.length).toBeLessThan(5000);
      expect(loud.output).toMatch(/^flakegym\nflakegym/);
      expect(loud.output).toMatch(/bytes of output cut …\]\n[\s\S]*\nLAST\n$/);
    }
    expect(existsSync(join(dir, "test", "deep", "it's.sh"))).toBe(true);
  });

  it("stops at a diff that does not apply, with git's message, and runs nothing after it", () => {
    const dir = repo();
    const bad =
      "diff --git a/src/a.txt b/src/a.txt\n--- a/src/a.txt\n+++ b/src/a.txt\n@@ -1 +1 @@\n-nope\n+yes\n";
    const c = composeScoringScript(
      plan({ agentDiff: bad, build: { command: "touch built", timeoutMs: 5_000 } }),
      { salt: NONCE },
    );
    const p = parseScoringOutput(runScript(dir, c.script).stdout);
    expect(p).toMatchObject({ done: false, stoppedAt: "apply" });
    expect(p.steps.get("apply")!.output).toMatch(/src\/a\.txt/);
    expect(existsSync(join(dir, "built"))).toBe(false);
  });

  it("without hidden tests (a dataset row) only the diff and the build run", () => {
    const dir = repo();
    const diff = diffOf((d) => writeFileSync(join(d, "src", "a.txt"), "one\nthree\n"));
    const { install: _none, ...noTests } = plan({});
    const c = composeScoringScript(
      { ...noTests, agentDiff: diff, build: { command: "grep -q three src/a.txt", timeoutMs: 5_000 } },
      { salt: NONCE },
    );
    const p = parseScoringOutput(runScript(dir, c.script).stdout);
    expect(p.done).toBe(true);
    expect([...p.steps.keys()]).toEqual(["apply", "build"]);
    expect(p.steps.get("build")!.exitCode).toBe(0);
  });

  it("with a reach probe the build gets its variables (files outside the workspace) and `reach` lists after it", () => {
    const dir = repo();
    const { install: _none, ...noTests } = plan({});
    const build = {
      command: 'printf "src/a.txt\\n" >> "$DEPENDENCIES_OUTPUT"; touch made',
      timeoutMs: 5_000,
      reach: {
        buildEnv: { DEPENDENCIES_OUTPUT: "deps" },
        list: `printf '%s\\n' "$PWD"; cat "$FLAKEGYM_REACH/deps"; find . -newer "$FLAKEGYM_REACH/mark" -name made`,
      },
    };
    const c = composeScoringScript({ ...noTests, agentDiff: "", build }, { salt: NONCE });
    const p = parseScoringOutput(runScript(dir, c.script).stdout);
    expect([...p.steps.keys()]).toEqual(["build", "reach"]);
    expect(p.steps.get("reach")!.output.split("\n").slice(1)).toEqual(["src/a.txt", "./made", ""]);
    // the variable names a file in the script's temp dir, never one in the workspace
    expect(existsSync(join(dir, "deps"))).toBe(false);
    expect(() =>
      composeScoringScript(
        {
          ...noTests,
          agentDiff: "",
          build: { ...build, reach: { list: "true", buildEnv: { "X;rm": "a" } } },
        },
        { salt: NONCE },
      ),
    ).toThrow(/plain name/);
  });

  it("a test past its deadline is killed and reads as timed out", () => {
    const dir = repo();
    const p0 = plan({
      tests: [{ id: "slow", kind: "fail_to_pass", command: "sleep 30" }],
      testTimeoutMs: 1_000,
    });
    const p = parseScoringOutput(runScript(dir, composeScoringScript(p0, { salt: NONCE }).script).stdout);
    const s = p.steps.get("test.0.0")!;
    expect(s.exitCode).toBe(124);
    expect(timedOutStep(s, 1_000)).toBe(true);
    expect(timedOutStep({ ...s, exitCode: 0 }, 1_000)).toBe(false);
  }, 20_000);

  it("staged payloads (a script too long for one argument) are read, then removed from the workspace", () => {
    const dir = repo();
    const diff = diffOf((d) => writeFileSync(join(d, "src", "a.txt"), "one\nthree\n"));
    const patch = diffOf((d) => {
      mkdirSync(join(d, "test"));
      writeFileSync(join(d, "test", "t.sh"), "grep -q three src/a.txt\n");
    });
    const c = composeScoringScript(
      plan({
        agentDiff: diff,
        install: { kind: "patch", patch },
        tests: [{ id: "t", kind: "fail_to_pass", command: "sh test/t.sh" }],
      }),
      { salt: NONCE, stagedDir: ".flakegym-score-x" },
    );
    expect(c.staged.map((f) => f.path)).toEqual([
      ".flakegym-score-x/agent.patch",
      ".flakegym-score-x/tests.patch",
    ]);
    expect(c.script).not.toContain("base64 -d >");
    for (const f of c.staged) {
      mkdirSync(dirname(join(dir, f.path)), { recursive: true });
      writeFileSync(join(dir, f.path), f.content);
    }
    const p = parseScoringOutput(runScript(dir, c.script).stdout);
    expect(p.done).toBe(true);
    expect(p.steps.get("install")!.exitCode).toBe(0);
    expect(p.steps.get("test.0.0")!.exitCode).toBe(0);
    expect(existsSync(join(dir, ".flakegym-score-x"))).toBe(false);
  });
});

describe("hidden tests under attack (a real sh)", () => {
  it("the killer these tests leave behind spares another run's scoring script (one beside it on the machine)", () => {
    // a bystander: a scoring script's head in its command line, started with another run's TMPDIR
    const other = mkdtempSync(join(tmpdir(), "flakegym-script-test-other-"));
    const bystander = spawn("/bin/sh", ["-c", `${SCRIPT_HEAD}\nsleep 60`], {
      env: { ...process.env, TMPDIR: other },
      stdio: "ignore",
    });
    try {
      const mine = mkdtempSync(join(tmpdir(), "flakegym-script-test-"));
      const r = spawnSync("/bin/sh", ["-c", `H="flakegym scoring"; ${OWN_SCRIPT_KILLER}`], {
        env: { ...process.env, TMPDIR: mine },
        timeout: 120_000,
      });
      rmSync(mine, { recursive: true, force: true });
      expect(r.status).toBe(0);
      // alive: not yet reaped (the event loop has not run), so a killed one would show as a zombie
      const state = readFileSync(`/proc/${bystander.pid}/stat`, "utf8").replace(/^.*\) /s, "")[0];
      expect(state).not.toBe("Z");
    } finally {
      bystander.kill("SIGKILL");
      rmSync(other, { recursive: true, force: true });
    }
  }, 150_000);

  it("adds the canary, puts the hidden files back before every run, lists the ones a run changed, gives each run a fresh HOME", () => {
    const dir = repo();
    const suite = [
      "cat tests/t.txt", // the canary was added around the hidden file
      'test -z "$(ls -A "$HOME")" && echo "home empty"', // nothing from the run before
      'touch "$HOME/left-behind"',
      "stat -c 'mode %a' tests/t.txt", // installed read-only …
      "chmod u+w tests/t.txt && echo rewritten > tests/t.txt", // … yet the code under test (same uid) rewrites it
      "echo 'ok a'; echo 'FAIL test_c'; echo 'noise'; exit 1",
    ].join("; ");
    const c = composeScoringScript(
      plan({
        install: { kind: "files", files: [{ path: "tests/t.txt", content: Buffer.from("body\n") }] },
        suite: { command: suite, resultPattern: "^(ok|FAIL) [^ ]+$" },
        canary: { file: "tests/t.txt", prepend: "pre\n", append: "post test_c\n" },
        hiddenFiles: ["tests/t.txt"],
        repeat: 2,
      }),
      { salt: NONCE },
    );
    const r = runScript(dir, c.script);
    const p = parseScoringOutput(r.stdout);
    expect(p.done).toBe(true);
    for (const run of [0, 1]) {
      expect(p.steps.get(`test.${run}.0`)).toMatchObject({
        exitCode: 1,
        output: "pre\nbody\npost test_c\nhome empty\nmode 444\nok a\nFAIL test_c\nnoise\n",
      });
      expect(p.steps.get(`results.${run}.0`)!.output).toBe("ok a\nFAIL test_c\n");
      expect(p.steps.get(`hidden.${run}.0`)!.output).toBe("tests/t.txt\n");
    }
    expect(p.unfinished).toEqual([]);
  });

  // the scorer's own copy of a hidden file sits in its temp dir, which code of the same uid can
  // write: rewriting the copy with the file once hid the rewrite from the check after the run
  it("a run that rewrites a hidden file and the script's copy of it is still listed (checked against the install's checksum)", () => {
    const dir = repo();
    const forge = [
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell parameter expansion
      'for c in "${TMPDIR:-/tmp}"/flakegym-score-*/hidden/0; do chmod u+w "$c" tests/t.txt; echo forged > "$c"; echo forged > tests/t.txt; done',
      "echo 'ok a'",
    ].join("; ");
    const c = composeScoringScript(
      plan({
        install: { kind: "files", files: [{ path: "tests/t.txt", content: Buffer.from("body\n") }] },
        suite: { command: forge, resultPattern: "^ok [^ ]+$" },
        hiddenFiles: ["tests/t.txt"],
        repeat: 2,
      }),
      { salt: NONCE },
    );
    const p = parseScoringOutput(runScript(dir, c.script).stdout);
    expect(p.done).toBe(true);
    for (const run of [0, 1]) expect(p.steps.get(`hidden.${run}.0`)!.output).toBe("tests/t.txt\n");
  });

  const notRoot = process.getuid?.() !== 0;
  if (notRoot) console.log("skipped the bound hidden-file test: chown to another user needs root");
  it.skipIf(notRoot)(
    "a hidden file already there, owned by another user and as installed (bound read-only by the backend), is left as it is (chown needs root)",
    () => {
      const dir = repo();
      mkdirSync(join(dir, "tests"));
      for (const [name, body] of [
        ["bound.txt", "as installed\n"],
        ["stale.txt", "something else\n"],
      ] as const) {
        writeFileSync(join(dir, "tests", name), body, { mode: 0o444 });
        chownSync(join(dir, "tests", name), 65534, 65534);
      }
      const before = statSync(join(dir, "tests", "bound.txt")).ino;
      const c = composeScoringScript(
        plan({
          install: {
            kind: "files",
            files: [
              { path: "tests/bound.txt", content: Buffer.from("as installed\n") },
              { path: "tests/stale.txt", content: Buffer.from("installed\n") },
            ],
          },
          tests: [{ id: "t", kind: "fail_to_pass", command: "cat tests/bound.txt tests/stale.txt" }],
          hiddenFiles: ["tests/bound.txt", "tests/stale.txt"],
          repeat: 2,
        }),
        { salt: NONCE },
      );
      const p = parseScoringOutput(runScript(dir, c.script).stdout);
      expect(p.done).toBe(true);
      expect(p.steps.get("install")!.output).toBe("read-only, owned by another user: tests/bound.txt\n");
      expect(p.steps.get("test.1.0")!.output).toBe("as installed\ninstalled\n");
      // the bound file was neither replaced nor reset between runs; the other one was written
      expect(statSync(join(dir, "tests", "bound.txt"))).toMatchObject({
        ino: before,
        uid: 65534,
        mode: 0o100444,
      });
      expect(statSync(join(dir, "tests", "stale.txt")).uid).toBe(0);
    },
  );

  it("a test that kills the script leaves its step started and unfinished", () => {
    const dir = repo();
    const c = composeScoringScript(
      plan({
        // every process running this run's scoring script (OWN_SCRIPT_KILLER), none of another run's
        tests: [
          {
            id: "k",
            kind: "fail_to_pass",
            command: `H="flakegym scoring"; ${OWN_SCRIPT_KILLER}`,
          },
        ],
      }),
      { salt: NONCE },
    );
    const p = parseScoringOutput(runScript(dir, c.script).stdout);
    expect(p.done).toBe(false);
    expect(p.unfinished).toEqual(["test.0.0"]);
    expect(agentEndedScript(p)).toEqual({ step: "test.0.0", during: true });
  });

  it("a canary that cannot be added stops the install it belongs to: one install report, no anomaly", () => {
    const dir = repo();
    const c = composeScoringScript(
      plan({
        install: { kind: "files", files: [{ path: "tests/t.txt", content: Buffer.from("body\n") }] },
        // the canary goes into a file the install did not write: cat fails
        canary: { file: "tests/missing.txt", prepend: "pre\n", append: "post\n" },
        tests: [{ id: "t", kind: "fail_to_pass", command: "true" }],
      }),
      { salt: NONCE },
    );
    const p = parseScoringOutput(runScript(dir, c.script).stdout);
    expect(p).toMatchObject({ stoppedAt: "install", anomalies: [], agentRan: false });
    expect(p.steps.get("install")!.output).toMatch(/missing\.txt/);
  });

  it("no name the script writes beside a hidden file can be taken by the agent's diff beforehand", () => {
    const dir = repo();
    // a directory where a fixed temp name would go: cp would copy into it, mv would move it over
    // the hidden file, and the canary's write would fail — an install stopped by the agent's diff
    const agentDiff = diffOf((d) => {
      mkdirSync(join(d, "tests/t.txt.flakegym-tmp"), { recursive: true });
      writeFileSync(join(d, "tests/t.txt.flakegym-tmp/x"), "taken\n");
    });
    const c = composeScoringScript(
      plan({
        agentDiff,
        install: { kind: "files", files: [{ path: "tests/t.txt", content: Buffer.from("body\n") }] },
        canary: { file: "tests/t.txt", prepend: "pre\n", append: "post\n" },
        tests: [{ id: "t", kind: "fail_to_pass", command: "cat tests/t.txt" }],
      }),
      { salt: NONCE },
    );
    const p = parseScoringOutput(runScript(dir, c.script).stdout);
    expect(p.stoppedAt, p.steps.get("install")?.output).toBeUndefined();
    expect(p.steps.get("test.0.0")!.output).toBe("pre\nbody\npost\n");
  });

  it("a process a test left behind that ends the script after the test reported is named too", () => {
    const dir = repo();
    // the test's step reports; then the script blocks on a FIFO where the result lines go, and the
    // process the test left behind kills it there: between two steps, no step unfinished
    const kill = OWN_SCRIPT_KILLER;
    const c = composeScoringScript(
      plan({
        suite: {
          command: `H="flakegym scoring"; mkfifo "$(ls -d "$TMPDIR"/flakegym-score-*)/res"; (sleep 1; ${kill}) > /dev/null 2>&1 & echo 'FAIL t_1'; exit 1`,
          resultPattern: "^(ok|FAIL) [^ ]+$",
        },
      }),
      { salt: NONCE },
    );
    const p = parseScoringOutput(runScript(dir, c.script).stdout);
    expect(p.done).toBe(false);
    expect(p.unfinished).toEqual([]);
    expect(p.steps.get("test.0.0")!.output).toBe("FAIL t_1\n");
    expect(agentEndedScript(p)).toEqual({ step: "test.0.0", during: false });
  }, 150_000); // its kill walks every /proc entry: slow where a whole suite shares the namespace
});

describe("agentEndedScript", () => {
  const s = { exitCode: 0, output: "", outputBytes: 0, seconds: 0 };
  const parsed = (
    steps: string[],
    o: { done?: boolean; unfinished?: string[]; stoppedAt?: string } = {},
  ) => ({
    steps: new Map(steps.map((k) => [k, s] as const)),
    done: o.done ?? false,
    unfinished: o.unfinished ?? [],
    agentRan: true,
    anomalies: [],
    sealed: true,
    channel: "sealed" as const,
    ...(o.stoppedAt ? { stoppedAt: o.stoppedAt } : {}),
  });

  it("names the step of the agent's code that ended the script, during or after it", () => {
    expect(agentEndedScript(parsed(["apply", "build"], { unfinished: ["test.0.0"] }))).toEqual({
      step: "test.0.0",
      during: true,
    });
    expect(agentEndedScript(parsed(["apply", "build", "install", "test.0.0", "results.0.0"]))).toEqual({
      step: "test.0.0",
      during: false,
    });
    // a build that left a process behind which ended the script during the install
    expect(agentEndedScript(parsed(["apply", "build"], { unfinished: [] }))).toEqual({
      step: "build",
      during: false,
    });
  });

  it("is undefined when the script finished, stopped at setup, or ended before any of the agent's code ran", () => {
    expect(agentEndedScript(parsed(["apply", "test.0.0"], { done: true }))).toBeUndefined();
    expect(agentEndedScript(parsed(["apply"], { stoppedAt: "apply" }))).toBeUndefined();
    expect(agentEndedScript(parsed(["apply", "install"]))).toBeUndefined();
    expect(agentEndedScript(parsed([]))).toBeUndefined();
  });
});

describe("scriptTimeoutMs", () => {
  it("is each step's deadline plus 5 s, the tests once per repeat (at least once), plus a minute", () => {
    expect(scriptTimeoutMs(plan({ repeat: 0 }))).toBe(60_000);
    const cmds = [
      { id: "a", kind: "fail_to_pass" as const, command: "true" },
      { id: "b", kind: "pass_to_pass" as const, command: "true" },
    ];
    expect(
      scriptTimeoutMs(
        plan({
          tests: cmds,
          repeat: 2,
          testTimeoutMs: 10_000,
          build: { command: "make", timeoutMs: 1_000 },
          lint: { command: "lint", timeoutMs: 2_000 },
        }),
      ),
    ).toBe(6_000 + 7_000 + 2 * 2 * 15_000 + 60_000);
    // a suite is one command however many tests it runs
    expect(
      scriptTimeoutMs(
        plan({ tests: cmds, suite: { command: "t", resultPattern: "x" }, testTimeoutMs: 10_000 }),
      ),
    ).toBe(15_000 + 60_000);
  });
});
