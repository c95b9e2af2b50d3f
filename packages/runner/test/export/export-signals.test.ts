import { mkdtemp, readdir, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDummyDeps } from "../../src/rollout/dummy-deps.js";
import { runRollout } from "../../src/rollout/run-rollout.js";
import { dummyRunConfig } from "../helpers/run-config.js";

/**
 * SIGINT / SIGTERM at every moment of a real `flakegym export` process (issue 46): what is at
 * `--out` afterwards is nothing or the whole export (never a part), nothing temporary is left
 * beside it, the run directory is untouched, and the export run again writes the same bytes. The
 * moments are spread over the export's own measured length (start, reading, writing, renaming).
 */

/** A real CLI process per moment (seconds each on a loaded machine): `npm run chaos` only. */
const FULL = process.env.FLAKEGYM_CHAOS === "full";
if (!FULL)
  console.log("skipped export-signals: it runs with `npm run chaos` only (a CLI process per moment)");

const BIN = fileURLToPath(new URL("../../bin/flakegym.js", import.meta.url));
let tmp: string;
let run: string;
beforeAll(async () => {
  if (!FULL) return;
  tmp = await mkdtemp(join(tmpdir(), "fg-export-signals-"));
  run = join(tmp, "run");
  await runRollout({
    out: run,
    resume: false,
    config: { ...dummyRunConfig(), groupSize: 4 },
    runId: "run-signals",
    deps: createDummyDeps({}),
    progress: () => {},
    signal: new AbortController().signal,
  });
}, 120_000);
afterAll(async () => {
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

const exportArgs = (format: string, out: string) => [BIN, "export", run, "--format", format, "--out", out];

/** Every file under `p` (a file: itself) with its bytes, by path relative to `p`'s parent. */
async function contents(p: string): Promise<Map<string, string> | undefined> {
  const s = await stat(p).catch(() => undefined);
  if (!s) return undefined;
  if (s.isFile()) return new Map([[p, await readFile(p, "utf8")]]);
  const m = new Map<string, string>();
  for (const name of (await readdir(p)).sort()) m.set(name, await readFile(join(p, name), "utf8"));
  return m;
}

/** The run directory's own files and their bytes (an export must not change one). */
async function runFiles(): Promise<Map<string, string>> {
  const m = new Map<string, string>();
  for (const name of ["groups.jsonl", "samples.jsonl", "metrics.jsonl", "summary.json", "run.json"])
    m.set(name, await readFile(join(run, name), "utf8").catch(() => "(absent)"));
  m.set("run.lock", await readFile(join(run, "run.lock"), "utf8").catch(() => "(absent)"));
  return m;
}

describe.skipIf(!FULL)("export under SIGINT/SIGTERM", () => {
  it.each([
    ["samples", "samples.jsonl"],
    ["atif", "atif"],
  ])(
    "--format %s: nothing or the whole export, no temporary left, the rerun writes the same",
    async (format, name) => {
      const outDir = join(tmp, `out-${format}`);
      const out = join(outDir, name);
      // the reference export, and how long one takes
      const t0 = performance.now();
      const ref = await execa(process.execPath, exportArgs(format, out), { reject: false });
      const tookMs = performance.now() - t0;
      expect(ref.exitCode, ref.stderr).toBe(0);
      const whole = await contents(out);
      expect(whole?.size).toBeGreaterThan(0);
      const before = await runFiles();
      await rm(out, { recursive: true, force: true });
      const seen: string[] = [];
      for (const [i, frac] of [0.05, 0.2, 0.4, 0.6, 0.75, 0.9, 1].entries()) {
        const sig = i % 2 === 0 ? "SIGINT" : "SIGTERM";
        const child = execa(process.execPath, exportArgs(format, out), { reject: false });
        await new Promise((r) => setTimeout(r, Math.round(frac * tookMs)));
        child.kill(sig);
        const r = await child;
        seen.push(`${sig}@${frac}: exit ${r.exitCode ?? r.signal}`);
        // 0: done before the signal was looked at; 130/143 or the signal: stopped
        expect([0, 130, 143, undefined]).toContain(r.exitCode);
        const now = await contents(out);
        if (now !== undefined) expect(now, `${sig} at ${frac}`).toEqual(whole);
        // nothing temporary beside the output
        expect((await readdir(outDir).catch(() => [] as string[])).filter((n) => n !== name)).toEqual([]);
        expect(await runFiles()).toEqual(before);
        await rm(out, { recursive: true, force: true });
      }
      console.log(`export-signals ${format} (one export: ${Math.round(tookMs)} ms): ${seen.join(", ")}`);
      const again = await execa(process.execPath, exportArgs(format, out), { reject: false });
      expect(again.exitCode, `${again.stderr}\n${seen.join("\n")}`).toBe(0);
      expect(await contents(out)).toEqual(whole);
    },
    120_000,
  );
});
