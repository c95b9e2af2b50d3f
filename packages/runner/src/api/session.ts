import { randomBytes } from "node:crypto";
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { z } from "zod";
import { Contract, LimitOverrides } from "../contract/contract.js";
import { Hint } from "../contract/hints.js";
import { FlakegymError } from "../errors.js";
import { parseJsonFile } from "../run-format/json-file.js";
import { TargetRef } from "./target.js";

/**
 * An environment session: plain data, stored as `<sessionsDir>/<id>/session.json` so any process
 * can resume it by id. Its directory holds the workspace (the target's copy the stages run on)
 * and every call's outputs; `teardown` removes it.
 */
export const EnvSession = z
  .object({
    version: z.literal(1),
    id: z
      .string()
      .regex(/^[A-Za-z0-9_-]{1,64}$/)
      .describe("session id (its directory name)"),
    createdAt: z.string().describe("ISO time of setup"),
    target: TargetRef,
    contract: Contract,
    contractSource: z
      .enum(["repo", "scaffolded", "generic"])
      .describe(
        "repo: the target's own flakegym.yml; scaffolded: written by Cline at setup; generic: built by flakegym",
      ),
    hints: z.array(Hint).describe("candidate official commands found in the target"),
    dir: z.string().describe("the session directory"),
    workspace: z.string().describe("host path of the workspace the stages run on (mounted at /workspace)"),
    limits: LimitOverrides.default({}).describe("run-time overrides of the contract's limits"),
    lastSamples: z.string().optional().describe("the last rollout's samples.jsonl (the session's copy)"),
    calls: z.number().int().min(0).describe("stage calls made so far (numbers each call's output dir)"),
    state: z.enum(["ready", "torn_down"]),
  })
  .strict();
export type EnvSession = z.infer<typeof EnvSession>;

export const SESSION_FILE = "session.json";

/** The default sessions directory: `$FLAKEGYM_SESSIONS_DIR`, else `runs/sessions` under the cwd. */
export function defaultSessionsDir(env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): string {
  return resolve(cwd, env["FLAKEGYM_SESSIONS_DIR"] ?? join("runs", "sessions"));
}

export function newSessionId(now = new Date()): string {
  return `${now.toISOString().replace(/[-:]/g, "").replace(/\..*/, "")}-${randomBytes(4).toString("hex")}`;
}

/** Writes session.json atomically (temp + rename). */
export async function saveSession(s: EnvSession): Promise<void> {
  await mkdir(s.dir, { recursive: true });
  // the atomic-write temp name gc knows (`.<name>.<pid>.<rand>.tmp`): a kill before the rename leaves one it reclaims
  const tmp = join(s.dir, `.${SESSION_FILE}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`);
  await writeFile(tmp, `${JSON.stringify(s, null, 2)}\n`);
  await rename(tmp, join(s.dir, SESSION_FILE));
}

/** A session given as itself, its id (in `sessionsDir`) or its directory. */
export type SessionRef = EnvSession | string;

export async function loadSession(ref: SessionRef, sessionsDir = defaultSessionsDir()): Promise<EnvSession> {
  // a session object is re-read from its directory: the stored file is the latest state
  const dir =
    typeof ref !== "string"
      ? EnvSession.parse(ref).dir
      : /^[A-Za-z0-9_-]{1,64}$/.test(ref)
        ? join(sessionsDir, ref)
        : resolve(ref);
  let text: string;
  try {
    text = await readFile(join(dir, SESSION_FILE), "utf8");
  } catch (err) {
    throw new FlakegymError(
      "E_SESSION_UNKNOWN",
      `no session '${ref}' (${join(dir, SESSION_FILE)} is unreadable)`,
      {
        hint: "pass the id setup returned (and the same sessionsDir), or the session's directory",
        cause: err,
      },
    );
  }
  const file = join(dir, SESSION_FILE);
  const r = EnvSession.safeParse(
    parseJsonFile(
      text,
      file,
      "the session cannot be read: tear it down (rm its directory) and run setup again",
    ),
  );
  if (!r.success) {
    const i = r.error.issues[0]!;
    throw new FlakegymError("E_SESSION_INVALID", `${file}: ${i.path.join(".")}: ${i.message}`, {
      hint: "the file was edited or written by another flakegym version; run setup again",
    });
  }
  return r.data;
}
