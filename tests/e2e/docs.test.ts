import { readdirSync, readFileSync } from "node:fs";
import { mkdir, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { createDeadline } from "@flakegym/nomad-jobs";
import { makeTempDir, REPO_ROOT, type TempDir } from "@flakegym/test-utils";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { blockName, type DocBlock, extractBlocks, fillPlaceholders, shellCommands } from "./docs/extract.js";
import { type DocsFixture, FIXTURES, type FixtureContext, gitRepo } from "./docs/fixtures.js";
import { readRun, TASK } from "./rollout-helpers.js";

/**
 * Docs that run: every fenced shell, TypeScript and Python block of README.md and docs/*.md is run
 * as written (placeholders such as `<id>` filled from a fixture run), and must exit as its marker
 * says (0 unless `<!-- docs-test: exit n -->`). A block that cannot run here carries
 * `<!-- docs-test: skip <reason> -->`; the reasons are printed. See docs/extract.ts for the markers.
 */

const DOC_FILES = ["README.md", ...readdirSync(join(REPO_ROOT, "docs")).map((f) => `docs/${f}`)].filter((f) =>
  f.endsWith(".md"),
);
const BLOCKS: DocBlock[] = DOC_FILES.flatMap((f) => extractBlocks(f, readFileSync(join(REPO_ROOT, f), "utf8")));
const BIN = join(REPO_ROOT, "packages/runner/bin/flakegym.js");
/** One block's time limit: the slowest runnable block is a short rollout on 2 busy cores. */
const BLOCK_MS = 150_000;

/** `npx flakegym …` and `flakegym …` as a user of this checkout runs them (the workspace's bin). */
const SHELL_PRELUDE = `flakegym() { node "$DOCS_TEST_BIN" "$@"; }
npx() { if [ "$1" = flakegym ]; then shift; flakegym "$@"; else command npx "$@"; fi; }
`;

interface CommandResult {
  readonly line: number;
  readonly command: string;
  readonly exitCode: number;
}

/** Runs a shell block as one script (so `export`s carry) and reads each command's exit code. */
async function runShellBlock(block: DocBlock, cwd: string, values: Record<string, string>) {
  const commands = shellCommands(block).map((c) => ({
    ...c,
    text: fillPlaceholders(c.text, values, `${block.file}:${c.line}`),
  }));
  const status = join(cwd, `.docs-test-status-${block.file.replace(/\W/g, "_")}-${block.line}`);
  const script =
    SHELL_PRELUDE +
    commands.map((c, i) => `${c.text}\necho "${i} $?" >> "${status}"`).join("\n") +
    "\n";
  using deadline = createDeadline({ timeout: { ms: BLOCK_MS, limit: `${blockName(block)} (docs test block limit)` } });
  const r = await execa("sh", ["-c", script], {
    cwd,
    env: { DOCS_TEST_BIN: BIN },
    reject: false,
    stdin: "ignore",
    cancelSignal: deadline.signal,
    forceKillAfterDelay: 5_000,
  });
  const codes = new Map(
    (await readFile(status, "utf8").catch(() => ""))
      .split("\n")
      .filter(Boolean)
      .map((l) => l.split(" ").map(Number) as [number, number]),
  );
  const results: CommandResult[] = commands.map((c, i) => ({
    line: c.line,
    command: c.text,
    exitCode: codes.get(i) ?? -1,
  }));
  return { results, output: `${r.stdout}\n${r.stderr}`.slice(-4000), cancelled: r.isCanceled };
}

/** Runs a TypeScript example inside its fixture's prelude (a module under test-artifacts/, so imports resolve). */
async function runTsBlock(block: DocBlock, fixture: DocsFixture, ctx: FixtureContext) {
  const dir = join(REPO_ROOT, "test-artifacts", "docs-test");
  await mkdir(dir, { recursive: true });
  const file = join(dir, `${block.file.replace(/\W/g, "_")}-${block.line}.ts`);
  let code = block.code;
  for (const [from, to] of fixture.replace?.(ctx) ?? []) code = code.replaceAll(from, to);
  await writeFile(file, `${fixture.prelude}\n${code}\n${fixture.epilogue}\n`);
  using deadline = createDeadline({ timeout: { ms: BLOCK_MS, limit: `${blockName(block)} (docs test block limit)` } });
  try {
    const r = await execa(process.execPath, ["--import", "tsx", file], {
      cwd: ctx.cwd,
      env: ctx.env,
      reject: false,
      stdin: "ignore",
      cancelSignal: deadline.signal,
      forceKillAfterDelay: 5_000,
    });
    return { exitCode: r.exitCode ?? -1, stdout: r.stdout, stderr: r.stderr };
  } finally {
    await rm(file, { force: true });
  }
}

describe("docs that run (README.md, docs/*.md)", () => {
  let tmp: TempDir;
  let ctx: FixtureContext;
  const values: Record<string, string> = {};

  beforeAll(async () => {
    tmp = await makeTempDir("flakegym-docs-test-");
    // The fixture run: the README quick start's main job, as written, in a fresh directory.
    await gitRepo(join(tmp.path, "my-repo"));
    const run = await execa("sh", ["-c", `${SHELL_PRELUDE}npx flakegym rollout --task ${TASK}`], {
      cwd: tmp.path,
      env: { DOCS_TEST_BIN: BIN },
      reject: false,
      stdin: "ignore",
      timeout: BLOCK_MS,
    });
    expect(run.exitCode, run.stderr).toBe(0);
    const [id] = await readdir(join(tmp.path, "runs"));
    if (!id) throw new Error(`the fixture run wrote no run directory under runs/:\n${run.stderr}`);
    values.id = id;
    ctx = { cwd: tmp.path, env: {} };
  }, 300_000);
  afterAll(async () => {
    await tmp?.cleanup();
  });

  it("the fixture run holds what the README says a run directory holds, every reward 1 (gold)", async () => {
    const out = join(tmp.path, "runs", values.id!);
    const names = await readdir(out);
    for (const f of ["groups.jsonl", "samples.jsonl", "metrics.jsonl", "summary.json", "run.json", "trajectories"]) {
      expect(names, `runs/<id>/${f} (README: "A run directory holds …")`).toContain(f);
    }
    const run = await readRun(out);
    expect(run.samples.length).toBeGreaterThan(0);
    expect(run.samples.every((s) => s.reward === 1)).toBe(true);
    const [traj] = await readdir(join(out, "trajectories"));
    const files = await readdir(join(out, "trajectories", traj!));
    for (const f of ["diff.patch", "score.json", "turns.jsonl"]) expect(files).toContain(f);
  });

  it("every skipped block says why (printed here)", () => {
    const skipped = BLOCKS.filter((b) => b.marker.kind === "skip");
    for (const b of skipped) {
      if (b.marker.kind !== "skip") continue;
      console.info(`docs test: skipped ${blockName(b)} (${b.lang}): ${b.marker.reason}`);
      expect(b.marker.reason.length, blockName(b)).toBeGreaterThan(5);
    }
    const ran = BLOCKS.length - skipped.length;
    console.info(`docs test: ${BLOCKS.length} blocks, ${ran} run, ${skipped.length} skipped`);
  });

  for (const block of BLOCKS) {
    const { marker } = block;
    if (marker.kind === "skip") continue;
    if (block.lang === "sh") {
      if (marker.kind !== "run") throw new Error(`${blockName(block)}: a shell block takes no fixture marker`);
      it.concurrent(`${blockName(block)} runs as written (exit ${marker.exit})`, async () => {
        const r = await runShellBlock(block, ctx.cwd, values);
        expect(r.cancelled, `${blockName(block)} ran over ${BLOCK_MS} ms\n${r.output}`).toBe(false);
        for (const c of r.results) {
          expect(c.exitCode, `${block.file}:${c.line} \`${c.command}\` exit code\n${r.output}`).toBe(marker.exit);
        }
      });
    } else if (block.lang === "ts") {
      if (marker.kind !== "fixture") {
        throw new Error(
          `${blockName(block)}: a TypeScript example needs <!-- docs-test: fixture <name> --> (one of ${Object.keys(FIXTURES).join(", ")}) or a skip reason`,
        );
      }
      const fixture = FIXTURES[marker.name];
      if (!fixture) throw new Error(`${blockName(block)}: no docs-test fixture named ${marker.name}`);
      it(`${blockName(block)} runs in fixture ${marker.name}: ${fixture.description}`, async () => {
        const r = await runTsBlock(block, fixture, ctx);
        expect(r.exitCode, `${blockName(block)}\n${r.stdout}\n${r.stderr}`).toBe(0);
        await fixture.check(r.stdout, ctx);
      });
    } else {
      throw new Error(`${blockName(block)}: a ${block.lang} example runs nowhere yet: mark it with a skip reason`);
    }
  }
});
