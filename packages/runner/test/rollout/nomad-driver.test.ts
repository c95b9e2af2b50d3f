import { describe, expect, it } from "vitest";
import { nomadRolloutDriver } from "../../src/rollout/nomad-driver.js";

describe("nomadRolloutDriver", () => {
  it("raw_exec without images; docker/podman only with --images nix", () => {
    expect(nomadRolloutDriver("raw_exec", undefined, "1")).toEqual({ kind: "raw_exec" });
    expect(() => nomadRolloutDriver("raw_exec", undefined)).toThrow(/isolates nothing/);
    expect(nomadRolloutDriver("docker", "nix")).toEqual({
      kind: "container",
      driver: { driver: "docker", allowMutableTag: false, args: [] },
    });
    expect(nomadRolloutDriver("podman", "nix")).toMatchObject({ driver: { driver: "podman" } });
  });

  it("names what to set otherwise", () => {
    expect(() => nomadRolloutDriver(undefined, undefined)).toThrow(
      /FLAKEGYM_NOMAD_DRIVER=raw_exec, docker or podman/,
    );
    expect(() => nomadRolloutDriver("exec", "nix")).toThrow(/\(not exec\)/);
    expect(() => nomadRolloutDriver("docker", undefined)).toThrow(/add --images nix/);
    expect(() => nomadRolloutDriver("raw_exec", "nix", "1")).toThrow(/--images nix does not apply/);
  });
});
