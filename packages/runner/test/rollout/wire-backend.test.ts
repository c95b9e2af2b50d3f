import { describe, expect, it } from "vitest";
import { UsageError } from "../../src/errors.js";
import {
  advertiseListenOf,
  backendConfigOf,
  checkGatewayAdvertise,
  poolFor,
  wantsPool,
} from "../../src/rollout/wire-backend.js";
import type { WireOptions } from "../../src/rollout/wire-options.js";
import { parseGatewayAdvertise } from "../../src/workers/nomad/gateway.js";
import { createDummyPoolable } from "../../src/workers/pool/dummy-backend.js";

const options = (over: Partial<WireOptions> = {}): WireOptions => ({
  runId: "RUN",
  signal: new AbortController().signal,
  env: {},
  ...over,
});

describe("advertiseListenOf", () => {
  it("splits an IPv4 host:port", () => {
    expect(advertiseListenOf(parseGatewayAdvertise("10.0.0.5:8089"))).toEqual({
      host: "10.0.0.5",
      port: 8089,
    });
  });

  it("drops the brackets of an IPv6 address (the last colon is the port's)", () => {
    expect(advertiseListenOf("[fd00::5]:8089")).toEqual({ host: "fd00::5", port: 8089 });
  });
});

describe("checkGatewayAdvertise", () => {
  it("refuses --backend nomad without an address, naming the flag", () => {
    expect(() => checkGatewayAdvertise("nomad", undefined)).toThrow(UsageError);
    expect(() => checkGatewayAdvertise("nomad", undefined)).toThrow(/--gateway-advertise <host:port>/);
  });

  it("lets nomad with an address, and the local backends without one, through", () => {
    expect(() => checkGatewayAdvertise("nomad", "10.0.0.5:8089")).not.toThrow();
    expect(() => checkGatewayAdvertise("local", undefined)).not.toThrow();
    expect(() => checkGatewayAdvertise("podman", undefined)).not.toThrow();
  });
});

describe("backendConfigOf", () => {
  it("gives local and podman their images, host unless --images nix", () => {
    expect(backendConfigOf({ backend: "local" }, {}, undefined)).toEqual({ kind: "local" });
    expect(backendConfigOf({ backend: "podman" }, {}, undefined)).toEqual({ kind: "podman", images: "host" });
    expect(backendConfigOf({ backend: "podman", images: "nix" }, {}, undefined)).toEqual({
      kind: "podman",
      images: "nix",
    });
  });

  it("gives nomad the advertised address and the driver FLAKEGYM_NOMAD_DRIVER names", () => {
    expect(
      backendConfigOf(
        { backend: "nomad", images: "nix" },
        { FLAKEGYM_NOMAD_DRIVER: "podman" },
        "10.0.0.5:8089",
      ),
    ).toEqual({ kind: "nomad", images: "nix", gatewayAdvertise: "10.0.0.5:8089", driver: "podman" });
    expect(
      backendConfigOf(
        { backend: "nomad" },
        { FLAKEGYM_NOMAD_DRIVER: "raw_exec", FLAKEGYM_NOMAD_ALLOW_UNISOLATED: "1" },
        "10.0.0.5:8089",
      ),
    ).toMatchObject({ kind: "nomad", images: "host", driver: "raw_exec" });
  });

  it("refuses nomad without a driver, naming the variable", () => {
    expect(() => backendConfigOf({ backend: "nomad" }, {}, "10.0.0.5:8089")).toThrow(/FLAKEGYM_NOMAD_DRIVER/);
  });
});

describe("the warm pool", () => {
  it("is wanted only with a size above 0", () => {
    expect(wantsPool(undefined)).toBe(false);
    expect(wantsPool({ size: 0, idleMs: 1000 })).toBe(false);
    expect(wantsPool({ size: 2, idleMs: 1000 })).toBe(true);
  });

  it("is none without --pool, even in front of a backend that can pre-boot", () => {
    expect(poolFor(createDummyPoolable(), options())).toBeUndefined();
    expect(poolFor(createDummyPoolable(), options({ pool: { size: 0, idleMs: 1000 } }))).toBeUndefined();
  });

  it("stands in front of a backend that can pre-boot workers", async () => {
    const pool = poolFor(createDummyPoolable(), options({ pool: { size: 1, idleMs: 1000 } }));
    expect(pool).toBeDefined();
    await pool?.close();
  });
});
