import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { collectArtifacts, workspaceDiff } from "../src/artifacts.js";
import { makeTempDir } from "./helpers.js";

const git = (cwd: string, ...args: string[]) =>
  execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@e", ...args], { cwd, encoding: "utf8" });

async function repo(path: string) {
  await mkdir(path, { recursive: true });
  git(path, "init", "-q", "-b", "main");
  await writeFile(join(path, "a.txt"), "one\ntwo\n");
  await writeFile(join(path, ".gitignore"), "ignored/\n");
  git(path, "add", "-A");
  git(path, "commit", "-qm", "base");
  return git(path, "rev-parse", "HEAD").trim();
}

describe("workspaceDiff", () => {
  it("covers edits, untracked text and binary files, skips ignored ones, leaves the index alone, and applies cleanly", async () => {
    await using tmp = await makeTempDir();
    const ws = join(tmp.path, "ws");
    const base = await repo(ws);
    await writeFile(join(ws, "a.txt"), "one\n2\n");
    await writeFile(join(ws, "new.txt"), "fresh\n");
    await writeFile(join(ws, "blob.bin"), Buffer.from([0, 1, 2, 255, 0, 7]));
    await mkdir(join(ws, "ignored"));
    await writeFile(join(ws, "ignored", "x.txt"), "no");
    const statusBefore = git(ws, "status", "--porcelain");
    const d = await workspaceDiff(ws);
    expect(d!.baseCommit).toBe(base);
    const patch = d!.patch.toString("utf8");
    expect(patch).toContain("+2");
    expect(patch).toContain("new.txt");
    expect(patch).toContain("GIT binary patch");
    expect(patch).not.toContain("ignored/x.txt");
    expect(git(ws, "status", "--porcelain")).toBe(statusBefore);
    expect((await readdir(join(ws, ".git"))).filter((f) => f.startsWith("flakegym-index"))).toEqual([]);
    // the patch reproduces the workspace on a fresh checkout of the base
    const clone = join(tmp.path, "clone");
    git(tmp.path, "clone", "-q", ws, clone);
    await writeFile(join(tmp.path, "p.patch"), d!.patch);
    git(clone, "apply", "--binary", join(tmp.path, "p.patch"));
    expect(await readFile(join(clone, "blob.bin"))).toEqual(Buffer.from([0, 1, 2, 255, 0, 7]));
    expect(await readFile(join(clone, "a.txt"), "utf8")).toBe("one\n2\n");
  });

  it("is null outside git and an error for a bad base", async () => {
    await using tmp = await makeTempDir();
    expect(await workspaceDiff(tmp.path)).toBeNull();
    const ws = join(tmp.path, "ws");
    await repo(ws);
    await expect(workspaceDiff(ws, { baseCommit: "deadbeef" })).rejects.toMatchObject({
      code: "E_CLINE_ARTIFACTS",
    });
  });
});

describe("collectArtifacts", () => {
  it("copies the task files, writes diff + extras + manifest, atomically", async () => {
    await using tmp = await makeTempDir();
    const ws = join(tmp.path, "ws");
    await repo(ws);
    await writeFile(join(ws, "a.txt"), "changed\n");
    const taskDir = join(tmp.path, "config", "data", "tasks", "123");
    await mkdir(taskDir, { recursive: true });
    await writeFile(join(taskDir, "api_conversation_history.json"), "[]");
    await writeFile(join(taskDir, "ui_messages.json"), "[1]");
    const dest = join(tmp.path, "out", "traj-0");
    const m = await collectArtifacts({
      configDir: join(tmp.path, "config"),
      taskId: "123",
      workspace: ws,
      dest,
      extra: {
        "outcome.json": { kind: "completed", detail: "d" },
        "timings.json": { totalMs: 5 },
        "note.txt": "raw",
      },
    });
    expect(m.missing).toEqual(["task_metadata.json"]);
    expect((await readdir(dest)).sort()).toEqual(
      [
        "api_conversation_history.json",
        "diff.patch",
        "manifest.json",
        "note.txt",
        "outcome.json",
        "timings.json",
        "ui_messages.json",
      ].sort(),
    );
    expect(JSON.parse(await readFile(join(dest, "outcome.json"), "utf8"))).toEqual({
      kind: "completed",
      detail: "d",
    });
    expect(await readFile(join(dest, "note.txt"), "utf8")).toBe("raw");
    expect(await readFile(join(dest, "diff.patch"), "utf8")).toContain("+changed");
    expect(JSON.parse(await readFile(join(dest, "manifest.json"), "utf8"))).toMatchObject({
      missing: ["task_metadata.json"],
    });
    expect((await readdir(join(tmp.path, "out"))).filter((f) => f.includes(".tmp-"))).toEqual([]);
    // an existing destination is refused unless overwrite is set
    await expect(
      collectArtifacts({ configDir: tmp.path, taskId: "", workspace: ws, dest }),
    ).rejects.toMatchObject({
      code: "E_CLINE_ARTIFACTS",
    });
    const again = await collectArtifacts({
      configDir: tmp.path,
      taskId: "",
      workspace: ws,
      dest,
      overwrite: true,
    });
    expect(again.missing).toHaveLength(3);
    expect(existsSync(join(dest, "outcome.json"))).toBe(false);
    expect((await readdir(join(tmp.path, "out"))).sort()).toEqual(["traj-0"]);
  });

  it("writes outcome.json and timings.json from a TaskRun, validating the outcome", async () => {
    await using tmp = await makeTempDir();
    const ws = join(tmp.path, "ws");
    await repo(ws);
    const run = {
      outcome: { kind: "timeout" as const, limit: "idle" as const, detail: "no progress" },
      taskId: "",
      timings: { configureMs: 1, turns: [], totalMs: 2 },
      counts: { modelRequests: 1, toolCalls: 0, apiFailures: 0 },
    };
    const dest = join(tmp.path, "out");
    await collectArtifacts({ configDir: tmp.path, taskId: "", workspace: ws, dest, run });
    expect(JSON.parse(await readFile(join(dest, "outcome.json"), "utf8"))).toEqual(run.outcome);
    expect(JSON.parse(await readFile(join(dest, "timings.json"), "utf8"))).toEqual({
      taskId: "",
      timings: run.timings,
      counts: run.counts,
    });
    await expect(
      collectArtifacts({
        configDir: tmp.path,
        taskId: "",
        workspace: ws,
        dest: join(tmp.path, "o2"),
        run,
        extra: { "outcome.json": 1 },
      }),
    ).rejects.toMatchObject({ code: "E_CLINE_ARGUMENT" });
  });

  it("leaves nothing behind when it fails, and refuses unsafe extra names", async () => {
    await using tmp = await makeTempDir();
    const ws = join(tmp.path, "ws");
    await repo(ws);
    const dest = join(tmp.path, "out");
    await expect(
      collectArtifacts({ configDir: tmp.path, taskId: "", workspace: ws, dest, baseCommit: "nope" }),
    ).rejects.toThrow(/not a commit/);
    expect(await readdir(tmp.path)).toEqual(["ws"]);
    await expect(
      collectArtifacts({ configDir: tmp.path, taskId: "", workspace: ws, dest, extra: { "../x": 1 } }),
    ).rejects.toMatchObject({ code: "E_CLINE_ARGUMENT" });
  });
});
