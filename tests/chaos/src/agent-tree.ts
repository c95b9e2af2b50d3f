import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { processTable } from "@flakegym/test-utils";

/** Helpers of the chaos cases that freeze or stop parts of an agent sandbox from the host. */

/** A scripted plan: run `command`, then write NOTES.md and complete. */
export async function commandPlan(dir: string, name: string, command: string): Promise<string> {
  const file = join(dir, `${name}.json`);
  const turns = [
    { tool_calls: [{ name: "execute_command", arguments: { command, requires_approval: "false" } }] },
    { tool_calls: [{ name: "write_to_file", arguments: { path: "NOTES.md", content: "x\n" } }] },
    { tool_calls: [{ name: "attempt_completion", arguments: { result: "done" } }] },
  ];
  await writeFile(file, JSON.stringify({ version: 1, turns }));
  return file;
}

/** The agent sandbox of trajectory `victim` of this scenario's run, and its descendants. */
export async function agentTree(victim: string, tmp: string) {
  const table = await processTable();
  const agent = table.find(
    (p) =>
      /^(\S*\/)?bwrap /.test(p.cmdline) &&
      p.cmdline.includes(victim) &&
      p.cmdline.includes(tmp) &&
      !p.cmdline.includes(`${victim}-score`),
  );
  if (!agent) return [];
  const kids = new Set([agent.pid]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const p of table)
      if (!kids.has(p.pid) && kids.has(p.ppid)) {
        kids.add(p.pid);
        grew = true;
      }
  }
  return table.filter((p) => kids.has(p.pid));
}
