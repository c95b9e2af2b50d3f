import { describe, expect, it } from "vitest";
import {
  envBackendOf,
  envEvaluationCommand,
  envRolloutCommand,
  envSetupCommand,
} from "../../../src/cli/commands/env.js";

describe("flakegym env --backend", () => {
  it("hands the API the backend config the flags name, and nothing without --backend", () => {
    expect(envBackendOf({})).toEqual({});
    expect(envBackendOf({ backend: "local", images: "host" })).toEqual({ backend: { kind: "local" } });
    expect(envBackendOf({ backend: "podman", images: "host" })).toEqual({
      backend: { kind: "podman", images: "host" },
    });
    expect(envBackendOf({ backend: "podman", images: "nix" })).toEqual({
      backend: { kind: "podman", images: "nix" },
    });
  });

  it("takes --backend local|podman on setup, rollout and evaluation, and refuses nomad (its gateway must be routable)", () => {
    const stages = [
      envSetupCommand.options.safeParse({ target: "t", backend: "podman" }),
      envRolloutCommand.options.safeParse({ session: "s", llm: "empty", backend: "podman", images: "nix" }),
      envEvaluationCommand.options.safeParse({ session: "s", backend: "local" }),
    ];
    for (const r of stages) expect(r.success).toBe(true);
    expect(stages[0]!.data).toMatchObject({ backend: "podman", images: "host" });
    const nomad = envEvaluationCommand.options.safeParse({ session: "s", backend: "nomad" });
    expect(nomad.success).toBe(false);
    expect(nomad.error?.issues[0]?.path).toEqual(["backend"]);
  });
});
