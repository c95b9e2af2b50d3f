import { dirname } from "node:path";
import { SUPERVISOR_PATH } from "@flakegym/cline-vendor";
import { describe, expect, it } from "vitest";
import { agentBinds, insidePolicyBaseUrl } from "../../../src/workers/podman/start-agent.js";

describe("the podman agent's shape", () => {
  const host = { dir: "/s/w", dirs: { config: "/s/w/c", sock: "/s/w/k" } } as never;
  const pkg = { root: "/pkg/cline" } as never;
  const spec = { gateway: { socketPath: "/run/gw.sock" } };

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

  it("the policy is reached on the forwarded loopback port, under the gateway URL's path", () => {
    expect(insidePolicyBaseUrl(undefined)).toBe("http://127.0.0.1:18080/v1");
    expect(insidePolicyBaseUrl("http://10.0.0.1:9000/t/abc/v1/")).toBe("http://127.0.0.1:18080/t/abc/v1");
  });
});
