import { dirname } from "node:path";
import { SUPERVISOR_PATH } from "@flakegym/cline-vendor";
import { describe, expect, it } from "vitest";
import { agentBinds } from "../../../src/workers/podman/start-agent.js";

describe("the podman agent's shape", () => {
  const host = { dir: "/s/w", dirs: { config: "/s/w/c", sock: "/s/w/k" } } as never;
  const pkg = { root: "/pkg/cline" } as never;
  const spec = {
    runId: "r",
    taskId: "t",
    trajectoryId: "x",
    profile: "python" as const,
    workspace: "/w",
    gateway: { socketPath: "/run/gw.sock" },
    limits: { memoryMb: 512, pids: 64, wallClockMs: 60_000 },
    agent: true,
  };

  it("binds the supervisor, the runner's cline package, config and sockets (rw) and the gateway socket", () => {
    expect(agentBinds({ options: { binds: [{ src: "/usr", dest: "/usr" }] } }, spec, { host, pkg })).toEqual([
      { src: "/usr", dest: "/usr" },
      { src: dirname(SUPERVISOR_PATH), dest: dirname(SUPERVISOR_PATH) },
      { src: "/pkg/cline", dest: "/pkg/cline" },
      { src: "/s/w/c", dest: "/s/w/c", rw: true },
      { src: "/s/w/k", dest: "/s/w/k", rw: true },
      { src: "/run/gw.sock", dest: "/run/flakegym/gateway.sock" },
    ]);
  });

  it("an image with its own core gets no cline package bound in", () => {
    const binds = agentBinds({ options: { clineFromImage: true } }, spec, { host, pkg });
    expect(binds.map((b) => b.src)).not.toContain("/pkg/cline");
  });
});
