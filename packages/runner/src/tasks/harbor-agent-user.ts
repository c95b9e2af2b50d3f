import { readFile } from "node:fs/promises";
import { join } from "node:path";
import type { HarborProblem, HarborTaskToml } from "./harbor.js";

/**
 * task.toml's `agent.user`: Harbor runs the agent (and its oracle, solve.sh) as that user of the
 * task's container, and the verifier as `verifier.user` (default: the image's user, root). Here the
 * user is looked up in the built tree's /etc/passwd at import; the oracle runs as it and the agent's
 * commands run as it in the task's container (the Cline core stays the container's root, as
 * Harbor's own agent harness is not the agent's user either). Only a built environment
 * (`--build-env`) has the image's users.
 */

/** A user of the task's container: its name and ids as the image's /etc/passwd gives them. */
export interface AgentUser {
  readonly name: string;
  readonly uid: number;
  readonly gid: number;
  readonly home: string;
}

/** The `agent.user` task.toml names, or undefined for none or root (Harbor's default). Pure. */
export function agentUserOf(toml: HarborTaskToml): string | undefined {
  const user = (toml.agent as Record<string, unknown>).user;
  if (user === undefined || user === null || user === "root" || user === 0 || user === "0") return undefined;
  return String(user);
}

/** `user` (a name or a numeric uid) in an /etc/passwd text, or undefined when it has no line. Pure. */
export function passwdEntryOf(passwd: string, user: string): AgentUser | undefined {
  for (const line of passwd.split("\n")) {
    const [name, , uid, gid, , home] = line.split(":");
    if (name === undefined || uid === undefined || gid === undefined) continue;
    if (name !== user && uid !== user) continue;
    const ids = { uid: Number(uid), gid: Number(gid) };
    if (!Number.isSafeInteger(ids.uid) || !Number.isSafeInteger(ids.gid)) continue;
    return { name, ...ids, home: home || "/" };
  }
  return undefined;
}

/** The problem of an `agent.user` without a built environment (only it has the image's users). Pure. */
export function unbuiltAgentUserProblem(user: string): HarborProblem {
  return {
    field: "task.toml: agent.user",
    reason: `runs the agent and the oracle as user ${JSON.stringify(user)}, which exists only in the task's own container: import with --build-env (the Dockerfile built, the user looked up in its /etc/passwd), or drop the field`,
  };
}

/** The built tree's entry of `user`, or the problem naming the field and the file it is missing from. */
export async function builtAgentUser(tree: string, user: string): Promise<AgentUser | HarborProblem> {
  const passwd = await readFile(join(tree, "etc/passwd"), "utf8").catch(() => "");
  const entry = passwdEntryOf(passwd, user);
  if (entry) return entry;
  return {
    field: "task.toml: agent.user",
    reason: `names user ${JSON.stringify(user)}, which the built environment's /etc/passwd does not hold: create it in environment/Dockerfile (useradd) or fix the name`,
  };
}

/** The metadata a task keeps of its agent's user (read back by the workers: {@link agentIdsOf}). Pure. */
export function agentUserMetadata(u: AgentUser): Record<string, string> {
  return { harbor_agent_user: u.name, harbor_agent_ids: `${u.uid}:${u.gid}` };
}

/** The agent's ids a task's metadata names (`harbor_agent_ids`, "<uid>:<gid>"), or undefined. Pure. */
export function agentIdsOf(
  metadata: Readonly<Record<string, string>> | undefined,
): { readonly uid: number; readonly gid: number } | undefined {
  const m = /^(\d+):(\d+)$/.exec(metadata?.harbor_agent_ids ?? "");
  return m ? { uid: Number(m[1]), gid: Number(m[2]) } : undefined;
}
