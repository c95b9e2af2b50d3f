import { ProfileId } from "@flakegym/profiles";
import { z } from "zod";

/** Where a task's repository comes from, as classified from the row. */
export const RepoKind = z
  .enum(["github", "url", "local"])
  .describe("github: an owner/repo name; url: any git URL; local: a directory on this machine");
export type RepoKind = z.infer<typeof RepoKind>;

/**
 * One task read from a dataset row (the `swe-agent-13k` schema) or derived from a catalog task: what
 * to clone, at which commit, which toolchain profile runs it and what to ask the agent.
 */
export const TaskProfile = z
  .object({
    id: z.string().min(1).describe("task id, unique within its dataset"),
    repo: z.string().min(1).describe("the repository as given: a git URL, `owner/repo` or a local path"),
    repoKind: RepoKind,
    repoUrl: z
      .string()
      .min(1)
      .describe("what `git clone` takes: the URL, `https://github.com/<owner/repo>`, or the local path"),
    commit: z
      .string()
      .regex(/^[0-9a-f]{7,40}$/)
      .optional()
      .describe("commit to check out (hex); absent: the branch head or the default branch"),
    branch: z.string().min(1).optional().describe("branch to check out when no commit is given"),
    language: z.string().describe("GitHub language name; empty when the row has none"),
    profile: ProfileId.describe("toolchain profile chosen from the language (profiles.json)"),
    prompt: z.string().min(1).describe("the task prompt: the first `human` turn of the conversation"),
    source: z
      .object({
        file: z.string().describe("dataset file the row came from"),
        row: z.number().int().positive().describe("1-based row number in that file"),
      })
      .strict()
      .describe("provenance of the row"),
    metadata: z
      .record(z.string(), z.unknown())
      .describe("the row's other columns (task_type, target, …), kept for provenance"),
  })
  .strict();
export type TaskProfile = z.infer<typeof TaskProfile>;
