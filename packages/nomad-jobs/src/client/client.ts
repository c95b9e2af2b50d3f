import { createAgentApi } from "./agent.js";
import { createAllocationsApi } from "./allocations.js";
import { type NomadClientConfig, type NomadClientConfigInput, parseNomadConfig } from "./config.js";
import { createEventsApi } from "./events.js";
import { createFsApi } from "./fs.js";
import { createJobsApi } from "./jobs.js";
import { createLogsApi } from "./logs.js";
import { createRequestCore } from "./request.js";
import { createStatusApi } from "./status.js";

/** A thin typed Nomad client: one object per resource over one request core. */
export function createNomadClient(config: NomadClientConfig | NomadClientConfigInput = {}) {
  const core = createRequestCore(parseNomadConfig(config));
  return {
    config: core.config,
    jobs: createJobsApi(core),
    allocations: createAllocationsApi(core),
    events: createEventsApi(core),
    logs: createLogsApi(core),
    fs: createFsApi(core),
    status: createStatusApi(core),
    agent: createAgentApi(core),
    /** Closes idle keep-alive connections. */
    close: () => core.close(),
  };
}
export type NomadClient = ReturnType<typeof createNomadClient>;
