import { describe, expect, it } from "vitest";
import { checkNetworkMode, DEFAULT_WORKER_NETWORK, networkModeProblem } from "../../src/spec/network-mode.js";

describe("networkModeProblem", () => {
  it("accepts a dedicated network, the default one included", () => {
    expect(networkModeProblem(DEFAULT_WORKER_NETWORK)).toBeUndefined();
    expect(networkModeProblem("team-a-egress")).toBeUndefined();
  });

  it("refuses modes with open egress, saying what each exposes", () => {
    expect(networkModeProblem("host")).toContain("Nomad API");
    expect(networkModeProblem("bridge")).toContain("NAT to anywhere");
    expect(networkModeProblem("Bridge")).toContain("NAT to anywhere");
    for (const m of ["default", "slirp4netns", "pasta", "private", ""]) {
      expect(networkModeProblem(m), m).toBeDefined();
    }
  });

  it("refuses 'none' (nothing reaches the core) and another container's namespace", () => {
    expect(networkModeProblem("none")).toContain("cannot reach the core");
    for (const m of ["container:abc", "ns:/proc/1/ns/net", "task:worker"]) {
      expect(networkModeProblem(m), m).toContain("another container's network namespace");
    }
  });

  it("checkNetworkMode names the option and the network to create", () => {
    expect(() => checkNetworkMode("bridge")).toThrow(/networkMode \(--network-mode\).*flakegym-egress/);
    expect(() => checkNetworkMode("flakegym-egress")).not.toThrow();
  });
});
