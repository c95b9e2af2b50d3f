import type { ProfileId } from "@flakegym/profiles";
import type { Contract } from "./contract.js";

/**
 * The generic contract flakegym writes for a target without one (`--no-scaffold`, dataset files,
 * catalog tasks): a rollout stage that asks the policy each prompt of `prompts.jsonl` through the
 * gateway, and an evaluation stage that runs the first hinted test command. Both are plain Node
 * scripts (node is in every sandbox) with sh entry points.
 */

export const GENERIC_STAGE_FILES = {
  ".flakegym/stages/rollout.sh": 'exec node "$(dirname "$0")/rollout.mjs"\n',
  ".flakegym/stages/evaluation.sh": 'exec node "$(dirname "$0")/evaluation.mjs"\n',
  ".flakegym/stages/rollout.mjs": `// flakegym generic rollout: one chat completion per prompt, through the policy gateway
import { request } from "node:http";
import { appendFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
const out = process.env.FLAKEGYM_OUT;
mkdirSync(out, { recursive: true });
const rows = readFileSync(process.env.FLAKEGYM_PROMPTS, "utf8").split("\\n").filter((l) => l.trim()).map((l) => JSON.parse(l));
const max = Number(process.env.FLAKEGYM_MAX_SAMPLES || "8");
const url = new URL(process.env.FLAKEGYM_LLM_BASE_URL + "/chat/completions");
function ask(prompt) {
  const body = JSON.stringify({ model: process.env.FLAKEGYM_LLM_MODEL, stream: false, messages: [{ role: "user", content: prompt }] });
  return new Promise((resolve, reject) => {
    const req = request({ socketPath: process.env.FLAKEGYM_LLM_SOCKET, path: url.pathname, method: "POST",
      headers: { "content-type": "application/json", authorization: "Bearer " + process.env.FLAKEGYM_LLM_TOKEN } }, (res) => {
      let text = "";
      res.on("data", (c) => (text += c));
      res.on("end", () => res.statusCode === 200 ? resolve(JSON.parse(text).choices[0].message.content ?? "") : reject(new Error("policy answered " + res.statusCode + ": " + text.slice(0, 500))));
    });
    req.on("error", reject);
    req.end(body);
  });
}
writeFileSync(out + "/samples.jsonl", "");
for (const row of rows.slice(0, max)) {
  const completion = await ask(row.prompt);
  const reward = typeof row.answer === "string" && row.answer.length > 0 && completion.includes(row.answer) ? 1 : 0;
  appendFileSync(out + "/samples.jsonl", JSON.stringify({ prompt: row.prompt, completion, reward }) + "\\n");
}
writeFileSync(out + "/rollout.json", JSON.stringify({ ok: true, paths: { samples_jsonl: "samples.jsonl" } }));
`,
  ".flakegym/stages/evaluation.mjs": `// flakegym generic evaluation: runs the first hinted test command, records which
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
const out = process.env.FLAKEGYM_OUT;
mkdirSync(out, { recursive: true });
const hints = JSON.parse(readFileSync(process.env.FLAKEGYM_HINTS, "utf8"));
const pick = hints.find((h) => h.kind === "test") ?? hints[0];
let ok = false;
let how = "";
if (pick) {
  const r = spawnSync("sh", ["-c", pick.command], { stdio: "inherit", timeout: Number(process.env.FLAKEGYM_MAX_CMD_SECONDS) * 900 });
  // the shell's 126/127: the command was not executable or not found, so it never ran
  ok = r.status !== null && r.status !== 126 && r.status !== 127 && !r.error;
  how = r.status === null ? " (killed: " + (r.signal || (r.error && r.error.message)) + ")" : " (exit " + r.status + (ok ? "" : ": it did not run") + ")";
}
writeFileSync(out + "/hints_used.json", JSON.stringify(pick
  ? { ok, used_anchors: [pick.anchor], commands: [pick.command], reason: "first " + (pick.kind === "test" ? "test" : "hinted") + " command" + how }
  : { ok: false, used_anchors: [], commands: [], reason: "no hints found in the target" }));
writeFileSync(out + "/metrics.json", JSON.stringify({ ok, score: null }));
`,
} as const;

/** The generic contract for a profile (pure). */
export function genericContract(profile: ProfileId): Contract {
  return {
    version: 1,
    profile,
    stages: { rollout: ".flakegym/stages/rollout.sh", evaluation: ".flakegym/stages/evaluation.sh" },
    limits: { max_cmd_seconds: 600, max_total_seconds: 3600 },
    env: {},
  };
}

/** The `flakegym.yml` text of a contract (for scaffolds written into a workspace). */
export function contractYaml(c: Contract): string {
  const stages = Object.entries(c.stages)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `  ${k}: ${v}\n`)
    .join("");
  const env = Object.entries(c.env)
    .map(([k, v]) => `  ${k}: ${JSON.stringify(v)}\n`)
    .join("");
  return `version: 1\nprofile: ${c.profile}\nstages:\n${stages}limits:\n  max_cmd_seconds: ${c.limits.max_cmd_seconds}\n  max_total_seconds: ${c.limits.max_total_seconds}\n${env ? `env:\n${env}` : ""}`;
}
