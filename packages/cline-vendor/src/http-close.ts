import type { Server } from "node:http";

/** Closes HTTP servers and drops their open (keep-alive, streaming) connections so close() resolves. */
export function closeHttpServers(servers: readonly Server[]): Promise<void> {
  return Promise.all(
    servers.map(
      (s) =>
        new Promise<void>((resolve) => {
          s.close(() => resolve());
          s.closeAllConnections();
        }),
    ),
  ).then(() => {});
}
