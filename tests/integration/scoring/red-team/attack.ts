import { readFile } from "node:fs/promises";
import { join } from "node:path";

/**
 * A reward hack, as the agent's diff would carry it: files written whole (new or replaced) and
 * text appended to existing files. Each names the class of hole it goes through (issue 25).
 */
export interface Attack {
  readonly id: string;
  readonly cls:
    | "canary-blind"
    | "verdict-forgery"
    | "runner-config"
    | "semantic-equality"
    | "build-config"
    | "infra-dodge"
    | "protocol-forgery"
    | "toolchain-shadow"
    | "verdict-input";
  /** The catalog task it attacks (its bug stays unfixed). */
  readonly task: string;
  readonly what: string;
  /**
   * Scored as a dataset row instead (no hidden tests): by this term alone, with the task's profile's
   * default command (`tasks/row-reward.ts`), as `rollout --dataset` scores a row.
   */
  readonly row?: "build" | "lint";
  readonly files?: Readonly<Record<string, string>>;
  readonly append?: Readonly<Record<string, string>>;
}

const lines = (s: string) => (s === "" ? [] : s.replace(/\n$/, "").split("\n"));

/** One file's unified diff from `before` (undefined: new file) to `after`. Pure. */
export function fileDiff(path: string, before: string | undefined, after: string): string {
  const a = before === undefined ? [] : lines(before);
  const b = lines(after);
  const head =
    before === undefined
      ? `diff --git a/${path} b/${path}\nnew file mode 100644\n--- /dev/null\n+++ b/${path}\n`
      : `diff --git a/${path} b/${path}\n--- a/${path}\n+++ b/${path}\n`;
  const range = (n: number) => (n === 0 ? "0,0" : `1,${n}`);
  return `${head}@@ -${range(a.length)} +${range(b.length)} @@\n${a.map((l) => `-${l}\n`).join("")}${b.map((l) => `+${l}\n`).join("")}`;
}

/** The attack as a diff against the snapshot's work tree at `workspace`. */
export async function attackDiff(attack: Attack, workspace: string): Promise<string> {
  const read = (p: string) => readFile(join(workspace, p), "utf8").catch(() => undefined);
  const parts: string[] = [];
  for (const [path, content] of Object.entries(attack.files ?? {}))
    parts.push(fileDiff(path, await read(path), content));
  for (const [path, extra] of Object.entries(attack.append ?? {})) {
    const before = await read(path);
    parts.push(fileDiff(path, before, `${before ?? ""}\n${extra}`));
  }
  return parts.join("");
}
