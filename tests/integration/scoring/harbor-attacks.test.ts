import { cp, mkdir } from "node:fs/promises";
import { join } from "node:path";
import { buildSnapshot, hiddenTestsOf, loadTaskDir, snapshotSpecOfTask } from "@flakegym/runner";
import { makeTempDir, type TempDir } from "@flakegym/test-utils";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fileDiff } from "./red-team/attack.js";
import { scoreInFork } from "./score-in-fork.js";

let tmp: TempDir;
beforeAll(async () => {
  tmp = await makeTempDir("flakegym-harbor-attacks-");
});
afterAll(async () => {
  await tmp?.cleanup();
});

const ATTACKS: Record<string, string> = {
  "exit 0 at import": "import os\nos._exit(0)\n",
  "daemon rewrites reward.txt": `import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        p = os.path.join(os.environ.get("HARBOR_ROOT", ".harbor"), "logs", "verifier", "reward.txt")
        for _ in range(20000):
            try:
                if open(p).read().strip() == "0":
                    open(p, "w").write("1\\n")
            except OSError:
                pass
            time.sleep(0.0005)
        os._exit(0)
    os._exit(0)

def greet(name):
    return "Hello, !"
`,
};

describe("harbor attacks", () => {
  it.each(Object.entries(ATTACKS))(
    "%s",
    async (what, content) => {
      const ds = join(tmp.path, `ds-${what.length}`);
      await mkdir(ds, { recursive: true });
      await cp(
        join(import.meta.dirname, "../../fixtures/harbor/hello-greeting"),
        join(ds, "hello-greeting"),
        { recursive: true },
      );
      const cat = join(tmp.path, `cat-${what.length}`);
      const r = await execa("npx", ["flakegym", "tasks", "import", "--dataset", ds, "--out", cat], {
        reject: false,
      });
      expect(r.exitCode, r.stderr).toBe(0);
      const task = await loadTaskDir(join(cat, "hello-greeting"));
      const snapshot = await buildSnapshot(snapshotSpecOfTask(task), { cacheDir: join(tmp.path, "cache") });
      const hidden = await hiddenTestsOf(task, 120_000);
      const s = await scoreInFork({
        dir: tmp.path,
        name: `h${what.length}`,
        task,
        snapshot,
        hidden,
        diff: fileDiff("greet.py", 'def greet(name):\n    return "Hello, !"\n', content),
      });
      console.log(`harbor attack ${what}: reward ${s.reward} ${JSON.stringify(s.gate ?? s.terms)}`);
      expect(s.reward).toBe(0);
    },
    600_000,
  );
});
