import { createUpstream } from "../policy/create-upstream.js";
import { parsePolicySpec } from "../policy/spec.js";
import type { PolicyUpstream } from "../policy/upstream.js";
import { noReference, type TaskRuntime } from "./wire-tasks.js";

/** The policy upstreams of a rollout's attempts. */

/** The upstream of one attempt: its policy, task (and the task's reference patch, for gold) and trial. */
export type UpstreamFor = (
  policy: string,
  task: TaskRuntime,
  reference: string | undefined,
  trial: number,
) => Promise<PolicyUpstream>;

/** openai/anthropic upstreams are shared; plan upstreams keep a cursor per trajectory, so each attempt gets a fresh one. */
export function createUpstreams(o: {
  readonly env: NodeJS.ProcessEnv;
  readonly signal: AbortSignal;
}): UpstreamFor {
  const shared = new Map<string, PolicyUpstream>();
  return async (policy, task, reference, trial) => {
    const spec = parsePolicySpec(policy);
    if (spec.kind === "gold" && reference === undefined) throw noReference(task);
    const ctx = {
      env: o.env,
      signal: o.signal,
      trial,
      ...(spec.kind === "gold" ? { task: { referencePatch: reference! } } : {}),
    };
    if (spec.kind === "openai" || spec.kind === "anthropic") {
      let u = shared.get(policy);
      if (!u) {
        u = await createUpstream(spec, ctx);
        shared.set(policy, u);
      }
      return u;
    }
    return await createUpstream(spec, ctx);
  };
}
