import type { CallOptions, RequestCore, Result } from "./request.js";
import { AgentSelf, agentVersion } from "./responses.js";

/** `/v1/agent/...`. */
export function createAgentApi(core: RequestCore) {
  return {
    /** `GET /v1/agent/self`: the agent's config, member and stats. */
    self(opts: CallOptions = {}): Promise<Result<AgentSelf>> {
      return core.json({ method: "GET", path: "/v1/agent/self" }, AgentSelf, opts);
    },
    /** The agent's version, e.g. "2.0.6" (undefined if it does not say). */
    async version(opts: CallOptions = {}): Promise<string | undefined> {
      return agentVersion((await this.self(opts)).data);
    },
  };
}
export type AgentApi = ReturnType<typeof createAgentApi>;
