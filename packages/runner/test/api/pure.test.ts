import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { fallbackHint, pickScore } from "../../src/api/evaluation.js";
import { absoluteLlm, llmEnv, parseLlm } from "../../src/api/llm.js";
import { type StageEvidence, stageOutcomeEvidence } from "../../src/api/outcome.js";
import { type EnvSession, loadSession, saveSession } from "../../src/api/session.js";
import { classifyTarget } from "../../src/api/target.js";
import { guessProfile } from "../../src/api/workspace.js";
import { renderVerify } from "../../src/cli/commands/verify.js";
import { genericContract } from "../../src/contract/generic.js";
import { checkSamples } from "../../src/contract/validate-samples.js";
import { classifyOutcome } from "../../src/rollout/classify-outcome.js";

describe("classifyTarget", () => {
  const none = { pathKind: undefined, absolute: "/x", isTask: false } as const;
  it("each kind", () => {
    expect(classifyTarget("https://example.com/a/b.git", none)).toEqual({
      kind: "git",
      url: "https://example.com/a/b.git",
    });
    expect(classifyTarget("file:///srv/repo", none)).toEqual({ kind: "git", url: "file:///srv/repo" });
    expect(classifyTarget("git@host:a/b.git", none)).toMatchObject({ kind: "git" });
    expect(classifyTarget("owner/repo", none)).toEqual({
      kind: "git",
      url: "https://github.com/owner/repo.git",
    });
    expect(classifyTarget("./repo", { ...none, pathKind: "dir", absolute: "/w/repo" })).toEqual({
      kind: "local",
      path: "/w/repo",
    });
    expect(classifyTarget("rows.jsonl", { ...none, pathKind: "file", absolute: "/w/rows.jsonl" })).toEqual({
      kind: "dataset",
      file: "/w/rows.jsonl",
    });
    expect(classifyTarget("tinyini-interpolation", { ...none, isTask: true })).toEqual({
      kind: "task",
      id: "tinyini-interpolation",
    });
  });
  it("an existing directory wins over owner/repo; bad targets name what was wrong", () => {
    expect(
      classifyTarget("owner/repo", { ...none, pathKind: "dir", absolute: "/w/owner/repo" }),
    ).toMatchObject({ kind: "local" });
    expect(() => classifyTarget("notes.txt", { ...none, pathKind: "file" })).toThrow(
      /is a file but not a \.jsonl dataset/,
    );
    expect(() => classifyTarget("no such thing", none)).toThrow(/neither an existing path, a git URL/);
  });
});

describe("llm", () => {
  it("policy specs and model directories become FLAKEGYM_LLM_* without any provider key", () => {
    const { ref, policy } = parseLlm("openai:http://127.0.0.1:8000/v1#qwen", false, "/x");
    const env = llmEnv(ref, policy, {
      baseUrl: "http://gateway/t/r/v1",
      socket: "/run/gw.sock",
      token: "fg-tok",
    });
    expect(env).toEqual({
      FLAKEGYM_LLM_KIND: "openai",
      FLAKEGYM_LLM_MODEL: "qwen",
      FLAKEGYM_LLM_BASE_URL: "http://gateway/t/r/v1",
      FLAKEGYM_LLM_SOCKET: "/run/gw.sock",
      FLAKEGYM_LLM_TOKEN: "fg-tok",
    });
    const dir = parseLlm("./Qwen3-8B", true, "/models/Qwen3-8B");
    expect(llmEnv(dir.ref, dir.policy, undefined)).toEqual({
      FLAKEGYM_LLM_KIND: "local-model",
      FLAKEGYM_LLM_MODEL: "Qwen3-8B",
    });
    expect(() => parseLlm("gold", false, "/x")).toThrow(/reference patch/);
    expect(() => parseLlm("nonsense", false, "/x")).toThrow(/policy spec/);
  });
  it("relative plan files and model directories are resolved against the caller's cwd", () => {
    expect(absoluteLlm("scripted:plan.json", "/w")).toBe("scripted:/w/plan.json");
    expect(absoluteLlm("scripted:/p/plan.json", "/w")).toBe("scripted:/p/plan.json");
    expect(absoluteLlm("./models/q", "/w")).toBe("/w/models/q");
    expect(absoluteLlm("openai:http://h/v1#m", "/w")).toBe("openai:http://h/v1#m");
    expect(absoluteLlm("empty", "/w")).toBe("empty");
  });
});

describe("a stage's outcome: the rollout pipeline's classifier over the stage's witnesses", () => {
  const base: StageEvidence = { exitCode: 0, timedOut: false, totalExpired: false, maxCmdSeconds: 5 };
  const classifyStage = (e: StageEvidence) => classifyOutcome(stageOutcomeEvidence(e));
  it("exit 0 completes; a non-zero exit is the stage program's failure (agent_error)", () => {
    expect(classifyStage(base)).toEqual({ kind: "completed", detail: "the stage script exited with 0" });
    expect(classifyStage({ ...base, exitCode: 3 })).toEqual({
      kind: "agent_error",
      detail: "the stage script exited with 3",
    });
  });
  it("the contract's time limits are timeouts naming the clock; the sandbox's limits are limits_exceeded", () => {
    const cmd = classifyStage({ ...base, timedOut: true, exitCode: -1 });
    // exec names its own timeout the wall_clock limit: still the stage's max_cmd_seconds
    expect(classifyStage({ ...base, timedOut: true, limit: "wall_clock", exitCode: -1 })).toEqual(cmd);
    expect(cmd).toMatchObject({ kind: "timeout", limit: "wall_clock" });
    expect(cmd.detail).toMatch(/max_cmd_seconds \(5 s\)/);
    const total = classifyStage({ ...base, totalExpired: true, timedOut: true });
    expect(total).toMatchObject({ kind: "timeout", limit: "caller_deadline" });
    expect(total.detail).toMatch(/max_total_seconds/);
    expect(classifyStage({ ...base, limit: "memory", exitCode: 137 })).toMatchObject({
      kind: "limits_exceeded",
      limit: "memory",
    });
    expect(classifyStage({ ...base, limit: "wall_clock", exitCode: 137 })).toMatchObject({
      kind: "timeout",
      limit: "wall_clock",
    });
  });
  it("the machinery's failures are infra_error", () => {
    expect(classifyStage({ ...base, sandboxKilled: true, exitCode: 137 })).toMatchObject({
      kind: "infra_error",
    });
    expect(classifyStage({ ...base, exitCode: -1, infra: "bwrap: no such file" })).toEqual({
      kind: "infra_error",
      detail: "the sandbox failed: bwrap: no such file",
    });
    // the call's own deadline explains a sandbox torn down by it
    expect(classifyStage({ ...base, exitCode: -1, infra: "aborted", totalExpired: true })).toMatchObject({
      kind: "timeout",
      limit: "caller_deadline",
    });
  });
  it("the gateway: its budgets are limits, its watchdog (timeout) and a failing model server policy_error", () => {
    const gw = (kind: "limits_exceeded" | "timeout" | "policy_error" | "infra_error") => ({
      exitCode: 1,
      gateway: {
        terminal: {
          kind,
          message: `${kind} seen`,
          ...(kind === "limits_exceeded" ? { limit: "model_requests" as const } : {}),
        },
      },
    });
    expect(classifyStage({ ...base, ...gw("limits_exceeded") })).toMatchObject({
      kind: "limits_exceeded",
      limit: "model_requests",
    });
    // the one disagreement issue 29 names: a gateway timeout (the model server went silent) is the
    // policy's fault in rollout.md and api.md alike ("the gateway ended the route")
    expect(classifyStage({ ...base, ...gw("timeout") })).toEqual({
      kind: "policy_error",
      detail: "policy gateway: timeout seen",
    });
    expect(classifyStage({ ...base, ...gw("policy_error") })).toMatchObject({ kind: "policy_error" });
    expect(classifyStage({ ...base, ...gw("infra_error") })).toMatchObject({ kind: "infra_error" });
    // the model server failed on the last call and the stage then failed: the policy's fault
    expect(classifyStage({ ...base, exitCode: 1, gateway: { lastCallFailure: "HTTP 502" } })).toMatchObject({
      kind: "policy_error",
    });
    // a completion stands, as in a rollout
    expect(classifyStage({ ...base, gateway: { lastCallFailure: "HTTP 502" } })).toMatchObject({
      kind: "completed",
    });
  });
});

describe("scores and checks", () => {
  const summary = { tool: "pytest", passed: 3, failed: 1, errors: 0, skipped: 0 } as const;
  it("metrics, then the test summary, then the mean reward", () => {
    expect(pickScore({ ok: true, score: 0.2 }, summary, [])).toEqual({ score: 0.2, source: "metrics" });
    expect(pickScore({ ok: true, score: null }, summary, [])).toEqual({
      score: 0.75,
      source: "test-summary",
    });
    expect(pickScore(undefined, undefined, [{ reward: 1 }, { reward: 0 }])).toEqual({
      score: 0.5,
      source: "mean-reward",
    });
    expect(pickScore(undefined, undefined, [])).toEqual({ score: null, source: "none" });
  });
  it("the fallback hint is the first test command", () => {
    const h = (command: string, kind: "test" | "build" | "other") => ({
      command,
      kind,
      source: "makefile" as const,
      anchor: "M:1",
    });
    expect(fallbackHint([h("make", "build"), h("make test", "test")])?.command).toBe("make test");
    expect(fallbackHint([])).toBeUndefined();
  });
  it("sample checks name the check, the value and the limit", () => {
    const s = (prompt: string) => ({ prompt, completion: "", reward: 0 });
    expect(
      checkSamples([s("a"), s("a"), s("a"), s("b")], { minSamples: 5, minDistinctPrompts: 0.75 }),
    ).toEqual([
      "minSamples: 4 samples, at least 5 required",
      "minDistinctPrompts: 50% of prompts are distinct, at least 75% required",
    ]);
    expect(checkSamples([s("Q: What is 2+2?"), s("made up")], { anchorTexts: ["What is 2+2?"] })).toEqual([
      "anchorTexts: sample 2's prompt contains none of the dataset's 1 texts",
    ]);
    expect(checkSamples([s("x")], {})).toEqual([]);
  });
  it("guessProfile and the verify report", () => {
    expect(guessProfile(new Set(["Cargo.toml", "package.json"]))).toBe("rust");
    expect(guessProfile(new Set(["pyproject.toml"]))).toBe("python");
    expect(guessProfile(new Set(["README.md"]))).toBe("dev-base");
    // a Python repository without pyproject/setup.py: its test or requirements files, else its sources
    expect(guessProfile(new Set(["setup.cfg", "README.md"]))).toBe("python");
    expect(guessProfile(new Set(["requirements-dev.txt"]))).toBe("python");
    expect(guessProfile(new Set(["pytest.ini", "Makefile"]))).toBe("python");
    expect(
      guessProfile(
        new Set(["README.md", "src", "tests"]),
        new Map([
          ["py", 12],
          ["md", 3],
          ["sh", 1],
        ]),
      ),
    ).toBe("python");
    expect(
      guessProfile(
        new Set(["Makefile"]),
        new Map([
          ["c", 5],
          ["h", 4],
          ["py", 2],
        ]),
      ),
    ).toBe("c");
    expect(guessProfile(new Set(["README.md"]), new Map([["md", 9]]))).toBe("dev-base");
    expect(
      renderVerify([
        {
          target: "a",
          ok: true,
          contract: "repo",
          rollout: "completed",
          samples: 2,
          evaluation: "completed",
          score: 0.5,
        },
        { target: "b", ok: false, error: "error[E_NO_CONTRACT]: the target has no flakegym.yml" },
      ]),
    ).toBe(
      "ok    a: repo contract, rollout completed (2 samples), evaluation completed, score 0.5\nFAIL  b: error[E_NO_CONTRACT]: the target has no flakegym.yml\n1/2 targets passed\n",
    );
  });
});

describe("session store", () => {
  it("saves atomically, resumes by id, names a bad field", async () => {
    const dir = await mkdtemp(join(tmpdir(), "fg-sessions-"));
    try {
      const s: EnvSession = {
        version: 1,
        id: "s1",
        createdAt: new Date(0).toISOString(),
        target: { kind: "local", path: "/r" },
        contract: genericContract("node"),
        contractSource: "generic",
        hints: [],
        dir: join(dir, "s1"),
        workspace: join(dir, "s1", "workspace"),
        limits: {},
        calls: 0,
        state: "ready",
      };
      await saveSession(s);
      expect(await loadSession("s1", dir)).toEqual(s);
      await expect(loadSession("nope", dir)).rejects.toThrow(/no session 'nope'/);
      await writeFile(join(dir, "s1", "session.json"), JSON.stringify({ ...s, calls: -1 }));
      await expect(loadSession("s1", dir)).rejects.toThrow(/session\.json: calls:/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
