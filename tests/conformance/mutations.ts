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

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

interface Edit {
  readonly file: string;
  readonly from: string;
  readonly to: string;
}

export interface Mutation {
  readonly item: number;
  readonly fault: string;
  readonly checks: readonly string[];
  readonly edits: readonly Edit[];
}

const CREDIT = "packages/runner/src/export/formats/credit.ts";
const CLIENT = "adapters/python/flakegym_client.py";
const SKYRL_TS = "packages/runner/src/export/formats/skyrl-batch.ts";
const SKYRL_PY = "adapters/python/flakegym_skyrl.py";

export const MUTATIONS: readonly Mutation[] = [
  {
    item: 1,
    fault: "`final` drops the earlier segments' sampled tokens silently",
    checks: ["verl", "nemo-gym"],
    edits: [
      { file: CREDIT, from: "if (dropped.length > 0) {", to: "if (false) {" },
      { file: CLIENT, from: "        if dropped:\n", to: "        if False:\n" },
    ],
  },
  {
    item: 2,
    fault: "`split` gives each segment reward/segments",
    checks: ["verl", "skyrl"],
    edits: [
      {
        file: CREDIT,
        from: "reward: record.reward as number,",
        to: "reward: (record.reward as number) / chosen.length,",
      },
      { file: CLIENT, from: '"reward": rec["reward"],', to: '"reward": rec["reward"] / len(chosen),' },
    ],
  },
  {
    item: 3,
    fault: "members without a sample vanish from the exports (no note, no SkyRL row)",
    checks: ["verl", "skyrl"],
    edits: [
      {
        file: CREDIT,
        from: 'notes.push(note(record, problem.reason, "left_out", 0, problem.detail));',
        to: "",
      },
      { file: CLIENT, from: 'notes.append(_note(rec, problem[0], "left_out", 0, problem[1]))', to: "pass" },
      { file: SKYRL_TS, from: "const keep = !stepWise ||", to: "const keep = false &&" },
      { file: SKYRL_PY, from: "keep = not step_wise or", to: "keep = False and" },
    ],
  },
  {
    item: 4,
    fault: "SkyRL's placeholder row has reward 0.0 (biases the group baseline)",
    checks: ["skyrl"],
    edits: [
      { file: SKYRL_TS, from: "reward: stepWise ? 0 : mean", to: "reward: 0" },
      { file: SKYRL_PY, from: '"reward": 0.0 if step_wise else mean,', to: '"reward": 0.0,' },
    ],
  },
  {
    item: 5,
    fault: "no length policy: rows longer than verl's lengths reach its post-processing",
    checks: ["verl"],
    edits: [{ file: CLIENT, from: "if max_prompt_tokens or max_response_tokens:", to: "if False:" }],
  },
  {
    item: 6,
    fault: "a turn-1 policy_error becomes a 0-token sequence in groups.jsonl",
    checks: ["atropos"],
    edits: [
      {
        file: "packages/runner/src/emit/group.ts",
        from: "else if (withTokens && !sampledAny(m))",
        to: "else if (false && withTokens && !sampledAny(m))",
      },
    ],
  },
];

/** The patched text of every file a mutation edits; throws when a patch no longer applies. Pure over its input. */
export function patched(m: Mutation, read: (file: string) => string): Map<string, string> {
  const out = new Map<string, string>();
  for (const e of m.edits) {
    const text = out.get(e.file) ?? read(e.file);
    const n = text.split(e.from).length - 1;
    if (n !== 1)
      throw new Error(
        `mutation ${m.item}: ${JSON.stringify(e.from)} occurs ${n} times in ${e.file} (want 1): update tests/conformance/mutations.ts`,
      );
    out.set(e.file, text.replace(e.from, e.to));
  }
  return out;
}

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
      join(tmpdir(), "flakegym-conformance", "live-turns.json"),
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
