import { mkdir } from "node:fs/promises";
import { resolve } from "node:path";
import { z } from "zod";
import { flakegymCacheRoot } from "../../cache-root.mjs";
import { UsageError } from "../../errors.js";
import { PythonFlags, pythonOptionsOfFlags } from "../../snapshots/python-options.js";
import { rowPythonsOf, withPythonRefusals } from "../../snapshots/row-python.js";
import { withDatasetPath } from "../../tasks/hf-dataset.js";
import { formatIntakeError, formatIntakeSummary, loadIntake } from "../../tasks/intake.js";
import { writeTaskFolder } from "../../tasks/task-dir.js";
import { printable } from "../../text/looks-binary.js";
import { defineCommand } from "../command.js";

export const tasksImportCommand = defineCommand({
  path: ["tasks", "import"],
  summary: "turn SWE-bench-style rows or Harbor task dirs into catalog tasks with hidden tests",
  details:
    "Reads a SWE-bench-family dataset file (JSONL or Parquet) or a directory of Harbor task\n" +
    "directories and writes one catalog task folder per accepted row or directory under --out\n" +
    "(task.json, the reference patch, the hidden tests). Rejected ones are listed with the reason and\n" +
    "the rest proceed; a python row whose wanted Python is not found here is refused as `tasks check`\n" +
    "refuses it (field python: the version, where it was looked for, how to provide one). Then: flakegym validate --catalog <out> --all, or rollout --catalog <out> --task <id>.\n" +
    "Exits 1 when nothing was imported.",
  options: z.object({
    dataset: z
      .string()
      .describe(
        "SWE-bench-style dataset file (.jsonl or .parquet), directory of Harbor task dirs or hf:<org>/<name>[@revision][:split] (a Hugging Face dataset from the hub's local cache, docs/reference/tasks.md)",
      ),
    out: z.string().describe("catalog directory to write the task folders into (created)"),
    limit: z.number().int().min(1).optional().describe("import only the first N accepted tasks"),
    replace: z.boolean().default(false).describe("replace task folders that exist already"),
    repoMirror: z
      .string()
      .optional()
      .describe("directory of local git mirrors: a row's `owner/repo` is read from DIR/owner/repo"),
    buildEnv: z
      .boolean()
      .default(false)
      .describe(
        "Harbor dirs: build each task's environment/Dockerfile into a root filesystem (FROM served by a Debian base made with mmdebstrap, RUN/COPY/ENV/WORKDIR/USER run on it with network at build time; root, cached under the flakegym cache) and run the oracle, agent and verifier on it (local backend)",
      ),
    ...PythonFlags,
  }),
  examples: [
    "flakegym tasks import --dataset swe-bench-lite.parquet --out ./tasks --limit 20",
    "flakegym tasks import --dataset ./harbor-tasks --out ./tasks",
    "flakegym tasks import --dataset ./harbor-tasks --out ./tasks --build-env",
    "flakegym tasks import --dataset verified.jsonl --repo-mirror ~/mirrors --out ./tasks --python 3.9=/opt/py39/bin/python3.9",
  ],
  async run(opts0, ctx) {
    const opts = await withDatasetPath(opts0, ctx);
    const path = resolve(ctx.cwd, opts.dataset);
    const d = await loadIntake(path, {
      signal: ctx.signal,
      ...(opts.repoMirror === undefined ? {} : { repoMirror: resolve(ctx.cwd, opts.repoMirror) }),
      ...(opts.buildEnv
        ? {
            buildEnv: {
              cacheRoot: flakegymCacheRoot(process.env),
              log: (l: string) => ctx.stderr.write(`${l}\n`),
            },
          }
        : {}),
    });
    if (d.summary.kind === "swe-agent") {
      throw new UsageError(
        `--dataset ${opts.dataset} is in the swe-agent-13k schema, whose rows carry no hidden tests`,
        "roll those rows out directly with flakegym rollout --dataset; tasks import takes SWE-bench-style rows (instance_id, test_patch, FAIL_TO_PASS) and Harbor task dirs",
      );
    }
    // a python row is importable only when the interpreter it wants is here (as tasks check says)
    const pythons = await rowPythonsOf(d.tasks, pythonOptionsOfFlags(opts), ctx.env);
    const { rejected, summary, refusedRows } = withPythonRefusals(d, pythons);
    for (const e of rejected) ctx.stdout.write(`${printable(formatIntakeError(d.summary.kind, e))}\n`);
    ctx.stdout.write(`${formatIntakeSummary(summary)}\n`);
    const out = resolve(ctx.cwd, opts.out);
    await mkdir(out, { recursive: true });
    const importable = d.tasks.filter((t) => !refusedRows.has(t.source.row));
    const picked = importable.slice(0, opts.limit ?? importable.length);
    for (const t of picked) {
      ctx.signal.throwIfAborted();
      await writeTaskFolder(out, t, { replace: opts.replace });
      ctx.stdout.write(`imported ${t.spec.id} (${t.spec.profile}, network ${t.spec.network})\n`);
      for (const n of t.notes ?? []) ctx.stdout.write(`${printable(`  note: ${n}`)}\n`);
    }
    ctx.stdout.write(`${picked.length} task(s) written to ${out}\n`);
    return picked.length > 0 ? 0 : 1;
  },
});
