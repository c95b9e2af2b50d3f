import { chmod, cp, mkdir, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { makeTempDir, REPO_ROOT, type TempDir } from "@flakegym/test-utils";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listCatalog, loadTask } from "../../packages/runner/src/tasks/catalog.js";
import {
  AGENT_TREE,
  exportHarborDir,
  HARBOR_TASK_SCHEMA,
} from "../../packages/runner/src/tasks/harbor-export.js";
import { findBwrap } from "../../packages/runner/src/workers/local/shape.js";
import { ensureVenv } from "../conformance/venv.js";

/**
 * Our Harbor exports judged by the real `harbor` package (PyPI, pinned in harbor-requirements.txt,
 * installed at test time into a virtualenv of its own by the conformance suite's installer; never
 * committed): its own task model (`Task`) loads every exported catalog task, `harbor lint` finds
 * nothing wrong with them, and our multi-step fixture loads as Harbor's multi-step layout (which
 * flakegym's import refuses by name). An exported verifier, run in a sandbox the way Harbor runs it
 * (/app, /tests, /logs), leaves a reward Harbor's own parser reads: 0 before the reference patch,
 * 1 after, and 0 when the run is cut short while the tests run.
 */

const VENV = process.env.FLAKEGYM_HARBOR_VENV ?? join(tmpdir(), "flakegym-harbor", "venv");

const LOAD = `
import json, sys, pathlib
from harbor.models.task.task import Task
out = {}
for d in sys.argv[1:]:
    try:
        t = Task(pathlib.Path(d))
        out[pathlib.Path(d).name] = {"ok": True, "schema": t.config.schema_version, "steps": [s.name for s in (t.config.steps or [])], "instruction": len(t.instruction or "")}
    except Exception as e:
        out[pathlib.Path(d).name] = {"ok": False, "error": f"{type(e).__name__}: {e}"}
print(json.dumps(out))
`;

/** Harbor's own reading of a reward.txt (Verifier._parse_reward_text). */
const REWARD = `
import json, sys, pathlib, types
from harbor.verifier.verifier import Verifier
fake = types.SimpleNamespace(trial_paths=types.SimpleNamespace(reward_text_path=pathlib.Path(sys.argv[1])))
print(json.dumps(Verifier._parse_reward_text(fake)))
`;

let venv: ReturnType<typeof ensureVenv> | undefined;
let skipReason: string | undefined;
let tmp: TempDir;

beforeAll(async () => {
  tmp = await makeTempDir("flakegym-harbor-package-");
  venv = ensureVenv({
    venv: VENV,
    requirements: join(REPO_ROOT, "tests/e2e-real/harbor-requirements.txt"),
    pythonEnv: "FLAKEGYM_HARBOR_PYTHON",
    log: (line) => console.info(`harbor-package: ${line}`),
  });
  const failed = Object.entries(venv.failed);
  skipReason =
    venv.reason ??
    (failed.length > 0
      ? `the harbor package did not install (${failed.map(([k, v]) => `${k}: ${v}`).join("; ")})`
      : undefined);
  if (skipReason) console.warn(`harbor-package: skipped — ${skipReason}`);
}, 1_900_000);
afterAll(async () => {
  await tmp?.cleanup();
});

const py = (args: string[]) =>
  execa(venv!.python!, args, { reject: false, timeout: 300_000, stdin: "ignore" });

describe("the harbor package reads our exports", () => {
  it("Task loads every exported catalog task (schema 1.4, one step) and harbor lint finds nothing", async (ctx) => {
    if (skipReason) ctx.skip(skipReason);
    const out = join(tmp.path, "export");
    const ids = (await listCatalog()).map((e) => e.id);
    const dirs: string[] = [];
    for (const id of ids) dirs.push(await exportHarborDir(await loadTask(id), out));
    const multi = join(REPO_ROOT, "tests/fixtures/harbor/multi-step");
    const r = await py(["-c", LOAD, ...dirs, multi]);
    expect(r.exitCode, r.stderr).toBe(0);
    const loaded = JSON.parse(r.stdout) as Record<string, { ok: boolean; schema?: string; steps?: string[] }>;
    for (const id of ids)
      expect(loaded[id], id).toMatchObject({ ok: true, schema: HARBOR_TASK_SCHEMA, steps: [] });
    expect(loaded["multi-step"]).toMatchObject({ ok: true, steps: ["write", "fix"] });
    const lint = await py(["-m", "harbor.cli.main", "lint", "--json", ...dirs]);
    const findings = lint.stdout.trim() ? (JSON.parse(lint.stdout) as unknown[]) : [];
    console.info(`harbor-package: harbor lint over ${dirs.length} exports: ${findings.length} findings`);
    expect(findings, lint.stderr).toEqual([]);
    expect(lint.exitCode, lint.stderr).toBe(0);
  });

  it("an exported verifier leaves a reward Harbor reads: 0 on the base, 1 with the reference (in place or as the separate verifier's artifact), 0 when cut short", async (ctx) => {
    if (skipReason) ctx.skip(skipReason);
    const bwrap = findBwrap();
    if (!bwrap)
      ctx.skip("bubblewrap (bwrap) is not on PATH: the verifier runs in a sandbox with Harbor's paths");
    const task = await loadTask("tinyini-interpolation");
    const dir = await exportHarborDir(task, join(tmp.path, "verifier"));
    const reward = async (name: string, o: { solve?: boolean; hang?: boolean; artifact?: boolean }) => {
      const app = join(tmp.path, name, "app");
      const logs = join(tmp.path, name, "logs");
      const bin = join(tmp.path, name, "bin");
      await cp(join(dir, "environment", "repo"), app, { recursive: true });
      await mkdir(logs, { recursive: true });
      await mkdir(bin, { recursive: true });
      // a test run that never ends: python3 hangs once test.sh reaches the tests
      if (o.hang) {
        await writeFile(join(bin, "python3"), "#!/bin/sh\nexec sleep 600\n");
        await chmod(join(bin, "python3"), 0o755);
      }
      const sandbox = (script: string, timeout: number) =>
        execa(
          bwrap!,
          [
            ...["--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc"],
            ...[
              "--symlink",
              "usr/bin",
              "/bin",
              "--symlink",
              "usr/lib",
              "/lib",
              "--symlink",
              "usr/lib64",
              "/lib64",
            ],
            ...["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--unshare-net", "--die-with-parent"],
            ...["--bind", app, "/app", "--bind", logs, "/logs", "--ro-bind", join(dir, "tests"), "/tests"],
            ...["--ro-bind", join(dir, "solution"), "/solution", "--ro-bind", bin, "/hang"],
            ...["--setenv", "PATH", `${o.hang ? "/hang:" : ""}/usr/bin:/bin`, "--setenv", "HOME", "/tmp"],
            "bash",
            script,
          ],
          { reject: false, timeout, stdin: "ignore" },
        );
      if (o.solve) {
        const s = await sandbox("/solution/solve.sh", 120_000);
        expect(s.exitCode, s.stderr).toBe(0);
      }
      if (o.artifact) {
        // what Harbor hands a separate verifier: the agent's /app (here: solved) under /logs/artifacts
        const agent = join(logs, "artifacts", AGENT_TREE.split("/").pop()!);
        await cp(join(dir, "environment", "repo"), agent, { recursive: true });
        const patch = join(tmp.path, name, "solution.patch");
        await writeFile(patch, await readFile(task.paths.solution, "utf8"));
        const applied = await execa("patch", ["-p1", "-s", "-d", agent, "-i", patch], {
          reject: false,
          timeout: 60_000,
        });
        expect(applied.exitCode, applied.stderr).toBe(0);
      }
      const t = await sandbox("/tests/test.sh", o.hang ? 15_000 : 300_000);
      if (o.hang) expect(t.timedOut, "the hung verifier was cut short").toBe(true);
      const parsed = await py(["-c", REWARD, join(logs, "verifier", "reward.txt")]);
      expect(
        parsed.exitCode,
        `${parsed.stderr}\n${await readFile(join(logs, "verifier", "reward.txt"), "utf8").catch(() => "(no reward.txt)")}`,
      ).toBe(0);
      return JSON.parse(parsed.stdout) as Record<string, number>;
    };
    expect(await reward("base", {})).toEqual({ reward: 0 });
    expect(await reward("gold", { solve: true })).toEqual({ reward: 1 });
    expect(await reward("cut-short", { solve: true, hang: true })).toEqual({ reward: 0 });
    // the separate verifier: a pristine /app, the agent's solved tree in Harbor's artifacts dir
    expect(await reward("separate", { artifact: true })).toEqual({ reward: 1 });
  });
});
