import { writeFile } from "node:fs/promises";
import { join } from "node:path";

/**
 * A scripted plan (docs/reference/scripted-policy.md) that runs `sleep <seconds>` (a window to interrupt or
 * inject a fault), writes NOTES.md and completes. Written to `<dir>/slow-<seconds>.json`.
 */
export async function slowPlan(dir: string, seconds: number): Promise<string> {
  const file = join(dir, `slow-${seconds}.json`);
  await writeFile(
    file,
    JSON.stringify({
      version: 1,
      turns: [
        {
          tool_calls: [
            {
              name: "execute_command",
              arguments: { command: `sleep ${seconds}`, requires_approval: "false" },
            },
          ],
        },
        { tool_calls: [{ name: "write_to_file", arguments: { path: "NOTES.md", content: "slow\n" } }] },
        { tool_calls: [{ name: "attempt_completion", arguments: { result: "done" } }] },
      ],
    }),
  );
  return file;
}
