import { describe, expect, it } from "vitest";
import { diskFullStop, isDiskFullEnd } from "../../src/rollout/disk-full-end.js";

describe("isDiskFullEnd", () => {
  it("an ENOSPC error, an E_DISK_FULL error or an infra_error saying so is a full disk", () => {
    const enospc = Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC" });
    expect(isDiskFullEnd({ error: enospc })).toBe(true);
    expect(isDiskFullEnd({ error: { code: "E_DISK_FULL", message: "x" } })).toBe(true);
    expect(
      isDiskFullEnd({ outcome: { kind: "infra_error", detail: "ENOSPC: no space left on device, write" } }),
    ).toBe(true);
  });

  it("other failures are not", () => {
    expect(isDiskFullEnd({ error: new Error("core crashed") })).toBe(false);
    expect(isDiskFullEnd({ outcome: { kind: "infra_error", detail: "worker crashed" } })).toBe(false);
    expect(
      isDiskFullEnd({ outcome: { kind: "agent_error", detail: "ENOSPC in the agent's own build" } }),
    ).toBe(false);
  });

  it("the stop names the trajectory's directory and what to do", () => {
    const e = diskFullStop("/r/trajectories/t0", { outcome: { kind: "infra_error", detail: "ENOSPC" } });
    expect(e).toMatchObject({ code: "E_DISK_FULL", message: expect.stringContaining("/r/trajectories/t0") });
    expect(e.hint).toMatch(/--resume/);
  });
});
