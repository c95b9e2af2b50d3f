import { describe, expect, it } from "vitest";
import { CORE_GC_PRELOAD_PATH } from "../src/core-gc.js";
import { CORE_PROBES_PRELOAD_PATH } from "../src/core-probes.js";
import { notStartedMessage, SUPERVISOR_PATH, supervisorArgv } from "../src/launcher.js";

const base = {
  pkg: { hostBinary: "/p/host", coreJs: "/p/core.js", nodeModules: "/p/nm", fakeNodeModules: "/p/fake" },
  workspace: "/w",
  configDir: "/c",
  logFile: "/c/core.log",
  listen: { kind: "tcp" } as const,
  stopGraceMs: 3000,
  nice: undefined,
  memoryMerge: { on: false, reason: "off" } as const,
  oneByte: { on: false, reason: "off" } as const,
  extra: [],
  node: "/bin/node",
};

/** The value after `flag` in `argv`. */
const after = (argv: string[], flag: string) => argv[argv.indexOf(flag) + 1];

describe("supervisorArgv", () => {
  it("passes the package, dirs, log, a free loopback port, the grace less 500 ms and the node binary", () => {
    const argv = supervisorArgv(base);
    expect(argv[0]).toBe(SUPERVISOR_PATH);
    expect(after(argv, "--host-bin")).toBe("/p/host");
    expect(after(argv, "--core-js")).toBe("/p/core.js");
    expect(after(argv, "--node-path")).toBe("/p/nm:/p/fake");
    expect(after(argv, "--workspace")).toBe("/w");
    expect(after(argv, "--config")).toBe("/c");
    expect(after(argv, "--log")).toBe("/c/core.log");
    expect(after(argv, "--core-address")).toBe("127.0.0.1:0");
    expect(after(argv, "--grace-ms")).toBe("2500");
    expect(after(argv, "--node")).toBe("/bin/node");
    expect(argv.at(-1)).toBe("--watch-stdin");
    expect(argv).not.toContain("--nice");
    expect(argv).not.toContain("--core-prefix");
  });

  it("binds a unix socket by its absolute path, clamps the grace at 0, adds nice, merge prefix and extra flags last", () => {
    const argv = supervisorArgv({
      ...base,
      listen: { kind: "unix", path: "/run/../run/core.sock" },
      stopGraceMs: 100,
      nice: 0,
      memoryMerge: { on: true, prefix: ["prctl", "--merge"] },
      extra: ["--forward", "127.0.0.1:4000=unix:/gw.sock"],
    });
    expect(after(argv, "--core-address")).toBe("unix:/run/core.sock");
    expect(after(argv, "--grace-ms")).toBe("0");
    expect(after(argv, "--nice")).toBe("0");
    expect(argv.slice(-6)).toEqual([
      "--core-prefix",
      "prctl",
      "--core-prefix",
      "--merge",
      "--forward",
      "127.0.0.1:4000=unix:/gw.sock",
    ]);
  });

  it("loads core-gc.cjs into the core (two --core-node-args) only when asked", () => {
    expect(supervisorArgv(base)).not.toContain("--core-node-arg");
    const argv = supervisorArgv({ ...base, gcOnSignal: true });
    const i = argv.indexOf("--core-node-arg");
    expect(argv.slice(i, i + 4)).toEqual([
      "--core-node-arg",
      "--require",
      "--core-node-arg",
      CORE_GC_PRELOAD_PATH,
    ]);
  });

  it("loads core-probes-install.cjs after core-gc.cjs only when asked", () => {
    const argv = supervisorArgv({ ...base, gcOnSignal: true, answerProbes: true });
    const args = argv.flatMap((a, i) => (argv[i - 1] === "--core-node-arg" ? [a] : []));
    expect(args).toEqual(["--require", CORE_GC_PRELOAD_PATH, "--require", CORE_PROBES_PRELOAD_PATH]);
    expect(supervisorArgv({ ...base, gcOnSignal: true })).not.toContain(CORE_PROBES_PRELOAD_PATH);
  });

  it("loads the mapped core's preload only when it and the one-byte bundle are on", () => {
    const oneByte = { on: true, coreJs: "/ob/core.js", dir: "/ob" } as const;
    const mappedCore = { on: true, dir: "/m", preload: "/m/core-memory.cjs" } as const;
    const args = (argv: string[]) => argv.flatMap((a, i) => (argv[i - 1] === "--core-node-arg" ? [a] : []));
    expect(args(supervisorArgv({ ...base, oneByte, mappedCore }))).toEqual([
      "--require",
      "/m/core-memory.cjs",
    ]);
    expect(args(supervisorArgv({ ...base, mappedCore }))).toEqual([]); // the one-byte bundle off
    expect(args(supervisorArgv({ ...base, oneByte, mappedCore: { on: false, reason: "off" } }))).toEqual([]);
  });

  it("runs the one-byte bundle's core when that decision is on", () => {
    const argv = supervisorArgv({ ...base, oneByte: { on: true, coreJs: "/ob/core.js", dir: "/ob" } });
    expect(after(argv, "--core-js")).toBe("/ob/core.js");
  });
});

describe("notStartedMessage", () => {
  const a = { command: "bwrap", spawnError: undefined, exited: false, startTimeoutMs: 1500 };
  it("names a spawn error first, then an early exit, else the start timeout", () => {
    expect(notStartedMessage({ ...a, spawnError: new Error("ENOENT"), exited: true })).toBe(
      "could not spawn bwrap: ENOENT",
    );
    expect(notStartedMessage({ ...a, exited: true })).toBe(
      "the supervisor exited before starting cline-host and cline-core",
    );
    expect(notStartedMessage(a)).toBe("the supervisor did not start the core within 1500 ms");
  });
});
