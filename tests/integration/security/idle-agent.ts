import { type ChildProcess, spawn } from "node:child_process";
import type { AgentLauncher } from "@flakegym/runner";

/**
 * A stand-in for the Cline core (a `sleep` in its place), so an agent-shaped sandbox (agent: true)
 * starts and collects its artifacts without a core boot.
 */
export const idleAgent: AgentLauncher = {
  async launch() {
    const child: ChildProcess = spawn("sleep", ["600"], { detached: true, stdio: "ignore" });
    const exited = new Promise<{ code: number | null }>((r) => child.once("exit", (code) => r({ code })));
    return {
      address: "unix:/nonexistent/core.sock",
      policyBaseUrl: "http://127.0.0.1:18080/v1",
      pid: child.pid!,
      exited,
      // no supervisor, so no heartbeat: never judged frozen
      heartbeatAgeMs: () => undefined,
      async stop() {
        if (child.exitCode === null) process.kill(-child.pid!, "SIGKILL");
        await exited;
      },
    };
  },
};
