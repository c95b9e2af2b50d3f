import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ApiEvent } from "../../src/api/events.js";
import { evaluation, loadSession, rollout, setup, teardown } from "../../src/api/index.js";
import { GENERIC_STAGE_FILES } from "../../src/contract/generic.js";
import { skipWithoutSandbox } from "../helpers/sandbox.js";

const skip = skipWithoutSandbox("api (setup → rollout → evaluation → teardown in real sandboxes)");

const CONTRACT = `version: 1
profile: node
stages:
  deploy: .flakegym/stages/deploy.sh
  rollout: .flakegym/stages/rollout.sh
  evaluation: .flakegym/stages/evaluation.sh
limits:
  max_cmd_seconds: 60
env:
  GREETING: hello
`;
const DEPLOY = `echo "{\\"ok\\": true, \\"detail\\": \\"$GREETING from $(id -u)\\"}" > "$FLAKEGYM_OUT/runtime_env.json"\n`;
const EVALUATION = `node --test test/ 2>&1
echo '{"ok": true, "used_anchors": ["package.json#scripts.test"], "commands": ["node --test test/"], "reason": "the suite"}' > "$FLAKEGYM_OUT/hints_used.json"
echo '{"ok": true, "score": null}' > "$FLAKEGYM_OUT/metrics.json"
`;
const TESTS = `import { test } from "node:test";
import assert from "node:assert";
test("one", () => assert.equal(1, 1));
test("two", () => assert.equal(2, 2));
test("three", () => assert.equal(3, 4));
`;

describe.skipIf(skip)("the environment API over real sandboxes", () => {
  let root: string;
  let sessionsDir: string;
  let plan: string;

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), "fg-api-"));
    sessionsDir = join(root, "sessions");
    plan = join(root, "plan.json");
    await writeFile(
      plan,
      JSON.stringify({ version: 1, turns: [{ text: "The answer is 4." }, { text: "Paris, of course." }] }),
    );
  });
  afterAll(async () => rm(root, { recursive: true, force: true }));

  it("a repository with a contract: deploy, a scripted rollout through the gateway, a scored evaluation, teardown", async () => {
    const repo = join(root, "with-contract");
    await mkdir(join(repo, ".flakegym/stages"), { recursive: true });
    await mkdir(join(repo, "test"));
    await writeFile(join(repo, "flakegym.yml"), CONTRACT);
    await writeFile(join(repo, ".flakegym/stages/deploy.sh"), DEPLOY);
    await writeFile(
      join(repo, ".flakegym/stages/rollout.sh"),
      GENERIC_STAGE_FILES[".flakegym/stages/rollout.sh"],
    );
    await writeFile(
      join(repo, ".flakegym/stages/rollout.mjs"),
      GENERIC_STAGE_FILES[".flakegym/stages/rollout.mjs"],
    );
    await writeFile(join(repo, ".flakegym/stages/evaluation.sh"), EVALUATION);
    await writeFile(join(repo, "test/a.test.mjs"), TESTS);
    await writeFile(join(repo, "README.md"), "# demo\n\n```sh\nnode --test test/\n```\n");
    const events: ApiEvent[] = [];
    const session = await setup(repo, { sessionsDir, onEvent: (e) => events.push(e) });
    expect(session.contractSource).toBe("repo");
    expect(session.contract.env).toEqual({ GREETING: "hello" });
    expect(session.hints.map((h) => h.command)).toEqual(["node --test test/"]);
    expect(events.map((e) => (e.kind === "phase" ? e.phase : `${e.kind}:${e.stage}`))).toEqual([
      "resolve",
      "materialize",
      "hints",
      "contract",
      "stage-start:deploy",
      "stage-end:deploy",
    ]);
    // resumable by id from another call
    expect((await loadSession(session.id, sessionsDir)).calls).toBe(1);

    const r = await rollout(`scripted:${plan}`, { session: session.id, sessionsDir });
    expect(r.outcome).toEqual({ kind: "completed", detail: "the stage script exited with 0" });
    expect(r.samples).toHaveLength(1);
    expect(r.samples[0]?.prompt).toContain("# demo");
    expect(r.samples[0]?.completion).toBe("The answer is 4.");
    const turns = (await readFile(r.paths.turns!, "utf8")).trim().split("\n");
    expect(turns).toHaveLength(1); // the call went through the gateway and was logged

    const e = await evaluation({ session: session.id, sessionsDir });
    expect(e.outcome).toEqual({ kind: "completed", detail: "the stage script exited with 0" });
    expect(e.summary).toMatchObject({ tool: "node-test", passed: 2, failed: 1 });
    expect(e.score).toBeCloseTo(2 / 3);
    expect(e.scoreSource).toBe("test-summary");
    expect(e.hintsUsed.commands).toEqual(["node --test test/"]);

    expect(await teardown({ session: session.id, sessionsDir })).toEqual({ removed: true });
    expect(await teardown({ session: session.id, sessionsDir })).toEqual({ removed: false });
  }, 240_000);

  it("an outside Python repository (generic contract): unittest output is the score; a command that is not found is no score", async () => {
    const make = async (name: string, command: string) => {
      const repo = join(root, name);
      await mkdir(join(repo, "tests"), { recursive: true });
      await writeFile(join(repo, "calc.py"), "def add(a, b):\n    return a + b\n");
      await writeFile(
        join(repo, "tests/test_calc.py"),
        "import unittest\nfrom calc import add\n\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(1, 2), 3)\n\n    def test_wrong(self):\n        self.assertEqual(add(1, 1), 3)\n",
      );
      await writeFile(join(repo, "README.md"), `# calc\n\nRun the tests:\n\n\`\`\`sh\n${command}\n\`\`\`\n`);
      return await setup(repo, { sessionsDir, noScaffold: true });
    };
    const good = await make("py-unittest", "python3 -m unittest discover -s tests");
    // no pyproject, setup.py or flakegym.yml: the profile comes from its sources, not dev-base
    expect(good.contract.profile).toBe("python");
    const e = await evaluation({ session: good, sessionsDir });
    expect(e.summary).toMatchObject({ tool: "unittest", passed: 1, failed: 1 });
    expect(e).toMatchObject({ ok: true, score: 0.5, scoreSource: "test-summary" });
    await teardown({ session: good, sessionsDir });

    // the sandbox has python3 only: "python: not found" (exit 127), as on the outside repository
    const missing = await make("py-missing", "python -m unittest");
    const m = await evaluation({ session: missing, sessionsDir });
    expect(m).toMatchObject({ ok: false, score: null, scoreSource: "none" });
    expect(m.reason).toMatch(/^the test command did not run \(python -m unittest\)/);
    await teardown({ session: missing, sessionsDir });
  }, 240_000);

  it("a dataset file: generic contract, prompts anchored in the rows, score falls back to the mean reward", async () => {
    const file = join(root, "rows.jsonl");
    await writeFile(
      file,
      `${JSON.stringify({ prompt: "What is 2+2?", answer: "4" })}\n${JSON.stringify({ question: "Capital of France?", answer: "Lyon" })}\n`,
    );
    const session = await setup(file, { sessionsDir });
    expect(session.contractSource).toBe("generic");
    const r = await rollout(`scripted:${plan}`, {
      session,
      sessionsDir,
      checks: { minSamples: 2, anchorTexts: ["What is 2+2?", "Capital of France?"] },
    });
    expect(r.ok).toBe(true);
    expect(r.samples.map((s) => s.reward)).toEqual([1, 0]);
    const strict = await rollout(`scripted:${plan}`, {
      session,
      sessionsDir,
      maxSamples: 1,
      checks: { minSamples: 2 },
    });
    expect(strict.ok).toBe(false);
    expect(strict.problems).toEqual(["minSamples: 1 samples, at least 2 required"]);
    const e = await evaluation({ session, sessionsDir });
    expect(e.hintsUsed).toMatchObject({ ok: false, commands: [] });
    expect(e.scoreSource).toBe("mean-reward");
    expect(e.score).toBe(1); // the last rollout's one sample had reward 1
    await teardown({ session, sessionsDir });
  }, 240_000);
});
