import { describe, expect, it } from "vitest";
import { WorkerDriver } from "../../src/spec/worker-driver.js";
import { driverConfig } from "../../src/spec/worker-driver-config.js";
import { CLEAR_ENV, WORKSPACE_PREP } from "../../src/spec/worker-env.js";
import { WorkerSandbox } from "../../src/spec/worker-resources.js";
import { DIGEST } from "../helpers/worker-input.js";

const sandbox = WorkerSandbox.parse({});
const run = { command: "/bin/sh", args: ["-c", "echo hi"] };
const cfg = (d: unknown, o: Partial<Parameters<typeof driverConfig>[2]> = {}) =>
  driverConfig(WorkerDriver.parse(d), sandbox, { settings: { FLAKEGYM_AGENT: "0" }, ...o });

describe("driverConfig", () => {
  it("containers: a run replaces the image's entrypoint; without one the image's command and args stay", () => {
    const image = `img@${DIGEST}`;
    expect(cfg({ driver: "docker", image }, { run })).toMatchObject({
      entrypoint: ["/bin/sh"],
      args: run.args,
    });
    const own = cfg({ driver: "podman", image, command: "w", args: ["--x"] });
    expect(own).toMatchObject({ command: "w", args: ["--x"] });
    expect(own).not.toHaveProperty("entrypoint");
    expect(cfg({ driver: "podman", image })).not.toHaveProperty("args");
  });

  it("containers never carry the settings in their config (they go to the task's Env)", () => {
    expect(JSON.stringify(cfg({ driver: "docker", image: `img@${DIGEST}` }))).not.toContain("FLAKEGYM_AGENT");
  });

  it("raw_exec: a run executes directly under env -i, without the workspace preparation", () => {
    const c = cfg({ driver: "raw_exec", command: "/bin/w", allowUnisolated: true }, { run });
    expect(c.command).toBe("/bin/sh");
    expect(c.args).toEqual(expect.arrayContaining(["-c", CLEAR_ENV, "FLAKEGYM_AGENT=0"]));
    expect((c.args as string[]).slice(-3)).toEqual(["/bin/sh", "-c", "echo hi"]);
    expect(c.args).not.toContain(WORKSPACE_PREP);
  });

  it("nix: a run's arguments go to the profile's sh; without one the worker starts after the preparation", () => {
    const nix = { driver: "nix", flake: ".#worker", command: "flakegym-worker" };
    expect((cfg(nix, { run }).args as string[]).slice(-3)).toEqual(["sh", "-c", "echo hi"]);
    const own = cfg(nix).args as string[];
    expect(own.slice(-4)).toEqual(["-c", WORKSPACE_PREP, "flakegym-prep", "flakegym-worker"]);
  });
});
