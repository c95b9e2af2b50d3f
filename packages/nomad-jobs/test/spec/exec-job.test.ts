import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { buildExecJob, EXEC_PRELUDE, type ExecJobInput } from "../../src/spec/exec-job.js";
import { nomadVar } from "../../src/spec/worker-env.js";
import { expectGolden } from "../helpers/golden.js";

const base: ExecJobInput = {
  jobId: "flakegym-run1-t1-exec-1-abc123",
  runId: "run1",
  taskId: "demo",
  trajectoryId: "t1",
  profile: "python",
  driver: { driver: "docker", image: `oci.example/x@sha256:${"0".repeat(64)}` },
  command: `echo "${nomadVar("HOME")}" && python3 -m pytest -q tests/test_x.py`,
  cwd: "",
  expiresAtMs: 1_800_000_000_000,
  maxRunMs: 600_000,
};

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe("buildExecJob", () => {
  it("is a plain one-shot batch job running the prelude with the command base64-encoded", () => {
    const job = buildExecJob(base);
    expectGolden("exec-docker", { Job: job });
    expect(job.ParameterizedJob).toBeUndefined();
    const cfg = job.TaskGroups[0]!.Tasks[0]!.Config as {
      entrypoint: string[];
      args: string[];
      ports?: unknown;
    };
    expect(cfg.entrypoint).toEqual(["/bin/sh"]);
    expect(cfg.ports).toBeUndefined();
    // Nomad interpolates its variables in args: the command must not appear in clear.
    expect(cfg.args.join(" ")).not.toContain(nomadVar("HOME"));
    expect(Buffer.from(cfg.args[3]!, "base64").toString()).toBe(base.command);
  });

  it("the prelude copies the snapshot into the workspace, enters cwd, and keeps the exit code (real sh)", () => {
    const root = mkdtempSync(join(tmpdir(), "flakegym-exec-"));
    dirs.push(root);
    const snap = join(root, "snapshot");
    mkdirSync(join(snap, "sub"), { recursive: true });
    writeFileSync(join(snap, "sub", "f.txt"), "from snapshot\n");
    const alloc = join(root, "alloc");
    mkdirSync(alloc);
    const args = buildExecJob({
      ...base,
      driver: { driver: "raw_exec", command: "/bin/sh", allowUnisolated: true },
      command: 'cat f.txt; pwd; test -z "$OPENAI_API_KEY" || echo LEAK; exit 7',
      cwd: "sub",
      snapshotDir: snap,
    }).TaskGroups[0]!.Tasks[0]!.Config.args as string[];
    // Nomad interpolates ${...} in args and starts raw_exec tasks with the client's environment.
    const nomad: Record<string, string> = { NOMAD_ALLOC_DIR: alloc, NOMAD_TASK_DIR: join(root, "local") };
    const interpolated = args.map((a) =>
      a.replace(/\$\{([A-Za-z0-9_]+)\}/g, (w, n: string) => nomad[n] ?? w),
    );
    let out = "";
    let code = 0;
    try {
      execFileSync("/bin/sh", interpolated, {
        env: { ...nomad, PATH: process.env.PATH, OPENAI_API_KEY: "sk-canary" },
        encoding: "utf8",
      });
    } catch (e) {
      const err = e as { status: number; stdout: string };
      code = err.status;
      out = err.stdout;
    }
    expect(code).toBe(7);
    expect(out).toBe(`from snapshot\n${join(alloc, "workspace", "sub")}\n`);
    expect(EXEC_PRELUDE).toContain("base64 -d");
  });

  it("rejects secrets in exec env", () => {
    expect(() => buildExecJob({ ...base, env: { GITHUB_TOKEN: "ghp_x" } })).toThrow("looks like a secret");
  });
});
