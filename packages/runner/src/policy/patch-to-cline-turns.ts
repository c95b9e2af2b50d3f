import type { ScriptedToolCall, ScriptedTurn } from "@flakegym/cline-vendor";
import { FlakegymError } from "../errors.js";
import { applyHunks, type FilePatch, type Hunk, parseUnifiedDiff } from "../text/unified-diff.js";
import { shellQuote } from "./cline-tools.js";

/**
 * Turns a reference patch into the assistant turns that make Cline apply it with its own tools,
 * one tool per turn (Cline runs one tool per message): `write_to_file` for new files,
 * `replace_in_file` with one SEARCH/REPLACE block per hunk for edits, `execute_command` with `rm`
 * for deletions and `mv` for renames, then `attempt_completion`.
 *
 * Cline matches a SEARCH block at its first occurrence after the previous block. When the original
 * contents are given (`originals`), each block is checked to land where its hunk belongs; a file
 * whose hunks would be ambiguous (or are pure insertions without context) is rewritten whole with
 * `write_to_file` instead. Without `originals` the hunks are trusted as written.
 */

export interface PatchToTurnsOptions {
  /** Original file contents by repo-relative path, to verify SEARCH blocks land where they should. */
  readonly originals?: Readonly<Record<string, string>>;
  /** The attempt_completion result text. */
  readonly completionText?: string;
}

export const SEARCH_START = "------- SEARCH";
export const SEARCH_END = "=======";
export const REPLACE_END = "+++++++ REPLACE";

const call = (name: string, args: Record<string, string>): ScriptedTurn => ({
  tool_calls: [{ name, arguments: args } satisfies ScriptedToolCall],
});

function searchReplaceBlock(h: Hunk): { search: string; replace: string } {
  const oldSide = h.lines.filter((l) => l.op !== "+").map((l) => l.text);
  const newSide = h.lines.filter((l) => l.op !== "-").map((l) => l.text);
  return { search: oldSide.join("\n"), replace: newSide.join("\n") };
}

/** The replace_in_file `diff` parameter for a file's hunks. */
export function hunksToSearchReplace(hunks: readonly Hunk[]): string {
  return hunks
    .map((h) => {
      const { search, replace } = searchReplaceBlock(h);
      const s = search.length > 0 ? `${search}\n` : "";
      const r = replace.length > 0 ? `${replace}\n` : "";
      return `${SEARCH_START}\n${s}${SEARCH_END}\n${r}${REPLACE_END}`;
    })
    .join("\n");
}

/** Byte offset of 1-based line `line` in `text`. */
function offsetOfLine(text: string, line: number): number {
  let off = 0;
  for (let n = 1; n < line; n++) {
    const nl = text.indexOf("\n", off);
    if (nl < 0) return text.length;
    off = nl + 1;
  }
  return off;
}

/** True when Cline's first-match rule puts every SEARCH block exactly where its hunk belongs. */
function blocksLandCorrectly(original: string, hunks: readonly Hunk[]): boolean {
  let last = 0;
  for (const h of hunks) {
    const { search } = searchReplaceBlock(h);
    if (search.length === 0) return false;
    const needle = `${search}\n`;
    const at = original.indexOf(needle, last);
    const expected = offsetOfLine(original, h.oldStart);
    if (at !== expected) return false;
    last = at + needle.length;
  }
  return true;
}

function dirOf(path: string): string | undefined {
  const slash = path.lastIndexOf("/");
  return slash > 0 ? path.slice(0, slash) : undefined;
}

function fileTurns(f: FilePatch, originals: Readonly<Record<string, string>> | undefined): ScriptedTurn[] {
  const where = f.newPath ?? f.oldPath ?? "?";
  if (f.binary) {
    throw new FlakegymError(
      "E_PATCH",
      `reference patch changes binary file '${where}', which Cline's edit tools cannot write`,
      {
        hint: "use a task whose reference patch is text-only, or the scripted policy",
      },
    );
  }
  switch (f.kind) {
    case "add": {
      const path = f.newPath!;
      const content = applyHunks("", f.hunks, { path });
      if (content.length === 0) {
        const dir = dirOf(path);
        const cmd = `${dir ? `mkdir -p ${shellQuote(dir)} && ` : ""}touch ${shellQuote(path)}`;
        return [call("execute_command", { command: cmd, requires_approval: "false" })];
      }
      return [call("write_to_file", { path, content })];
    }
    case "delete":
      return [
        call("execute_command", {
          command: `rm -f -- ${shellQuote(f.oldPath!)}`,
          requires_approval: "false",
        }),
      ];
    case "rename":
    case "modify": {
      const turns: ScriptedTurn[] = [];
      const path = f.newPath!;
      if (f.kind === "rename") {
        const dir = dirOf(path);
        const mv = `${dir ? `mkdir -p ${shellQuote(dir)} && ` : ""}mv -- ${shellQuote(f.oldPath!)} ${shellQuote(path)}`;
        turns.push(call("execute_command", { command: mv, requires_approval: "false" }));
      }
      if (f.hunks.length === 0) return turns;
      const original = originals?.[f.oldPath!];
      if (original !== undefined && !blocksLandCorrectly(original, f.hunks)) {
        turns.push(call("write_to_file", { path, content: applyHunks(original, f.hunks, { path }) }));
      } else if (original === undefined && f.hunks.some((h) => searchReplaceBlock(h).search.length === 0)) {
        throw new FlakegymError(
          "E_PATCH",
          `reference patch edits '${path}' with a hunk that has no context lines, which replace_in_file cannot place`,
          { hint: "regenerate the patch with context (git diff -U3) or pass the original file contents" },
        );
      } else {
        turns.push(call("replace_in_file", { path, diff: hunksToSearchReplace(f.hunks) }));
      }
      return turns;
    }
  }
}

/** A file's turns, then `chmod +x` when the patch makes it executable (Cline's file edits do not set the bit). */
function fileTurnsWithMode(
  f: FilePatch,
  originals: Readonly<Record<string, string>> | undefined,
): ScriptedTurn[] {
  const turns = fileTurns(f, originals);
  if (!f.executable || f.newPath === null) return turns;
  const chmod = `chmod +x -- ${shellQuote(f.newPath)}`;
  return [...turns, call("execute_command", { command: chmod, requires_approval: "false" })];
}

/** Pure: reference patch → assistant turns ending in attempt_completion. */
export function patchToClineTurns(patch: string, opts: PatchToTurnsOptions = {}): ScriptedTurn[] {
  const files = parseUnifiedDiff(patch);
  if (files.length === 0 && patch.trim().length > 0) {
    throw new FlakegymError("E_PATCH", "the reference patch contains no file changes", {
      hint: "the reference patch must be a unified diff (diff --git … / --- … / +++ …)",
    });
  }
  const turns = files.flatMap((f) => fileTurnsWithMode(f, opts.originals));
  turns.push(
    call("attempt_completion", {
      result:
        opts.completionText ??
        `Applied the reference changes to ${files.length} file${files.length === 1 ? "" : "s"}.`,
    }),
  );
  return turns;
}

/** The turns of the `empty` policy: complete at once, change nothing. */
export function emptyPolicyTurns(): ScriptedTurn[] {
  return [call("attempt_completion", { result: "I made no changes." })];
}
