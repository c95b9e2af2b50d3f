import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCliCaptured } from "../helpers/cli.js";

/** `flakegym eval` usage errors: exit 2 before anything runs, naming what was wrong. */

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "flakegym-eval-cmd-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function run(argv: string[]) {
  const r = await runCliCaptured(argv, { cwd: dir, env: { PATH: process.env.PATH } });
  return { code: r.code, out: r.stdout, err: r.stderr };
}

describe("flakegym eval: usage errors", () => {
  it("nothing to evaluate, an unknown scenario or suite, --dataset with scenarios", async () => {
    expect(await run(["eval"])).toMatchObject({ code: 2, err: expect.stringMatching(/nothing to evaluate/) });
    expect(await run(["eval", "--scenario", "nope"])).toMatchObject({
      code: 2,
      err: expect.stringMatching(
        /--scenario nope: neither a built-in scenario nor a directory[\s\S]*create-file/,
      ),
    });
    expect(await run(["eval", "--suite", "huge"])).toMatchObject({
      code: 2,
      err: expect.stringMatching(/--suite huge: no such suite[\s\S]*known suites: smoke/),
    });
    expect(await run(["eval", "--suite", "smoke", "--dataset", "x.jsonl"])).toMatchObject({
      code: 2,
      err: expect.stringMatching(/--dataset cannot be combined/),
    });
  });

  it("an invalid scenario.json names the file and field; gold needs a solution; a bad baseline is named", async () => {
    const s = join(dir, "mine");
    await mkdir(s, { recursive: true });
    await writeFile(
      join(s, "scenario.json"),
      JSON.stringify({ version: 1, summary: "s", prompt: "p", checks: [] }),
    );
    expect(await run(["eval", "--scenario", s])).toMatchObject({
      code: 2,
      err: expect.stringMatching(/mine\/scenario\.json: field 'checks': /),
    });
    await writeFile(
      join(s, "scenario.json"),
      JSON.stringify({ version: 1, summary: "s", prompt: "p", checks: [{ kind: "file_exists", path: "a" }] }),
    );
    expect(await run(["eval", "--scenario", s, "--policy", "gold"])).toMatchObject({
      code: 2,
      err: expect.stringMatching(/scenario\(s\) mine have none/),
    });
    await writeFile(join(dir, "base.json"), JSON.stringify({ version: 2 }));
    expect(
      await run(["eval", "--scenario", s, "--policy", "empty", "--baseline", "base.json"]),
    ).toMatchObject({
      code: 2,
      err: expect.stringMatching(/base\.json: field 'version'/),
    });
  });
});
