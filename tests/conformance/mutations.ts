/**
 * `npm run conformance:mutations`: shows that `npm run conformance` goes red when any of issue 44's
 * six faults is put back. For each fault it patches the fix out of the sources (the TypeScript
 * export and the Python adapters alike: the old behaviour, restored as it was), runs the checks
 * that judge it, expects them to FAIL, and restores the files (also on SIGINT/SIGTERM). The live
 * turn logs are sampled once (FLAKEGYM_CONFORMANCE_LIVE_TURNS) and reused by every run.
 *
 *   npm run conformance:mutations            # all six
 *   npm run conformance:mutations -- 2 4     # some
 *
 * Prints one line per fault: red (with the failing check's detail) or GREEN (the suite missed it);
 * exits non-zero if any fault went unseen or a patch no longer applies.
 */
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { MUTATIONS, patched } from "./mutation-list.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

function runSuite(
  checks: readonly string[],
  env: NodeJS.ProcessEnv,
): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(
      process.execPath,
      ["--import", "tsx", join(ROOT, "tests/conformance/run.ts"), ...checks],
      {
        env,
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    let out = "";
    child.stdout.on("data", (b: Buffer) => {
      out += b.toString();
    });
    child.stderr.on("data", (b: Buffer) => {
      out += b.toString();
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), 3_600_000);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
  });
}

async function main() {
  const only = process.argv.slice(2).map(Number);
  const chosen = MUTATIONS.filter((m) => only.length === 0 || only.includes(m.item));
  const env = {
    ...process.env,
    FLAKEGYM_CONFORMANCE_LIVE_TURNS:
      process.env["FLAKEGYM_CONFORMANCE_LIVE_TURNS"] ??
      join(tmpdir(), "flakegym-conformance", "live-group.json"),
  };
  const results: string[] = [];
  let missed = false;
  for (const m of chosen) {
    const read = (f: string) => readFileSync(join(ROOT, f), "utf8");
    const originals = new Map(m.edits.map((e) => [e.file, read(e.file)]));
    const restore = () => {
      for (const [f, t] of originals) writeFileSync(join(ROOT, f), t);
    };
    const onSignal = () => {
      restore();
      process.exit(130);
    };
    process.once("SIGINT", onSignal).once("SIGTERM", onSignal);
    const t0 = Date.now();
    try {
      for (const [f, t] of patched(m, read)) writeFileSync(join(ROOT, f), t);
      const r = await runSuite(m.checks, env);
      const failing = r.out.split("\n").filter((l) => /^\S+ \| .* \| fail/.test(l));
      const red = r.code !== 0 && failing.length > 0;
      missed ||= !red;
      results.push(
        `${m.item} | ${m.fault} | ${m.checks.join(" ")} | ${red ? "red" : "GREEN (missed)"} | ${Math.round((Date.now() - t0) / 1000)} s | ${failing.map((l) => l.slice(0, 300)).join(" ;; ") || `exit ${r.code}`}`,
      );
      console.log(results.at(-1));
    } finally {
      restore();
      process.off("SIGINT", onSignal).off("SIGTERM", onSignal);
    }
  }
  console.log("\nitem | fault put back | checks | result | time | failing checks");
  for (const r of results) console.log(r);
  process.exitCode = missed ? 1 : 0;
}

await main();
