import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { WorkerDriver } from "../../src/spec/worker-driver.js";
import {
  CLEAR_ENV,
  CONTAINER_WORKSPACE,
  defaultWorkspace,
  envArgv,
  nomadRuntimeAllowlist,
  nomadVar,
  WORKER_ENV,
  WORKSPACE_PREP,
  workerEnvironment,
  workerSettings,
} from "../../src/spec/worker-env.js";
import { META } from "../../src/spec/worker-names.js";
import { DIGEST } from "../helpers/worker-input.js";

const docker = WorkerDriver.parse({ driver: "docker", image: `img@${DIGEST}` });
const rawExec = WorkerDriver.parse({ driver: "raw_exec", command: "/bin/w", allowUnisolated: true });

describe("the worker's environment", () => {
  it("nomadRuntimeAllowlist: the entrypoint's Nomad variables and three per port label, each a Nomad variable reference", () => {
    const allow = nomadRuntimeAllowlist(["grpc"]);
    expect(Object.keys(allow).sort()).toEqual(
      [
        "NOMAD_ALLOC_DIR",
        "NOMAD_TASK_DIR",
        "NOMAD_ALLOC_ID",
        "NOMAD_JOB_ID",
        `NOMAD_META_${META.trajectory}`,
        "NOMAD_IP_grpc",
        "NOMAD_PORT_grpc",
        "NOMAD_ADDR_grpc",
      ].sort(),
    );
    for (const [k, v] of Object.entries(allow)) expect(v).toBe(nomadVar(k));
    expect(nomadVar("NOMAD_JOB_ID")).toBe("$" + "{NOMAD_JOB_ID}");
  });

  it("workerEnvironment: LANG, the allowlist, then the settings (which win)", () => {
    const env = workerEnvironment({ LANG: "de_DE.UTF-8", FOO: "1" }, []);
    expect(env.LANG).toBe("de_DE.UTF-8");
    expect(env.FOO).toBe("1");
    expect(env.NOMAD_ALLOC_DIR).toBe(nomadVar("NOMAD_ALLOC_DIR"));
    expect(workerEnvironment({}, []).LANG).toBe("C.UTF-8");
  });

  it("workerEnvironment refuses a name that is not an environment variable, naming it", () => {
    for (const bad of ["1ABC", "A-B", "A=B", "", "A B"]) {
      expect(() => workerEnvironment({ [bad]: "x" }, [])).toThrow(
        `worker env: '${bad}' is not an environment variable name`,
      );
    }
  });

  it("envArgv: sh -c CLEAR_ENV, then K=V in order, then the argv untouched", () => {
    expect(envArgv({ A: "1", B: "x=y" }, ["/bin/w", "--flag"])).toEqual([
      "-c",
      CLEAR_ENV,
      "flakegym-env",
      "A=1",
      "B=x=y",
      "/bin/w",
      "--flag",
    ]);
  });

  it("the shell steps carry no Nomad interpolation (a dollar-brace)", () => {
    expect(CLEAR_ENV).not.toContain("$" + "{");
    expect(WORKSPACE_PREP).not.toContain("$" + "{");
  });

  it("defaultWorkspace: the image's /workspace in containers, the allocation dir otherwise", () => {
    expect(defaultWorkspace(docker)).toBe(CONTAINER_WORKSPACE);
    expect(defaultWorkspace(rawExec)).toBe(`${nomadVar("NOMAD_ALLOC_DIR")}/workspace`);
  });

  it("workerSettings: the snapshot dir from the dispatch wins over a fixed one; none without either", () => {
    const s = (o: Partial<Parameters<typeof workerSettings>[0]>) =>
      workerSettings({ driver: rawExec, agent: true, ...o })[WORKER_ENV.snapshotDir];
    expect(s({ snapshotDir: "/snap", snapshotDirFromDispatch: true })).toBe(
      nomadVar(`NOMAD_META_${META.snapshotDir}`),
    );
    expect(s({ snapshotDir: "/snap" })).toBe("/snap");
    expect(s({})).toBeUndefined();
  });

  it("workerSettings: a policy URL brings the per-dispatch gateway route and core token, both from meta", () => {
    const withPolicy = workerSettings({
      driver: docker,
      agent: true,
      policyBaseUrl: "http://10.0.0.5:8089/v1",
    });
    expect(withPolicy[WORKER_ENV.policyBaseUrl]).toBe(nomadVar(`NOMAD_META_${META.policyUrl}`));
    expect(withPolicy[WORKER_ENV.coreToken]).toBe(nomadVar(`NOMAD_META_${META.coreToken}`));
    expect(withPolicy[WORKER_ENV.agent]).toBe("1");
    const without = workerSettings({ driver: docker, agent: false, workspaceDir: "/w" });
    expect(without).not.toHaveProperty(WORKER_ENV.policyBaseUrl);
    expect(without).not.toHaveProperty(WORKER_ENV.coreToken);
    expect(without[WORKER_ENV.agent]).toBe("0");
    expect(without[WORKER_ENV.workspace]).toBe("/w");
  });

  it("the preparation step creates the worker's dirs and fills an empty workspace from the snapshot (real sh)", () => {
    const root = mkdtempSync(join(tmpdir(), "flakegym-prep-"));
    try {
      const snap = join(root, "snap");
      mkdirSync(snap);
      writeFileSync(join(snap, "a.txt"), "A");
      const env = {
        PATH: process.env.PATH,
        FLAKEGYM_WORKSPACE: join(root, "ws"),
        FLAKEGYM_CONFIG_DIR: join(root, "cfg"),
        FLAKEGYM_HOME: join(root, "home"),
        FLAKEGYM_SNAPSHOT_DIR: snap,
      };
      const check =
        'ls "$FLAKEGYM_WORKSPACE"; test -d "$FLAKEGYM_CONFIG_DIR" && test -d "$FLAKEGYM_HOME" && echo dirs-ok';
      const run = () =>
        execFileSync("/bin/sh", ["-c", WORKSPACE_PREP, "prep", "/bin/sh", "-c", check], {
          env,
          encoding: "utf8",
        });
      expect(run()).toBe("a.txt\ndirs-ok\n");
      // A workspace that has content is left alone.
      writeFileSync(join(snap, "b.txt"), "B");
      expect(run()).toBe("a.txt\ndirs-ok\n");
      expect(existsSync(join(root, "ws", "b.txt"))).toBe(false);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
