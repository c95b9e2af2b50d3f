import { resolve } from "node:path";
import { z } from "zod";
import { formatSweepResult, sweepLeftovers } from "../../gc/sweep.js";
import { defineCommand } from "../command.js";

export const gcCommand = defineCommand({
  path: ["gc"],
  summary: "remove what dead flakegym runs left behind (mounts, cgroups, containers, directories)",
  details:
    "Finds everything flakegym made on this machine — rollout scratch dirs, forks and their overlay\n" +
    "mounts, worker dirs (with their gateway tokens), cgroups, podman containers — whose owner process\n" +
    "is gone (pid exited or reused, or another boot), and removes it: processes, then containers,\n" +
    "mounts, cgroups and directories. Resources of a run that is still going are never touched.\n" +
    "`rollout` does the same at its start. Built Harbor environments (`tasks import --build-env`,\n" +
    "the cache's harbor-rootfs/) are a cache: a dead build's scratch copy is always removed, a\n" +
    "finished tree only with --harbor-unused-days, and never while a live process uses it.",
  options: z.object({
    dryRun: z.boolean().default(false).describe("print what would be removed, remove nothing"),
    json: z.boolean().default(false).describe("print the report as JSON"),
    dir: z
      .array(z.string().min(1))
      .optional()
      .describe(
        "where to look for dead writers' temp files (`.<name>.<pid>.<rand>.tmp`; repeat; default runs/ and evals/)",
      ),
    harborUnusedDays: z
      .number()
      .nonnegative()
      .optional()
      .describe(
        "also remove built Harbor trees (and their podman images) no live process uses, last used at least this many days ago (0: every unused one)",
      ),
  }),
  examples: [
    "flakegym gc",
    "flakegym gc --dry-run",
    "flakegym gc --json",
    "flakegym gc --harbor-unused-days 7",
  ],
  async run(opts, ctx) {
    const report = await sweepLeftovers({
      dryRun: opts.dryRun,
      ...(opts.harborUnusedDays !== undefined ? { harborUnusedMs: opts.harborUnusedDays * 86_400_000 } : {}),
      ...(opts.dir ? { tempRoots: opts.dir.map((d) => resolve(ctx.cwd, d)) } : {}),
    });
    if (opts.json) {
      ctx.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    } else {
      for (const r of report.results) ctx.stdout.write(`${formatSweepResult(r, report.dryRun)}\n`);
      const failed = report.results.filter((r) => !r.ok).length;
      ctx.stdout.write(
        `${report.results.length === 0 ? "nothing left behind" : `${report.results.length} action(s)${failed ? `, ${failed} failed` : ""}`}; ${report.plan.live} resource(s) of live runs left alone\n`,
      );
    }
    return report.results.some((r) => !r.ok) ? 1 : 0;
  },
});
