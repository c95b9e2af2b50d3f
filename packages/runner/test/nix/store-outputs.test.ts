import { describe, expect, it } from "vitest";
import { withSnapshotClosure } from "../../src/cli/commands/rollout-store.js";
import { DENIED_SETGROUPS_ARGS, setgroupsDenied } from "../../src/nix/realise.js";
import { runningNixBin, runningNixStoreBin } from "../../src/nix/running-nix.js";
import { NIX_OUTPUTS_ENV, storeOutputsOf, storeSnapshotChoice } from "../../src/nix/store-outputs.js";
import { storeSnapshotLabels } from "../../src/snapshots/from-store.js";
import { storeToolchainLayout } from "../../src/workers/local/toolchain.js";

const p = (name: string) => `/nix/store/${"0123456789abcdfghijklmnpqrsvwxyz"}-${name}`;
const outputs = {
  schemaVersion: 1,
  nixpkgs: "standin",
  profiles: { node: { drv: p("node-env-toolchain.drv"), out: p("node-env-toolchain") } },
  snapshots: {
    "semver-lite-caret-zero": { drv: p("snap-semver.drv"), out: p("snap-semver"), imageDirs: [] },
    "stats-empty-mean": { drv: p("snap-stats.drv"), out: p("snap-stats"), imageDirs: ["cargo-home"] },
    "bytesize-unit-boundary": { drv: p("snap-py.drv"), out: p("snap-py"), imageDirs: ["python-deps"] },
  },
};
const env = (v: unknown) => ({ [NIX_OUTPUTS_ENV]: typeof v === "string" ? v : JSON.stringify(v) });

describe("the rollout app's store outputs (FLAKEGYM_NIX_OUTPUTS)", () => {
  it("are absent outside the app and parsed inside it", () => {
    expect(storeOutputsOf({})).toBeUndefined();
    expect(storeOutputsOf(env(outputs))?.profiles.node?.out).toBe(p("node-env-toolchain"));
  });

  it("refuse a malformed value naming the variable and the field", () => {
    expect(() => storeOutputsOf(env("{"))).toThrow(/FLAKEGYM_NIX_OUTPUTS is not JSON/);
    const bad = { ...outputs, profiles: { node: { drv: "/tmp/evil.drv", out: p("x") } } };
    expect(() => storeOutputsOf(env(bad))).toThrow(
      /FLAKEGYM_NIX_OUTPUTS field profiles\.node\.drv: not a store path/,
    );
    expect(() => storeOutputsOf(env({ ...outputs, extra: 1 }))).toThrow(/FLAKEGYM_NIX_OUTPUTS/);
  });

  it("give a task's snapshot when the local backend can use what it keeps beside the work tree, else say why", () => {
    const o = storeOutputsOf(env(outputs))!;
    expect(storeSnapshotChoice(o, "semver-lite-caret-zero")).toEqual({
      use: true,
      output: { drv: p("snap-semver.drv"), out: p("snap-semver") },
    });
    // cargo-home is a config naming the vendored crates' store path: copied as CARGO_HOME
    expect(storeSnapshotChoice(o, "stats-empty-mean")).toEqual({
      use: true,
      output: { drv: p("snap-stats.drv"), out: p("snap-stats") },
    });
    expect(storeSnapshotChoice(o, "bytesize-unit-boundary")).toEqual({
      use: false,
      reason:
        "its snapshot keeps dependencies in python-deps, which only its image provides (--backend podman --images nix)",
    });
    expect(storeSnapshotChoice(o, "nope")).toEqual({
      use: false,
      reason: "the flake has no snapshot for task nope",
    });
  });
});

describe("the Nix the app runs under", () => {
  it("is FLAKEGYM_NIX_BIN when a wrapper names it, else PATH's; nix-store beside it", () => {
    expect(runningNixBin({})).toBe("nix");
    expect(runningNixStoreBin({})).toBe("nix-store");
    const e = { FLAKEGYM_NIX_BIN: "/opt/modern-nix/bin/nix" };
    expect(runningNixBin(e)).toBe("/opt/modern-nix/bin/nix");
    expect(runningNixStoreBin(e)).toBe("/opt/modern-nix/bin/nix-store");
  });

  it("is told supplementary groups cannot be dropped only where setgroups is denied", () => {
    expect(setgroupsDenied("deny\n")).toBe(true);
    expect(setgroupsDenied("allow\n")).toBe(false);
    expect(setgroupsDenied(undefined)).toBe(false);
    expect(DENIED_SETGROUPS_ARGS).toEqual(["--option", "require-drop-supplementary-groups", "false"]);
  });
});

describe("a store toolchain in the sandbox", () => {
  it("also binds a store snapshot's closure, without the work tree itself and no path twice", () => {
    const tc = { path: p("rust-env-toolchain"), closure: [p("rust-env-toolchain"), p("glibc")] };
    const snap = { path: p("snap-ratatui"), closure: [p("snap-ratatui"), p("cargo-vendor-dir"), p("glibc")] };
    expect(withSnapshotClosure(tc, snap)).toEqual({
      path: p("rust-env-toolchain"),
      closure: [p("rust-env-toolchain"), p("glibc"), p("cargo-vendor-dir")],
    });
    expect(withSnapshotClosure(tc, undefined)).toBe(tc);
  });

  it("puts its bin first on PATH and binds its closure once, beside the node's", () => {
    const node = { binds: [{ src: p("node"), dest: p("node") }], path: [`${p("node")}/bin`] };
    const t = { path: p("node-env-toolchain"), closure: [p("node-env-toolchain"), p("node"), p("glibc")] };
    expect(storeToolchainLayout(t, node)).toEqual({
      binds: [
        { src: p("node"), dest: p("node") },
        { src: p("node-env-toolchain"), dest: p("node-env-toolchain") },
        { src: p("glibc"), dest: p("glibc") },
      ],
      path: [`${p("node-env-toolchain")}/bin`, `${p("node")}/bin`],
    });
  });
});

describe("a store snapshot's labels", () => {
  it("are snapshot.json's task, commit and profile (anything else is empty, so the label check fails)", () => {
    expect(storeSnapshotLabels({ task: "t", commit: "c", profile: "node", key: "k" })).toEqual({
      "org.flakegym.task": "t",
      "org.flakegym.snapshot.commit": "c",
      "org.flakegym.snapshot.profile": "node",
    });
    expect(storeSnapshotLabels({ task: 1 })["org.flakegym.task"]).toBe("");
  });
});
