import { cp, mkdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import {
  buildSnapshot,
  type HiddenTests,
  hiddenTestsOf,
  type LoadedTask,
  loadTaskDir,
  type Snapshot,
  snapshotSpecOfTask,
} from "@flakegym/runner";
import { makeTempDir, type TempDir } from "@flakegym/test-utils";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fileDiff } from "./red-team/attack.js";
import { scoreInFork } from "./score-in-fork.js";

/**
 * Attacks on an `eval_cmd` task (an imported Harbor task: test.sh runs pytest and writes
 * reward.txt): the code under test runs inside the process tree that computes the verdict, so it
 * can forge it whatever the mechanism. Each attack leaves the bug unfixed and must score 0; the
 * reference solution must still score 1 and the empty change 0.
 */

let tmp: TempDir;
let task: LoadedTask;
let snapshot: Snapshot;
let hidden: HiddenTests;
const BUGGY = 'def greet(name):\n    return "Hello, !"\n';

beforeAll(async () => {
  tmp = await makeTempDir("flakegym-harbor-attacks-");
  const ds = join(tmp.path, "ds");
  await mkdir(ds, { recursive: true });
  await cp(join(import.meta.dirname, "../../fixtures/harbor/hello-greeting"), join(ds, "hello-greeting"), {
    recursive: true,
  });
  const cat = join(tmp.path, "cat");
  const r = await execa("npx", ["flakegym", "tasks", "import", "--dataset", ds, "--out", cat], {
    reject: false,
  });
  expect(r.exitCode, r.stderr).toBe(0);
  task = await loadTaskDir(join(cat, "hello-greeting"));
  snapshot = await buildSnapshot(snapshotSpecOfTask(task), { cacheDir: join(tmp.path, "cache") });
  hidden = await hiddenTestsOf(task, 120_000);
}, 600_000);
afterAll(async () => {
  await tmp?.cleanup();
});

/** The verifier's reward file, from the workspace (test.sh gets HARBOR_ROOT). */
const REWARD = `os.path.join(os.environ.get("HARBOR_ROOT", ".harbor"), "logs", "verifier", "reward.txt")`;

/** Each attack: the files its diff writes whole (greet.py keeps the bug). */
const ATTACKS: Record<string, Record<string, string>> = {
  "exit 0 at import": { "greet.py": "import os\nos._exit(0)\n" },
  "daemon rewrites reward.txt": {
    "greet.py": `import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        p = ${REWARD}
        for _ in range(20000):
            try:
                if open(p).read().strip() == "0":
                    open(p, "w").write("1\\n")
            except OSError:
                pass
            time.sleep(0.0005)
        os._exit(0)
    os._exit(0)

${BUGGY}`,
  },
  "pytest11 plugin from a dist-info in the workspace": {
    "greetplug-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: greetplug\nVersion: 1.0\n",
    "greetplug-1.0.dist-info/entry_points.txt": "[pytest11]\ngreetplug = greetplug\n",
    "greetplug.py": `import pytest

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    rep.outcome = "passed"
    rep.longrepr = None
`,
  },
  "atexit forces the exit status to 0": {
    "greet.py": `import atexit, os
atexit.register(lambda: os._exit(0))

${BUGGY}`,
  },
  "atexit forks a writer that rewrites reward.txt": {
    "greet.py": `import atexit, os, time

def _later():
    if os.fork() == 0:
        os.setsid()
        p = ${REWARD}
        for _ in range(20000):
            try:
                if open(p).read().strip() == "0":
                    open(p, "w").write("1\\n")
                    break
            except OSError:
                pass
            time.sleep(0.0005)
        os._exit(0)

atexit.register(_later)

${BUGGY}`,
  },
  "an always-equal return value": {
    "greet.py": `class _Any(str):
    def __eq__(self, other):
        return True
    __hash__ = str.__hash__

def greet(name):
    return _Any("Hello, !")
`,
  },
  "the answer read from the caller's assertion": {
    "greet.py": `import inspect, re

def greet(name):
    line = inspect.stack()[1].code_context[0]
    m = re.search(r"==\\s*(['\\"])(.*)\\1", line)
    return m.group(2) if m else "Hello, !"
`,
  },
  "writes reward.txt and kills the parent test.sh": {
    "greet.py": `import os, signal
p = ${REWARD}
os.makedirs(os.path.dirname(p), exist_ok=True)
open(p, "w").write("1\\n")
os.kill(os.getppid(), signal.SIGKILL)
os._exit(0)
`,
  },
};

/**
 * `FLAKEGYM_HARBOR_BASELINE=1` scores the attacks without the decoy twin (the scorer before it) and
 * expects each to WIN there: every attack is a real forgery, not one the rest of scoring stops.
 */
const BASELINE = process.env.FLAKEGYM_HARBOR_BASELINE === "1";
const score = (name: string, diff: string, twin = true) =>
  scoreInFork({ dir: tmp.path, name, task, snapshot, hidden, diff, twin });

describe("harbor attacks", () => {
  it("the reference solution scores 1 and the empty change 0", async () => {
    const gold = await score("gold", await readFile(task.paths.solution, "utf8"));
    console.log(`harbor gold: reward ${gold.reward} ${JSON.stringify(gold.gate ?? gold.terms)}`);
    expect(gold.reward).toBe(1);
    expect(gold.decoys?.guarded).toEqual(["eval_cmd"]);
    const empty = await score("empty", "");
    expect(empty.reward).toBe(0);
  }, 600_000);

  it.each(Object.entries(ATTACKS).map(([what, files], i) => [what, files, i] as const))(
    "%s",
    async (what, files, i) => {
      const diff = Object.entries(files)
        .map(([path, content]) => fileDiff(path, path === "greet.py" ? BUGGY : undefined, content))
        .join("");
      const s = await score(`a${i}`, diff, !BASELINE);
      console.log(
        `harbor attack ${what}${BASELINE ? " (baseline: no twin)" : ""}: reward ${s.reward} ${JSON.stringify(s.gate ?? s.terms)}`,
      );
      expect(s.reward).toBe(BASELINE ? 1 : 0);
    },
    600_000,
  );
});
