import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { makeTempDir, type TempDir } from "@flakegym/test-utils";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createScenario, FULL, removeScenarioDirs, TASK } from "./src/scenario.js";

/**
 * Issue 42, who can reach what: the agent's own commands attack the processes of its sandbox that
 * are not its own (the supervisor, cline-host, the Cline core) or the resources it shares with
 * them (memory, its state tmpfs). None of it may end as `infra_error` (reward null: dropped from
 * training and pass@k, a free escape from a 0): either the attack reaches nothing (two users) and
 * the trajectory goes on, or what it did is the policy's, scored like any other end. Each case is
 * a real rollout with a scripted policy that runs the attack, then a wrong edit, then completes.
 */

let tmp: TempDir;
let cache: string;
beforeAll(async () => {
  tmp = await makeTempDir("flakegym-chaos-reach-");
  cache = join(tmp.path, "cache");
});
afterAll(async () => {
  await removeScenarioDirs();
  await tmp?.cleanup();
});

/**
 * A shell loop over /proc signalling every process whose command line holds `name` (built at run
 * time, so the loop's own command line does not hold it). Prints what it reached.
 */
export function signalByName(signal: string, name: string): string {
  const [head, tail] = [name.slice(0, 5), name.slice(5)];
  return [
    `h=${head}; t=${tail}; n=0`,
    'for p in /proc/[0-9]*; do c=$(tr "\\0" " " < $p/cmdline 2>/dev/null) || continue',
    `  case "$c" in *"$h$t"*) kill -${signal} \${p#/proc/} 2>/dev/null && n=$((n+1));; esac; done`,
    `echo "reached $n"; sleep 3`,
  ].join("\n");
}

/** The attacks, by class: what the agent's command runs. */
export const ATTACKS: readonly { readonly name: string; readonly command: string }[] = [
  { name: "sigstop-core", command: signalByName("STOP", "cline-core.js") },
  { name: "sigkill-core", command: signalByName("KILL", "cline-core.js") },
  { name: "kill-supervisor", command: signalByName("KILL", "cline-supervisor") },
  { name: "kill-host", command: signalByName("KILL", "cline-host") },
  // memory the OOM killer cannot take back from a process: a tmpfs file (the worker's /tmp)
  { name: "oom-by-tmpfs", command: "cat /dev/zero > /dev/shm/fill; cat /dev/zero > /tmp/fill; echo filled" },
  // the worker's state tmpfs (HOME, /tmp, the core's config) full: the core cannot save its task
  { name: "fill-state", command: "cat /dev/zero > /tmp/fill; cat /dev/zero > $HOME/fill; echo full" },
];

/** A scripted plan: run the attack, write a wrong edit, complete. */
async function attackPlan(dir: string, name: string, command: string): Promise<string> {
  const file = join(dir, `${name}.json`);
  const turns = [
    { tool_calls: [{ name: "execute_command", arguments: { command, requires_approval: "false" } }] },
    { tool_calls: [{ name: "write_to_file", arguments: { path: "NOTES.md", content: "no fix\n" } }] },
    { tool_calls: [{ name: "attempt_completion", arguments: { result: "done" } }] },
  ];
  await writeFile(file, JSON.stringify({ version: 1, turns }));
  return file;
}

describe("chaos: the agent's commands against its own sandbox (issue 42)", () => {
  if (!FULL)
    console.log("chaos agent-reach: one rollout per attack, run with `npm run chaos` only (reduced run)");
  const only = process.env.FLAKEGYM_REACH_ATTACKS?.split(",");
  for (const a of ATTACKS.filter((x) => !only || only.includes(x.name))) {
    it.skipIf(!FULL)(
      `${a.name}: scored (reward 0, the policy's end), never infra_error with reward null`,
      async () => {
        const s = await createScenario(tmp.path, `reach-${a.name}`, cache);
        const plan = await attackPlan(s.root, a.name, a.command);
        const r = await s.cli([
          ...["rollout", "--task", TASK, "--group-size", "1", "--policy", `scripted:${plan}`],
          ...["--idle-timeout", "20", "--max-infra-retries", "0", "--out", s.out],
        ]);
        const res = JSON.parse(
          await readFile(join(s.out, "trajectories", `${TASK}-t0`, "result.json"), "utf8"),
        );
        console.log(
          `agent-reach ${a.name}: outcome ${res.outcome.kind}${res.outcome.limit ? `/${res.outcome.limit}` : ""} reward ${res.reward} — ${String(res.outcome.detail).slice(0, 300)}`,
        );
        expect(res.outcome.kind, `${res.outcome.detail}\n${String(r.stderr).slice(-1500)}`).not.toBe(
          "infra_error",
        );
        expect(res.reward).toBe(0);
      },
      600_000,
    );
  }
});
