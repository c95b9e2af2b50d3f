import { existsSync, readdirSync, readFileSync } from "node:fs";
import { copyFile, mkdir, readdir, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { createDeadline } from "@flakegym/nomad-jobs";
import { makeTempDir, REPO_ROOT, type TempDir } from "@flakegym/test-utils";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Command } from "../../packages/runner/src/cli/command.js";
import { commands } from "../../packages/runner/src/cli/commands/index.js";
import { renderCliReference } from "../../packages/runner/src/cli/help.js";
import {
  blockName,
  type DocBlock,
  docsPathsNamed,
  extractBlocks,
  fillPlaceholders,
  namedPaths,
  ownFolders,
  relativeLinks,
  shellCommands,
} from "./docs/extract.js";
import { type DocsFixture, FIXTURES, type FixtureContext, gitRepo } from "./docs/fixtures.js";
import { quickStart, readRun, TASK } from "./rollout-helpers.js";

/**
 * Docs that run: every fenced shell, TypeScript and Python block of README.md and docs/*.md is run
 * as written (placeholders such as `<id>` filled from a fixture run), and must exit as its marker
 * says (0 unless `<!-- docs-test: exit n -->`). A block that cannot run here carries
 * `<!-- docs-test: skip <reason> -->`; the reasons are printed. See docs/extract.ts for the markers.
 */

/** README.md and every Markdown file under docs/ (guides/, reference/, design/), in path order. */
const DOC_FILES = [
  "README.md",
  ...readdirSync(join(REPO_ROOT, "docs"), { recursive: true, encoding: "utf8" })
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/${f}`)
    .sort(),
];
/** A guide runs as one journey: its blocks in order, each needing the ones before it. */
const isGuide = (file: string) => file.startsWith("docs/guides/");
/** `npm run docs:heavy`: blocks marked heavy run too, with the Python it prepared first on PATH. */
const HEAVY = process.env["FLAKEGYM_DOCS_HEAVY"] === "1";
const HEAVY_PYTHON_BIN = process.env["FLAKEGYM_DOCS_PYTHON_BIN"];
const BLOCKS: DocBlock[] = DOC_FILES.flatMap((f) =>
  extractBlocks(f, readFileSync(join(REPO_ROOT, f), "utf8")),
);
const BIN = join(REPO_ROOT, "packages/runner/bin/flakegym.js");
const FIXTURES_DIR = join(REPO_ROOT, "tests/fixtures");
/** The README quick start's main job: run once as the fixture every `<id>` refers to. */
const FIXTURE_COMMAND = `npx flakegym rollout --task ${TASK}`;
/**
 * One block's time limit: the slowest runnable blocks are an eval of 3 trials and a validate, on 2
 * cores that the rest of `npm test` keeps busy (a bound against hangs, not a speed check).
 */
const BLOCK_MS = 360_000;
/** A heavy block's: one training step on CPU, on 2 busy cores. */
const HEAVY_BLOCK_MS = 45 * 60_000;
const blockMs = (b: DocBlock) => (b.marker.kind === "heavy" ? HEAVY_BLOCK_MS : BLOCK_MS);
/**
 * A block's PATH: a user's, without the node_modules/.bin dirs `npm test` adds (a bare `flakegym`
 * is not on a user's PATH); in the heavy run, the prepared Python first.
 */
const userPath = (): string =>
  [
    ...(HEAVY && HEAVY_PYTHON_BIN ? [HEAVY_PYTHON_BIN] : []),
    ...(process.env["PATH"] ?? "").split(":").filter((d) => d && !d.includes("node_modules")),
  ].join(":");
const blockEnv = (): Record<string, string> => ({ PATH: userPath() });

/**
 * `npx flakegym …` as a user of this checkout runs it (the workspace's bin). A bare `flakegym` is not
 * on a user's PATH after `npm ci`, so it is not here either: a block that writes one fails.
 */
const SHELL_PRELUDE = `npx() { if [ "$1" = flakegym ]; then shift; node "$DOCS_TEST_BIN" "$@"; else command npx "$@"; fi; }
`;

/** Runs a program under the block limit (a deadline, never an unbounded wait); the result, not a throw. */
async function runBounded(
  what: string,
  file: string,
  args: readonly string[],
  cwd: string,
  env: Record<string, string>,
  ms = BLOCK_MS,
) {
  using deadline = createDeadline({ timeout: { ms, limit: `${what} (docs test block limit)` } });
  const r = await execa(file, args, {
    cwd,
    env,
    reject: false,
    stdin: "ignore",
    cancelSignal: deadline.signal,
    forceKillAfterDelay: 5_000,
  });
  return { exitCode: r.exitCode ?? -1, stdout: r.stdout, stderr: r.stderr, cancelled: r.isCanceled };
}

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
  // the fixture run is this command, run once (and checked) before every block
  const runnable = (c: { text: string }) => (c.text === FIXTURE_COMMAND ? ": the fixture run" : c.text);
  const status = join(cwd, `.docs-test-status-${block.file.replace(/\W/g, "_")}-${block.line}`);
  const script =
    SHELL_PRELUDE + commands.map((c, i) => `${runnable(c)}\necho "${i} $?" >> "${status}"`).join("\n") + "\n";
  const r = await runBounded(
    blockName(block),
    "sh",
    ["-c", script],
    cwd,
    { DOCS_TEST_BIN: BIN, ...blockEnv() },
    blockMs(block),
  );
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
  return { results, output: `${r.stdout}\n${r.stderr}`.slice(-4000), cancelled: r.cancelled };
}

/** Runs a TypeScript example inside its fixture's prelude (a module under test-artifacts/, so imports resolve). */
async function runTsBlock(block: DocBlock, fixture: DocsFixture, ctx: FixtureContext) {
  const dir = join(REPO_ROOT, "test-artifacts", "docs-test");
  await mkdir(dir, { recursive: true });
  const file = join(dir, `${block.file.replace(/\W/g, "_")}-${block.line}.ts`);
  let code = block.code;
  for (const [from, to] of fixture.replace?.(ctx) ?? []) code = code.replaceAll(from, to);
  await writeFile(file, `${fixture.prelude}\n${code}\n${fixture.epilogue}\n`);
  try {
    return await runBounded(blockName(block), process.execPath, ["--import", "tsx", file], ctx.cwd, ctx.env);
  } finally {
    await rm(file, { force: true });
  }
}

/** Runs a Python example with the adapters and trainer examples importable, as docs/reference/trainers.md says. */
async function runPythonBlock(block: DocBlock, cwd: string) {
  const PYTHONPATH = ["adapters/python", "examples/trainers"].map((d) => join(REPO_ROOT, d)).join(":");
  const env = { PYTHONPATH, ...blockEnv() };
  return await runBounded(blockName(block), "python3", ["-c", block.code], cwd, env, blockMs(block));
}

describe("docs that run (README.md, docs/**/*.md)", () => {
  let tmp: TempDir;
  let ctx: FixtureContext;
  const values: Record<string, string> = {};

  beforeAll(async () => {
    tmp = await makeTempDir("flakegym-docs-test-");
    // The files the examples name, in a fresh directory: a plain repository, dataset rows in the
    // format rollout --dataset takes (JSONL and Parquet), a scripted plan.
    await gitRepo(join(tmp.path, "my-repo"));
    // commands are written for a checkout's root: its scripts/, tests/, examples/, adapters/, packages/ and node_modules/
    for (const d of ["node_modules", "scripts", "tests", "examples", "adapters", "packages"])
      await symlink(join(REPO_ROOT, d), join(tmp.path, d));
    await copyFile(join(FIXTURES_DIR, "swe-agent-13k-sample.jsonl"), join(tmp.path, "rows.jsonl"));
    // its last row has no repository: `tasks check` rejects it and exits 1, as docs/reference/tasks.md says
    await copyFile(join(FIXTURES_DIR, "swe-agent-13k-sample.parquet"), join(tmp.path, "train.parquet"));
    const answers = Array.from({ length: 12 }, (_, i) => ({ text: `Answer ${i + 1}: run npm test.` }));
    await writeFile(join(tmp.path, "plan.json"), JSON.stringify({ version: 1, turns: answers }));
    // The fixture run: the README quick start's main job, as written.
    expect(quickStart()[0]).toBe(`npm ci && ${FIXTURE_COMMAND}`);
    const run = await runBounded(
      "the fixture run",
      "sh",
      ["-c", `${SHELL_PRELUDE}${FIXTURE_COMMAND}`],
      tmp.path,
      {
        DOCS_TEST_BIN: BIN,
      },
    );
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
    for (const f of [
      "groups.jsonl",
      "samples.jsonl",
      "metrics.jsonl",
      "summary.json",
      "run.json",
      "trajectories",
    ]) {
      expect(names, `runs/<id>/${f} (README: "A run directory holds …")`).toContain(f);
    }
    const run = await readRun(out);
    expect(run.samples.length).toBeGreaterThan(0);
    expect(run.samples.every((s) => s.reward === 1)).toBe(true);
    const [traj] = await readdir(join(out, "trajectories"));
    const files = await readdir(join(out, "trajectories", traj!));
    for (const f of ["diff.patch", "score.json", "turns.jsonl"]) expect(files).toContain(f);
  });

  it("every path of this repository the docs name in backticks exists (src folders, packages, scripts, examples…)", async () => {
    const tracked = (await execa("git", ["ls-files"], { cwd: REPO_ROOT })).stdout.split("\n");
    const ours = ownFolders(tracked);
    const missing = DOC_FILES.flatMap((f) =>
      namedPaths(readFileSync(join(REPO_ROOT, f), "utf8"))
        .filter((p) => ours.has(p.split("/")[0]!))
        .filter((p) => !tracked.some((t) => t === p || t.endsWith(`/${p}`)))
        .map((p) => `${f}: \`${p}\``),
    );
    expect(missing, "paths named by the docs that no tracked file has").toEqual([]);
  });

  it("every relative link of the docs resolves, and every docs/… path the repository names exists", async () => {
    const broken = DOC_FILES.flatMap((f) =>
      relativeLinks(readFileSync(join(REPO_ROOT, f), "utf8"))
        .filter((target) => !existsSync(join(REPO_ROOT, dirname(f), target)))
        .map((target) => `${f}: (${target})`),
    );
    expect(broken, "Markdown links to files that are not there").toEqual([]);
    const tracked = (await execa("git", ["ls-files"], { cwd: REPO_ROOT })).stdout.split("\n");
    const named = tracked
      .filter(
        (t) => /\.(ts|mjs|js|py|sh|nix|md|json|txt)$|^scripts\//.test(t) && existsSync(join(REPO_ROOT, t)),
      )
      .filter((t) => !/(^|\/)test\/|\.test\.ts$/.test(t)) // tests name made-up workspaces' docs/ files
      .flatMap((t) => docsPathsNamed(readFileSync(join(REPO_ROOT, t), "utf8")).map((p) => ({ t, p })));
    const stale = named.filter(({ p }) => !existsSync(join(REPO_ROOT, p))).map(({ t, p }) => `${t}: ${p}`);
    expect(stale, "docs/… paths named in the repository that do not exist (moved or renamed?)").toEqual([]);
  });

  it("docs/reference/cli.md is every command's help as the commands render it now (npm run docs:cli)", () => {
    const page = readFileSync(join(REPO_ROOT, "docs/reference/cli.md"), "utf8");
    expect(page === renderCliReference(commands as readonly Command[]), "stale: run npm run docs:cli").toBe(
      true,
    );
  });

  it("the README sends a newcomer to every guide, before any reference", () => {
    const readme = readFileSync(join(REPO_ROOT, "README.md"), "utf8");
    const links = relativeLinks(readme);
    const guides = DOC_FILES.filter(isGuide);
    for (const g of guides) expect(links, `README.md links ${g}`).toContain(g);
    const firstReference = links.findIndex(
      (l) => l.startsWith("docs/reference/") || l.startsWith("docs/design/"),
    );
    const lastGuide = Math.max(...guides.map((g) => links.indexOf(g)));
    expect(
      firstReference === -1 || lastGuide < firstReference,
      "guides are linked before the reference",
    ).toBe(true);
  });

  it.concurrent("a newcomer's first mistakes are usage errors (exit 2) saying what to do next", async () => {
    const empty = join(tmp.path, "empty");
    await mkdir(empty);
    const cli = (...args: string[]) =>
      runBounded(`flakegym ${args.join(" ")}`, process.execPath, [BIN, ...args], empty, {});
    const cases = [
      { args: ["view"], says: /no runs or evals under \.: .*\n {2}hint: .*flakegym rollout --task/ },
      { args: ["view", "rnus"], says: /rnus: no such directory\n {2}hint: give a run dir/ },
      {
        args: ["rollout", "--dataset", "rows.jsnol"],
        says: /--dataset \S*rows\.jsnol: no such file or directory\n {2}hint: check the path/,
      },
    ];
    for (const c of cases) {
      const r = await cli(...c.args);
      expect(r.stderr, c.args.join(" ")).toMatch(c.says);
      expect(r.stderr, c.args.join(" ")).not.toMatch(/hint: pass --dataset/);
      expect(r.exitCode, c.args.join(" ")).toBe(2);
    }
    // bad input leaves nothing behind: no run directory, not even an empty runs/ (docs/reference/rollout.md)
    expect(await readdir(empty)).toEqual([]);
  });

  it("every skipped block says why (printed here)", () => {
    const notRun = BLOCKS.filter((b) => b.marker.kind === "skip" || (b.marker.kind === "heavy" && !HEAVY));
    for (const b of notRun) {
      if (b.marker.kind !== "skip" && b.marker.kind !== "heavy") continue;
      const why =
        b.marker.kind === "heavy" ? `heavy, run by npm run docs:heavy: ${b.marker.reason}` : b.marker.reason;
      console.info(`docs test: skipped ${blockName(b)} (${b.lang}): ${why}`);
      expect(b.marker.reason.length, blockName(b)).toBeGreaterThan(5);
    }
    const ran = BLOCKS.length - notRun.length;
    console.info(`docs test: ${BLOCKS.length} blocks, ${ran} run, ${notRun.length} skipped`);
  });

  /** Runs one block as written and checks it exited as its marker says; a skipped block does nothing. */
  async function checkBlock(block: DocBlock): Promise<void> {
    const { marker } = block;
    if (marker.kind === "skip" || (marker.kind === "heavy" && !HEAVY)) return;
    if (block.lang === "sh") {
      if (marker.kind === "fixture")
        throw new Error(`${blockName(block)}: a shell block takes no fixture marker`);
      const r = await runShellBlock(block, ctx.cwd, values);
      expect(r.cancelled, `${blockName(block)} ran over ${blockMs(block)} ms\n${r.output}`).toBe(false);
      const exits = marker.kind === "run" ? marker.exits : undefined;
      if (exits)
        expect(exits, `${blockName(block)}: one exit code per command`).toHaveLength(r.results.length);
      for (const [i, c] of r.results.entries()) {
        const want = exits?.[i] ?? (marker.kind === "run" ? marker.exit : 0);
        expect(c.exitCode, `${block.file}:${c.line} \`${c.command}\` exit code\n${r.output}`).toBe(want);
      }
    } else if (block.lang === "ts") {
      const fixture = marker.kind === "fixture" ? FIXTURES[marker.name] : undefined;
      if (!fixture) {
        throw new Error(
          `${blockName(block)}: a TypeScript example needs <!-- docs-test: fixture <name> --> (one of ${Object.keys(FIXTURES).join(", ")}) or a skip reason`,
        );
      }
      const r = await runTsBlock(block, fixture, ctx);
      expect(r.exitCode, `${blockName(block)}\n${r.stdout}\n${r.stderr}`).toBe(0);
      await fixture.check(r.stdout, ctx);
    } else {
      const r = await runPythonBlock(block, ctx.cwd);
      expect(r.exitCode, `${blockName(block)}\n${r.stdout}\n${r.stderr}`).toBe(0);
    }
  }

  // Each guide is one journey: its blocks in order (a later block reads what an earlier one wrote).
  for (const file of DOC_FILES.filter(isGuide)) {
    const blocks = BLOCKS.filter((b) => b.file === file);
    const runs = blocks.filter((b) => b.marker.kind !== "skip" && (b.marker.kind !== "heavy" || HEAVY));
    it.concurrent(
      `guide ${file} runs end to end (${runs.length} of ${blocks.length} blocks, in order)`,
      async () => {
        for (const block of runs) await checkBlock(block);
      },
      runs.reduce((ms, b) => ms + blockMs(b), 60_000),
    );
  }

  // Reference and design blocks stand alone; those over the fixture run (`runs/<id>`: resume takes
  // its lock) run one after the other, last.
  const overFixture = (b: DocBlock) => b.code.includes("<id>");
  const single = BLOCKS.filter((b) => !isGuide(b.file));
  for (const block of [...single.filter((b) => !overFixture(b)), ...single.filter(overFixture)]) {
    if (block.marker.kind === "skip" || (block.marker.kind === "heavy" && !HEAVY)) continue;
    const how = block.lang === "python" ? "python3, adapters on PYTHONPATH" : block.lang;
    (overFixture(block) ? it : it.concurrent)(`${blockName(block)} runs as written (${how})`, () =>
      checkBlock(block),
    );
  }
});
