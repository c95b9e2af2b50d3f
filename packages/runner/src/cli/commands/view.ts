import { resolve } from "node:path";
import { z } from "zod";
import { writeExport } from "../../view/export-html.js";
import { startViewServer } from "../../view/server.js";
import { checkViewDir } from "../../view/view-dir.js";
import { defineCommand } from "../command.js";

export const viewCommand = defineCommand({
  path: ["view"],
  summary: "look at runs and evals in a local web app (or export a run as one HTML file)",
  details:
    "Serves, on 127.0.0.1 only, a web app over <dir>: a run dir (run.json), an eval dir (report.json),\n" +
    "or a dir holding runs/* and evals/* (default: the current dir). The URL it prints carries a random\n" +
    "token; requests without it, or naming another host, are refused. Runs, groups, trajectories\n" +
    "(conversation, diff, hidden tests, reward, token view) and comparisons; a run in progress updates\n" +
    "live. Nothing in the dir is followed through a symlink or interpreted. --export writes one\n" +
    "self-contained HTML file (data inlined, no network) instead of serving. See docs/reference/view.md.",
  positional: "dir",
  options: z.object({
    dir: z.string().min(1).default(".").describe("run dir, eval dir, or a dir with runs/ and evals/"),
    port: z.number().int().min(0).max(65535).default(0).describe("port on 127.0.0.1 (0: a random free one)"),
    export: z
      .string()
      .min(1)
      .optional()
      .describe("write one self-contained HTML file here instead of serving"),
    tokenizer: z
      .string()
      .min(1)
      .optional()
      .describe("Hugging Face tokenizer dir: the token view shows decoded text (default: token ids)"),
  }),
  examples: [
    "flakegym view",
    "flakegym view runs/20261121T093000Z-1a2b3c",
    "flakegym view runs/<id> --export run.html",
  ],
  async run(opts, ctx) {
    const dir = resolve(ctx.cwd, opts.dir);
    await checkViewDir(dir, opts.dir);
    // loaded only when asked for: the tokenizer libraries are most of a cold start otherwise
    const tokenizer = opts.tokenizer
      ? await (await import("../../export/tokenizer.js")).loadChatTokenizer(
          resolve(ctx.cwd, opts.tokenizer),
          {
            signal: ctx.signal,
          },
        )
      : undefined;
    if (opts.export) {
      const out = resolve(ctx.cwd, opts.export);
      // streamed (bounded memory); a signal (Ctrl-C, SIGTERM) stops it between answers, leaving no file
      const r = await writeExport(dir, out, { ...(tokenizer ? { tokenizer } : {}), signal: ctx.signal });
      ctx.stdout.write(`wrote ${out} (${(r.bytes / 1024).toFixed(0)} KiB, ${r.entries} views inlined)\n`);
      return 0;
    }
    const server = await startViewServer({
      dir,
      port: opts.port,
      signal: ctx.signal,
      ...(tokenizer ? { tokenizer } : {}),
    });
    ctx.stdout.write(`flakegym view: serving ${dir}\n  ${server.url}\n(Ctrl-C to stop)\n`);
    try {
      await new Promise<void>((done) => {
        if (ctx.signal.aborted) return done();
        ctx.signal.addEventListener("abort", () => done(), { once: true });
      });
    } finally {
      await server.close();
    }
    return 0;
  },
});
