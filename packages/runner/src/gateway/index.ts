export { encodeSse, parseSse, type SseEvent, SseParser } from "../policy/sse.js";
export { createPolicyGateway } from "./server.js";
export { startGatewayThread, type ThreadedPolicyGateway } from "./thread.js";
export { parseTurnLog, readTurnLog, TurnLogWriter, TurnRecord, TurnStatus } from "./turn-log.js";
export {
  type GatewayTerminal,
  type ListenSpec,
  type PolicyGateway,
  type PolicyGatewayOptions,
  type RegisterOptions,
  TrajectoryLimits,
  type TrajectoryLimitsInput,
  type TrajectoryRoute,
  type TrajectoryStatus,
} from "./types.js";
