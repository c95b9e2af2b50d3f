import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { execa } from "execa";
import { expect } from "vitest";

/**
 * The fixtures a documented TypeScript example runs in (`<!-- docs-test: fixture <name> -->`): a
 * prelude that defines the free variables the example uses (its names prefixed `__` so they never
 * collide with the example's own), an epilogue printing what the surrounding text claims, and the
 * check of that output.
 */
export interface FixtureContext {
  /** The docs test's working directory (the fixture run, `my-repo/`). */
  readonly cwd: string;
  readonly env: Record<string, string>;
}

export interface DocsFixture {
  readonly description: string;
  readonly prelude: string;
  readonly epilogue: string;
  /** Literal replacements in the example, each printed by the test's name (e.g. a model server by a plan). */
  readonly replace?: (ctx: FixtureContext) => readonly (readonly [string, string])[];
  check(stdout: string, ctx: FixtureContext): Promise<void>;
}

const RESULT = "DOCS_TEST_RESULT ";

/** The last `DOCS_TEST_RESULT {json}` line an example's epilogue printed. */
function resultOf(stdout: string): Record<string, unknown> {
  const line = stdout
    .split("\n")
    .reverse()
    .find((l) => l.startsWith(RESULT));
  if (!line) throw new Error(`the example printed no ${RESULT.trim()} line:\n${stdout}`);
  return JSON.parse(line.slice(RESULT.length)) as Record<string, unknown>;
}

const GIT_ENV = {
  GIT_CONFIG_GLOBAL: "/dev/null",
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_AUTHOR_NAME: "docs",
  GIT_AUTHOR_EMAIL: "docs@example.com",
  GIT_COMMITTER_NAME: "docs",
  GIT_COMMITTER_EMAIL: "docs@example.com",
};

/**
 * A plain git repository without flakegym.yml, as a newcomer's `./my-repo`: a README, a package.json
 * whose `npm test` runs node's test runner over 4 tests (3 pass).
 */
export async function gitRepo(dir: string): Promise<void> {
  await mkdir(join(dir, "test"), { recursive: true });
  await writeFile(
    join(dir, "package.json"),
    JSON.stringify({ name: "my-repo", scripts: { test: "node --test test/" } }),
  );
  await writeFile(
    join(dir, "test/x.test.mjs"),
    'import { test } from "node:test";\nimport assert from "node:assert";\n' +
      'test("a", () => assert.ok(true));\ntest("b", () => assert.ok(true));\n' +
      'test("c", () => assert.ok(true));\ntest("d", () => assert.equal(1, 2));\n',
  );
  await writeFile(join(dir, "README.md"), "# my-repo\n\nA tiny library. Run its tests with `npm test`.\n");
  const git = (...args: string[]) => execa("git", args, { cwd: dir, env: GIT_ENV });
  await git("init", "-q", "-b", "main");
  await git("add", "-A");
  await git("commit", "-q", "-m", "my-repo");
}

/** docs/design/cline.md's example: a real Cline core over a git workspace, driven by a scripted OpenAI server. */
const cline: DocsFixture = {
  description: "a git workspace, a scripted OpenAI-compatible server as the gateway, the real Cline core",
  prelude: `
import { execFileSync as __git } from "node:child_process";
import { mkdtempSync as __mkdtemp, mkdirSync as __mkdir, writeFileSync as __write } from "node:fs";
import { tmpdir as __tmpdir } from "node:os";
import { join as __join } from "node:path";
import { startScriptedOpenAiServer as __policy, xmlTool as __xml } from "@flakegym/cline-vendor";
import { createDeadline as __deadline } from "@flakegym/nomad-jobs";
const __root = __mkdtemp(__join(__tmpdir(), "docs-cline-"));
const __snapshot = __join(__root, "snapshot");
__mkdir(__snapshot);
__write(__join(__snapshot, "README.md"), "hello\\n");
const __genv = { ...process.env, ${Object.entries(GIT_ENV)
    .map(([k, v]) => `${k}: ${JSON.stringify(v)}`)
    .join(", ")} };
for (const a of [["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "base"]]) __git("git", a, { cwd: __snapshot, env: __genv });
const workspace = __join(__root, "workspace");
__git("git", ["clone", "-q", __snapshot, workspace], { env: __genv });
const baseCommit = __git("git", ["rev-parse", "HEAD"], { cwd: __snapshot, env: __genv }).toString().trim();
const baseObjects = __join(__snapshot, ".git", "objects");
const configDir = __join(__root, "config");
const home = __join(__root, "home");
const trajectoryDir = __join(__root, "trajectory");
const __server = await __policy({ turns: [
  { text: "I'll write hello.txt.\\n" + __xml.writeToFile("hello.txt", "hello\\n") },
  { text: __xml.attemptCompletion("wrote hello.txt") },
] });
const gatewayUrl = __server.baseUrl;
const prompt = "Create hello.txt containing hello.";
const __limit = __deadline({ timeout: { ms: 120_000, limit: "docs/design/cline.md example" } });
const signal = __limit.signal;
`,
  epilogue: `
__limit[Symbol.dispose]();
await __server.close();
const { readdirSync: __ls, readFileSync: __read } = await import("node:fs");
console.log("${RESULT}" + JSON.stringify({ files: __ls(trajectoryDir), diff: __read(__join(trajectoryDir, "diff.patch"), "utf8") }));
`,
  async check(stdout) {
    const r = resultOf(stdout) as { files: string[]; diff: string };
    expect(r.files).toEqual(expect.arrayContaining(["diff.patch", "manifest.json", "outcome.json"]));
    expect(r.diff).toContain("hello.txt");
  },
};

/** docs/reference/api.md's example: `./my-repo` (a plain git repository), the policy a scripted plan. */
const api: DocsFixture = {
  description: "./my-repo is a plain git repository; the model server is replaced by a scripted plan",
  prelude: `
import { writeFileSync as __write } from "node:fs";
__write("docs-api-plan.json", JSON.stringify({ version: 1, turns: [{ text: "It is 42." }, { text: "Blue." }] }));
`,
  epilogue: `console.log("${RESULT}" + JSON.stringify({ contract: session.contractSource, samples: r.samples.length, score: e.score, scoreSource: e.scoreSource }));`,
  replace: () => [["openai:http://127.0.0.1:8000/v1#my-model", "scripted:docs-api-plan.json"]],
  async check(stdout) {
    // the generic contract's evaluation runs the README's hinted `npm test`: 3 of 4 tests pass
    expect(resultOf(stdout)).toMatchObject({ contract: "generic", score: 0.75, scoreSource: "test-summary" });
  },
};

export const FIXTURES: Readonly<Record<string, DocsFixture>> = { cline, api };
