import { describe, expect, it } from "vitest";
import { DoctorRow } from "../../src/doctor/probe.js";
import {
  chooseNixAppDefault,
  isNixApp,
  NIX_APP_ENV,
  nixAppFallbackMessage,
  nixRolloutRow,
  pinningFlag,
} from "../../src/images/nix-app.js";
import { nixBuildCapability } from "../../src/images/targets.js";
import type { MissingImage } from "../../src/images/worker-images.js";

const modern = nixBuildCapability("nix (Nix) 2.26.3");
const old = nixBuildCapability("nix (Nix) 2.8.0");
const podman = "podman version 4.3.1";
const missing = (taskId: string): MissingImage => ({
  taskId,
  profile: "rust",
  what: `no image recorded for task ${taskId} nor for its profile rust`,
  command: "flakegym images load --profile rust",
});

describe("the flake app's marker and the flags that pin the choice", () => {
  it("is the app only with FLAKEGYM_NIX_APP=1", () => {
    expect(NIX_APP_ENV).toBe("FLAKEGYM_NIX_APP");
    expect(isNixApp({ FLAKEGYM_NIX_APP: "1" })).toBe(true);
    expect(isNixApp({ FLAKEGYM_NIX_APP: "0" })).toBe(false);
    expect(isNixApp({})).toBe(false);
  });
  it("names the first of --backend, --images, --resume, --dataset given", () => {
    expect(pinningFlag({})).toBeUndefined();
    expect(pinningFlag({ backend: "local" })).toBe("backend");
    expect(pinningFlag({ images: "host" })).toBe("images");
    expect(pinningFlag({ resume: "runs/x" })).toBe("resume");
    expect(pinningFlag({ dataset: "rows.jsonl" })).toBe("dataset");
  });
});

describe("chooseNixAppDefault", () => {
  it("runs on the flake's images on podman when every task has one, even without a modern Nix", () => {
    for (const nix of [modern, old]) {
      expect(chooseNixAppDefault({ nix, podman, missing: [] })).toEqual({
        kind: "nix",
        backend: "podman",
        images: "nix",
      });
    }
  });
  it("falls back to local without podman, saying so", () => {
    const c = chooseNixAppDefault({ nix: modern, podman: undefined, missing: [] });
    expect(c).toMatchObject({ kind: "local", reason: expect.stringContaining("podman is not usable") });
  });
  it("falls back to local when a task has no image: the command to make it, or why it cannot be built", () => {
    const withNix = chooseNixAppDefault({ nix: modern, podman, missing: [missing("a"), missing("b")] });
    expect(withNix.kind).toBe("local");
    if (withNix.kind !== "local") return;
    expect(withNix.reason).toContain("task a (and 1 more task(s))");
    expect(withNix.reason).toContain("run: flakegym images load --profile rust");
    const withoutNix = chooseNixAppDefault({ nix: old, podman, missing: [missing("a")] });
    expect(withoutNix).toMatchObject({
      kind: "local",
      reason: expect.stringContaining("cannot build it: nix (Nix) 2.8.0 cannot evaluate nixpkgs"),
    });
    expect(nixAppFallbackMessage("why")).toMatch(
      /local backend \(this machine's \/usr\).*: why\. Pass --backend\/--images/,
    );
    expect(nixAppFallbackMessage("why", true)).toMatch(
      /local backend with the flake's toolchains and snapshots from the Nix store, not the flake's images: why\./,
    );
  });
});

describe("the doctor's rollout --images nix row", () => {
  const recordsFile = "cache/images.json";
  it("is ok with podman and recorded images, noting when new ones cannot be built", () => {
    const ok = nixRolloutRow({ nix: modern, podman, recorded: 2, recordsFile });
    expect(ok).toMatchObject({ check: "rollout --images nix", status: "ok" });
    expect(ok.value).toContain("2 image(s) recorded in cache/images.json");
    expect(ok.detail).toBeUndefined();
    const noBuild = nixRolloutRow({ nix: old, podman, recorded: 1, recordsFile });
    expect(noBuild.status).toBe("ok");
    expect(noBuild.detail).toContain("cannot be built here: nix (Nix) 2.8.0");
    expect(DoctorRow.parse(noBuild)).toEqual(noBuild);
  });
  it("is info saying why not and what to run", () => {
    const none = nixRolloutRow({ nix: modern, podman, recorded: 0, recordsFile });
    expect(none).toMatchObject({ status: "info", value: expect.stringContaining("local backend") });
    expect(none.detail).toContain("no images recorded in cache/images.json");
    expect(none.detail).toContain("run: flakegym images load --profile");
    const nothing = nixRolloutRow({
      nix: nixBuildCapability(undefined),
      podman: undefined,
      recorded: 0,
      recordsFile,
    });
    expect(nothing.detail?.split("\n")).toEqual([
      "podman is not usable (apt-get install podman runc)",
      "no images recorded in cache/images.json",
      "and none can be built here: `nix` is not installed (build them elsewhere with `flakegym images load`)",
    ]);
    const noPodman = nixRolloutRow({ nix: modern, podman: undefined, recorded: 3, recordsFile });
    expect(noPodman.status).toBe("info");
    expect(noPodman.detail).toBe("podman is not usable (apt-get install podman runc)");
    expect(DoctorRow.parse(nothing)).toEqual(nothing);
  });
});
