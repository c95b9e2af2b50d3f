import { z } from "zod";
import { buildSnapshot } from "../../snapshots/build.js";
import { defaultSnapshotCacheDir } from "../../snapshots/key.js";
import { PythonFlags, pythonOptionsOfFlags } from "../../snapshots/python-options.js";
import { pythonOptionsOf } from "../../snapshots/python-providers.js";
import { snapshotSpecOfTask } from "../../snapshots/spec.js";
import { loadTask } from "../../tasks/catalog.js";
import { defineCommand } from "../command.js";

export const snapshotBuildCommand = defineCommand({
  path: ["snapshot", "build"],
  summary: "build (or find cached) the repo snapshot of a catalog task",
  details:
    "A snapshot is the task's repository at its commit with dependencies installed and the smoke tests passed, keyed by content and cached. Install and smoke commands run in the bubblewrap sandbox.",
  options: z.object({
    task: z.string().describe("catalog task id (see flakegym tasks list)"),
    cacheDir: z
      .string()
      .optional()
      .describe("snapshot cache (default: $FLAKEGYM_CACHE/snapshots or ~/.cache/flakegym/snapshots)"),
    catalog: z.string().optional().describe("catalog directory (default: the built-in catalog)"),
    json: z.boolean().default(false).describe("print the snapshot's manifest as JSON"),
    verbose: z.boolean().default(false).describe("stream the install/smoke output"),
    unsafeNoSandbox: z.boolean().default(false).describe("allow building without bubblewrap (no isolation)"),
    ...PythonFlags,
  }),
  examples: [
    "flakegym snapshot build --task tinygauge-vertical",
    "flakegym snapshot build --task tinyini-interpolation --json",
  ],
  async run(opts, ctx) {
    const task = await loadTask(opts.task, opts.catalog);
    const cacheDir = opts.cacheDir ?? defaultSnapshotCacheDir(ctx.env);
    const started = performance.now();
    const tty = Boolean(ctx.stderr.isTTY);
    const say = (s: string) => {
      if (!opts.json) ctx.stderr.write(`${s}\n`);
    };
    say(`snapshot of ${task.spec.id} (${task.spec.profile}) in ${cacheDir}`);
    const snap = await buildSnapshot(snapshotSpecOfTask(task), {
      cacheDir,
      signal: ctx.signal,
      ...(opts.unsafeNoSandbox ? { unsafeNoSandbox: true } : {}),
      python: pythonOptionsOf(pythonOptionsOfFlags(opts), ctx.env),
      onProgress: (ev) => {
        switch (ev.kind) {
          case "key":
            say(`  key ${ev.key}`);
            break;
          case "cached":
            say("  found in cache");
            break;
          case "wait":
            say(`  another process${ev.owner ? ` (pid ${ev.owner.pid})` : ""} is building it; waiting`);
            break;
          case "step":
            if (ev.status === "start") {
              if (tty && !opts.verbose) ctx.stderr.write(`  … ${ev.step}`);
              else say(`  start ${ev.step}`);
            } else {
              const line = `  ${ev.status === "ok" ? "ok  " : "FAIL"} ${ev.step} (${Math.round(ev.durationMs ?? 0)} ms)`;
              if (tty && !opts.verbose) ctx.stderr.write(`\r\x1b[K${line}\n`);
              else say(line);
            }
            break;
          case "output":
            if (opts.verbose && !opts.json) ctx.stderr.write(ev.text);
            break;
          case "python":
            say(`  ${ev.text}`);
            break;
        }
      },
    });
    const ms = Math.round(performance.now() - started);
    if (opts.json) {
      ctx.stdout.write(
        `${JSON.stringify({ dir: snap.dir, cached: snap.cached, elapsedMs: ms, manifest: snap.manifest }, null, 2)}\n`,
      );
    } else {
      ctx.stdout.write(
        `${snap.cached ? "cached" : "built"} ${snap.key} in ${ms} ms${snap.cached ? ` (originally built in ${snap.manifest.buildMs} ms)` : ""}\n${snap.dir}\n`,
      );
      const env = snap.manifest.envInstall;
      if (env) ctx.stdout.write(`install: ${env.source} (${env.reason}; network ${env.network})\n`);
    }
    return 0;
  },
});
