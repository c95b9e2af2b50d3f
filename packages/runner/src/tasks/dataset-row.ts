import { isAbsolute } from "node:path";
import { loadProfiles, type ProfilesFile, profileForLanguage } from "@flakegym/profiles";
import { z } from "zod";
import { jsonKindOf } from "../text/json-kind.js";
import type { RepoKind, TaskProfile } from "./task-profile.js";

/** One turn of a dataset conversation. */
export const Turn = z.object({ from: z.string(), value: z.string() }).passthrough();
export type Turn = z.infer<typeof Turn>;

const optionalText = z
  .string()
  .nullish()
  .transform((s) => (s == null || s.trim() === "" ? undefined : s.trim()));

/**
 * A row of `NousResearch/swe-agent-13k-2025-06-15` (FACTS §4). Other columns are allowed and kept
 * as metadata. Nulls (Parquet) and missing keys (JSONL) mean the same.
 */
export const DatasetRow = z
  .object({
    id: z
      .union([z.string().min(1), z.number().int()])
      .transform(String)
      .describe("row id"),
    repo_name: optionalText.describe("`owner/repo`"),
    repo_url: optionalText.describe("clone URL or local path; may be absent"),
    language: optionalText.describe("GitHub language name; may be empty"),
    conversations: z
      .union([z.array(Turn), z.string()])
      .describe("list of {from, value}, or that list as a JSON string"),
    base_commit: optionalText.describe("commit to check out"),
    commit: optionalText.describe("alias of base_commit"),
    branch: optionalText.describe("branch when there is no commit"),
  })
  .passthrough();
export type DatasetRow = z.infer<typeof DatasetRow>;

/** Why a row was rejected: the file, the 1-based row, the field and what was wrong. */
export interface RowError {
  readonly file: string;
  readonly row: number;
  readonly field: string;
  readonly reason: string;
  /** The row's id when it had a readable one. */
  readonly id?: string;
}

export type RowResult = { ok: true; task: TaskProfile } | { ok: false; error: RowError };

const OWNER_REPO = /^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/;
const GIT_URL = /^(https?:\/\/|ssh:\/\/|git:\/\/|file:\/\/|[\w.-]+@[\w.-]+:)/;
const HEX = /^[0-9a-fA-F]{7,40}$/;
const KNOWN_COLUMNS = new Set([
  "id",
  "repo_name",
  "repo_url",
  "language",
  "conversations",
  "base_commit",
  "commit",
  "branch",
]);

/** Picks the prompt: the first `human` turn (FACTS §4: usually `conversations[1]`). */
export function promptOf(turns: readonly Turn[]): string | undefined {
  const human = turns.find((t) => t.from === "human" && t.value.trim() !== "");
  return human?.value;
}

/** Where a row's repository is: a git URL, a local path, or `owner/repo` on GitHub (or which field is wrong). */
export function classifyRepo(
  repoName: string | undefined,
  repoUrl: string | undefined,
): { repo: string; kind: RepoKind; url: string } | { field: string; reason: string } {
  if (repoUrl !== undefined) {
    if (GIT_URL.test(repoUrl)) return { repo: repoName ?? repoUrl, kind: "url", url: repoUrl };
    if (isAbsolute(repoUrl) || repoUrl.startsWith("./") || repoUrl.startsWith("../")) {
      return { repo: repoName ?? repoUrl, kind: "local", url: repoUrl };
    }
    return {
      field: "repo_url",
      reason: `'${repoUrl}' is neither a git URL (https://, ssh://, git@host:) nor a path (/…, ./…)`,
    };
  }
  if (repoName === undefined) {
    return { field: "repo_name", reason: "missing: the row has neither repo_name nor repo_url" };
  }
  if (!OWNER_REPO.test(repoName)) {
    return { field: "repo_name", reason: `'${repoName}' is not of the form owner/repo` };
  }
  return { repo: repoName, kind: "github", url: `https://github.com/${repoName}` };
}

/** Validates one raw row and turns it into a TaskProfile, or says which field is wrong and why. */
export function parseDatasetRow(
  raw: unknown,
  at: { file: string; row: number },
  profiles: ProfilesFile = loadProfiles(),
): RowResult {
  const fail = (field: string, reason: string, id?: string): RowResult => ({
    ok: false,
    error: { file: at.file, row: at.row, field, reason, ...(id === undefined ? {} : { id }) },
  });
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    return fail("(row)", `expected an object, got ${jsonKindOf(raw)}`);
  }
  const rawId = (raw as Record<string, unknown>).id;
  const idHint = typeof rawId === "string" || typeof rawId === "number" ? String(rawId) : undefined;
  const parsed = DatasetRow.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const field = issue.path.length > 0 ? issue.path.join(".") : "(row)";
    const top = issue.path[0];
    const absent =
      typeof top === "string" && (raw as Record<string, unknown>)[top] == null && issue.path.length === 1;
    const reason = absent ? "missing" : issue.message;
    return fail(field, reason, idHint);
  }
  const row = parsed.data;

  let turns: Turn[];
  if (typeof row.conversations === "string") {
    let decoded: unknown;
    try {
      decoded = JSON.parse(row.conversations);
    } catch (err) {
      return fail("conversations", `is a string but not valid JSON (${(err as Error).message})`, row.id);
    }
    const list = z.array(Turn).safeParse(decoded);
    if (!list.success) {
      const issue = list.error.issues[0]!;
      return fail(
        ["conversations", ...issue.path].join("."),
        `JSON string does not hold a list of {from, value}: ${issue.message}`,
        row.id,
      );
    }
    turns = list.data;
  } else {
    turns = row.conversations;
  }
  const prompt = promptOf(turns);
  if (prompt === undefined) {
    return fail("conversations", `no non-empty 'human' turn among ${turns.length} turn(s)`, row.id);
  }

  const repo = classifyRepo(row.repo_name, row.repo_url);
  if ("field" in repo) return fail(repo.field, repo.reason, row.id);

  const commitField = row.base_commit !== undefined ? "base_commit" : "commit";
  const commit = row.base_commit ?? row.commit;
  if (commit !== undefined && !HEX.test(commit)) {
    return fail(commitField, `'${commit}' is not a hex commit id (7–40 hex digits)`, row.id);
  }

  const metadata: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(row)) if (!KNOWN_COLUMNS.has(k) && v !== null) metadata[k] = v;

  const language = row.language ?? "";
  const task: TaskProfile = {
    id: row.id,
    repo: repo.repo,
    repoKind: repo.kind,
    repoUrl: repo.url,
    ...(commit !== undefined ? { commit: commit.toLowerCase() } : {}),
    ...(commit === undefined && row.branch !== undefined ? { branch: row.branch } : {}),
    language,
    profile: profileForLanguage(language, profiles),
    prompt,
    source: { file: at.file, row: at.row },
    metadata,
  };
  return { ok: true, task };
}
