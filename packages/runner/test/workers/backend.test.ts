import { describe, expect, it } from "vitest";
import { UsageError } from "../../src/errors.js";
import {
  capabilitiesOf,
  createBackend,
  isMadeBackend,
  parseBackendConfig,
  resolveBackend,
} from "../../src/workers/backend.js";
import { LOCAL_CAPABILITIES } from "../../src/workers/local/local-backend.js";
import { NOMAD_CAPABILITIES, nomadHostForks } from "../../src/workers/nomad/backend.js";
import { PODMAN_CAPABILITIES } from "../../src/workers/podman/podman-backend.js";
import { createDummyPoolable } from "../../src/workers/pool/dummy-backend.js";

const nomad = { kind: "nomad", images: "nix", gatewayAdvertise: "10.0.0.5:8089", driver: "docker" } as const;

describe("parseBackendConfig", () => {
  it("accepts each backend with its own fields, defaulting Nomad's poll interval", () => {
    expect(parseBackendConfig({ kind: "local" })).toEqual({ kind: "local" });
    expect(parseBackendConfig({ kind: "podman", images: "host" })).toEqual({
      kind: "podman",
      images: "host",
    });
    expect(parseBackendConfig(nomad)).toEqual({ ...nomad, pollMs: 5_000 });
  });

  it("names the missing field of a variant", () => {
    expect(() => parseBackendConfig({ kind: "podman" })).toThrow(UsageError);
    expect(() => parseBackendConfig({ kind: "podman" })).toThrow(/images/);
    const { gatewayAdvertise: _, ...noAddress } = nomad;
    expect(() => parseBackendConfig(noAddress)).toThrow(/gatewayAdvertise/);
    expect(() => parseBackendConfig({ ...nomad, gatewayAdvertise: "" })).toThrow(/gatewayAdvertise/);
  });

  it("names a field that belongs to another backend, and an unknown kind", () => {
    expect(() => parseBackendConfig({ kind: "local", images: "nix" })).toThrow(/images/);
    expect(() => parseBackendConfig({ kind: "podman", images: "host", driver: "docker" })).toThrow(/driver/);
    expect(() => parseBackendConfig({ kind: "docker" })).toThrow(/kind/);
    expect(() => parseBackendConfig({ ...nomad, driver: "nix" })).toThrow(/driver/);
  });
});

describe("backend capabilities", () => {
  it("are each backend's own declaration, by name", () => {
    expect(capabilitiesOf("local")).toBe(LOCAL_CAPABILITIES);
    expect(capabilitiesOf("podman")).toBe(PODMAN_CAPABILITIES);
    expect(capabilitiesOf("nomad")).toBe(NOMAD_CAPABILITIES);
  });

  it("say what each backend's name used to decide, unchanged", () => {
    expect(capabilitiesOf("local")).toEqual({
      bindsHiddenReadOnly: true,
      hostHasSnapshotTree: true,
      needsRoutableGateway: false,
      runsHostImages: false,
      usesOneByteCore: true,
      hostForks: true,
    });
    expect(capabilitiesOf("podman")).toEqual({
      bindsHiddenReadOnly: true,
      hostHasSnapshotTree: true,
      needsRoutableGateway: false,
      runsHostImages: true,
      usesOneByteCore: false,
      hostForks: true,
    });
    expect(capabilitiesOf("nomad")).toEqual({
      bindsHiddenReadOnly: false,
      hostHasSnapshotTree: false,
      needsRoutableGateway: true,
      runsHostImages: false,
      usesOneByteCore: false,
      hostForks: true,
    });
  });
});

describe("createBackend", () => {
  it("makes the backend the config names, declaring its capabilities (the real constructors; nothing starts)", async () => {
    const local = createBackend({ kind: "local" });
    expect([local.kind, local.capabilities]).toEqual(["local", LOCAL_CAPABILITIES]);
    const podman = createBackend({ kind: "podman", images: "host" });
    expect([podman.kind, podman.capabilities]).toEqual(["podman", PODMAN_CAPABILITIES]);
    const n = createBackend(nomad, { env: { NOMAD_ADDR: "http://127.0.0.1:1" } });
    // a docker allocation brings its workspace in the image: no fork on this host
    expect([n.kind, n.capabilities]).toEqual(["nomad", { ...NOMAD_CAPABILITIES, hostForks: false }]);
    await n.close?.();
  });

  it("forks on this host for Nomad only where the dispatch names the fork (raw_exec without a shared snapshotDir)", () => {
    const raw = { driver: "raw_exec" as const, command: "/bin/sh", args: [], allowUnisolated: true };
    expect(nomadHostForks({ driver: raw, snapshotDir: undefined })).toBe(true);
    expect(nomadHostForks({ driver: raw, snapshotDir: "/shared/tree" })).toBe(false);
    expect(nomadHostForks({ driver: { driver: "docker" } as never, snapshotDir: undefined })).toBe(false);
  });

  it("refuses an invalid config before making anything, naming the field", () => {
    expect(() => createBackend({ kind: "nomad", images: "nix", driver: "docker" } as never)).toThrow(
      /gatewayAdvertise/,
    );
  });
});

describe("resolveBackend (the one selection every command and the API use)", () => {
  it("keeps a backend the caller made, not owned (the caller closes it)", () => {
    const made = createDummyPoolable();
    expect(isMadeBackend(made)).toBe(true);
    const r = resolveBackend(made);
    expect(r.backend).toBe(made);
    expect(r.owned).toBe(false);
  });

  it("makes the backend a config names, owned; local when nothing is chosen", async () => {
    expect(isMadeBackend({ kind: "local" })).toBe(false);
    const none = resolveBackend(undefined);
    expect([none.backend.kind, none.owned]).toEqual(["local", true]);
    const podman = resolveBackend({ kind: "podman", images: "host" });
    expect([podman.backend.kind, podman.owned]).toEqual(["podman", true]);
    const n = resolveBackend(nomad, { env: { NOMAD_ADDR: "http://127.0.0.1:1" } });
    expect([n.backend.kind, n.owned]).toEqual(["nomad", true]);
    await n.backend.close?.();
  });

  it("refuses an invalid config, naming the field", () => {
    expect(() => resolveBackend({ kind: "podman" } as never)).toThrow(/images/);
  });
});
