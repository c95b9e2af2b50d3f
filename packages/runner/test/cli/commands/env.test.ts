import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TOKENIZERS } from "../../export/fixtures.js";
import { runCliCaptured } from "../../helpers/cli.js";
import { skipWithoutSandbox } from "../../helpers/sandbox.js";

const skip = skipWithoutSandbox("flakegym env (stages in real sandboxes)");

const cli = (argv: string[], cwd: string) => runCliCaptured(argv, { cwd });

describe.skipIf(skip)("flakegym env setup|rollout|evaluation|teardown", () => {
  let root: string;
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), "fg-env-cli-"));
    await writeFile(join(root, "rows.jsonl"), `${JSON.stringify({ prompt: "Say yes", answer: "yes" })}\n`);
    await writeFile(join(root, "plan.json"), JSON.stringify({ version: 1, turns: [{ text: "yes" }] }));
  });
  afterAll(async () => rm(root, { recursive: true, force: true }));

  it("mirrors the API over a dataset target (relative paths resolved against the cwd)", async () => {
    const dir = ["--sessions-dir", join(root, "sessions")];
    const s = await cli(["env", "setup", "rows.jsonl", ...dir], root);
    expect(s.code).toBe(0);
    const { id, contract } = JSON.parse(s.stdout) as { id: string; contract: string };
    expect(contract).toBe("generic");
    expect(s.stderr).toContain("resolve: dataset target");
    const r = await cli(
      [
        "env",
        "rollout",
        "--session",
        id,
        "--llm",
        "scripted:plan.json",
        "--min-samples",
        "1",
        "--tokenizer",
        TOKENIZERS.llama3,
        ...dir,
      ],
      root,
    );
    const out = JSON.parse(r.stdout);
    expect(out).toMatchObject({ ok: true, samples: 1, tokenized: 1, outcome: { kind: "completed" } });
    // the sample carries the ids of the call that produced it (the template's: a scripted policy samples none)
    const [tokenized] = (await readFile(out.paths.samples_tokens, "utf8"))
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(tokenized).toMatchObject({
      prompt: "Say yes",
      completion: "yes",
      tokens: { source: "template", call: 1 },
    });
    expect(tokenized.tokens.completion_ids.length).toBeGreaterThan(0);
    expect(r.stderr).toMatch(/rollout: completed in \d+ ms/);
    const e = await cli(["env", "evaluation", "--session", id, ...dir], root);
    expect(JSON.parse(e.stdout)).toMatchObject({ ok: true, score: 1, scoreSource: "mean-reward" });
    expect(JSON.parse((await cli(["env", "teardown", "--session", id, ...dir], root)).stdout)).toEqual({
      removed: true,
    });
    const gone = await cli(["env", "evaluation", "--session", id, ...dir], root);
    expect(gone.code).not.toBe(0);
    expect(gone.stderr).toContain("E_SESSION_UNKNOWN");
  }, 120_000);
});
