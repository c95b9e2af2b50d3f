import { describe, expect, it } from "vitest";
import {
  ENV_RECIPE_VERSION,
  type EnvInstallInput,
  installKeyOf,
  planEnvInstall,
  pythonOfVenv,
  resolvedLines,
} from "../../src/snapshots/env-install.js";
import { snapshotKey } from "../../src/snapshots/key.js";
import { depsEnv, depsPath, OFFLINE_ENV } from "../../src/workers/local/shape.js";

const base: EnvInstallInput = {
  profile: "python",
  taskInstall: [],
  taskNetwork: "none",
  defaults: "auto",
  rootEntries: [],
  depsDir: "/deps",
  hasPins: false,
};
const plan = (o: Partial<EnvInstallInput>) => planEnvInstall({ ...base, ...o }).record;

describe("planEnvInstall", () => {
  it("a task's own install list wins, with the network the task declares", () => {
    const r = plan({
      profile: "rust",
      taskInstall: ["cargo build"],
      rootEntries: ["Cargo.toml", "Cargo.lock"],
    });
    expect(r).toMatchObject({ source: "task", commands: ["cargo build"], network: "none" });
    expect(plan({ taskInstall: ["make"], taskNetwork: "required" }).network).toBe("host");
  });

  it("python: a venv made by the sandbox's python3, requirements and the project, the resolved set written", () => {
    const r = planEnvInstall({
      ...base,
      rootEntries: ["pyproject.toml", "requirements.txt", "src", "README.md"],
    });
    expect(r.record.source).toBe("profile");
    expect(r.record.network).toBe("host");
    expect(r.record.manifests).toEqual(["pyproject.toml", "requirements.txt"]);
    // the interpreter the build chose for the task's Python, else the sandbox's own
    expect(r.record.commands[0]).toBe(
      '"${FLAKEGYM_PYTHON_INTERPRETER:-/usr/bin/python3}" -m venv /deps/venv',
    );
    expect(r.record.commands[1]).toMatch(
      /^\/deps\/venv\/bin\/python -m pip install .* -r requirements\.txt -e \. pytest$/,
    );
    expect(r.record.commands[2]).toContain(
      "freeze --disable-pip-version-check --all --exclude-editable > /deps/env-lock.txt",
    );
    expect(r.resolvedFile).toBe("env-lock.txt");
    expect(r.record.pinned).toBe(false);
  });

  it("python: every requirements*.txt at the root but documentation ones", () => {
    const r = plan({
      rootEntries: [
        "requirements_test.txt",
        "requirements-docs.txt",
        "requirements.txt",
        "requirements.in",
        "docs",
      ],
    });
    expect(r.manifests).toEqual(["requirements.txt", "requirements_test.txt"]);
    expect(r.commands[1]).toContain(" -r requirements.txt -r requirements_test.txt pytest");
    expect(r.commands[1]).not.toContain("-e .");
  });

  it("python: a previous build's resolved set constrains the rebuild", () => {
    const r = plan({ rootEntries: ["setup.py"], hasPins: true });
    expect(r.commands[1]).toContain(" -c /deps/env-pins.txt -e . pytest");
    expect(r.pinned).toBe(true);
  });

  it("rust fetches what Cargo.lock pins (--locked), go downloads modules, node runs npm ci from a lock", () => {
    expect(plan({ profile: "rust", rootEntries: ["Cargo.toml", "Cargo.lock"] }).commands).toEqual([
      "cargo fetch --locked",
    ]);
    expect(plan({ profile: "rust", rootEntries: ["Cargo.toml"] }).commands).toEqual(["cargo fetch"]);
    expect(plan({ profile: "go", rootEntries: ["go.mod", "go.sum"] })).toMatchObject({
      commands: ["GOFLAGS=-mod=mod go mod download"],
      lockFile: "go.sum",
    });
    expect(plan({ profile: "node", rootEntries: ["package.json", "package-lock.json"] })).toMatchObject({
      commands: ["npm ci --no-audit --no-fund"],
      lockFile: "package-lock.json",
    });
  });

  it("nothing to install names why", () => {
    expect(plan({ profile: "c", rootEntries: ["Makefile"] })).toMatchObject({ source: "none", commands: [] });
    expect(plan({ profile: "go", rootEntries: ["go.mod", "vendor"] }).reason).toContain("vendored");
    expect(plan({ profile: "node", rootEntries: ["package.json", "yarn.lock"] }).reason).toContain(
      "npm ci needs one",
    );
    expect(plan({ rootEntries: ["main.py"] }).reason).toContain("no pyproject.toml");
    expect(plan({ rootEntries: ["pyproject.toml"], defaults: "off" })).toMatchObject({
      source: "none",
      network: "none",
    });
  });
});

describe("installKeyOf (the snapshot key's install input)", () => {
  it("is the task's list, nothing for an 'off' catalog dir, else the profile's recipe", () => {
    expect(installKeyOf({ profile: "go", taskInstall: ["go build"], defaults: "auto" })).toEqual([
      "go build",
    ]);
    expect(installKeyOf({ profile: "go", taskInstall: [], defaults: "off" })).toEqual([]);
    expect(installKeyOf({ profile: "go", taskInstall: [], defaults: "auto" })).toEqual([
      `flakegym-env-install:go:v${ENV_RECIPE_VERSION}`,
    ]);
  });

  it("so the key changes between the default, another profile's default and a task's list", () => {
    const key = (install: string[], commit = "a".repeat(40)) =>
      snapshotKey({
        repo: "r",
        commit,
        profile: "python",
        install,
        smoke: [],
        toolchain: [],
        network: "none",
      });
    const keys = [
      key(installKeyOf({ profile: "python", taskInstall: [], defaults: "auto" })),
      key(installKeyOf({ profile: "rust", taskInstall: [], defaults: "auto" })),
      key(installKeyOf({ profile: "python", taskInstall: ["pip install ."], defaults: "auto" })),
      key(installKeyOf({ profile: "python", taskInstall: [], defaults: "off" })),
      // a changed lock or manifest file is a new commit
      key(installKeyOf({ profile: "python", taskInstall: [], defaults: "auto" }), "b".repeat(40)),
    ];
    expect(new Set(keys).size).toBe(keys.length);
  });
});

describe("the environment later sandboxes get", () => {
  it("the venv is active only when the install made one; package managers are told to stay offline", () => {
    expect(depsEnv("/deps", { venv: true }).VIRTUAL_ENV).toBe("/deps/venv");
    expect(depsEnv("/deps")).not.toHaveProperty("VIRTUAL_ENV");
    expect(depsEnv("/deps")).toMatchObject({ CARGO_HOME: "/deps/cargo", GOMODCACHE: "/deps/go/mod" });
    expect(depsPath("/deps", "python")).toEqual(["/deps/venv/bin"]);
    expect(depsPath("/deps", "rust")).toEqual([]);
    expect(OFFLINE_ENV).toMatchObject({ CARGO_NET_OFFLINE: "true", GOPROXY: "off", PIP_NO_INDEX: "1" });
  });

  it("resolvedLines keeps the package lines of a pip freeze", () => {
    expect(resolvedLines("# comment\nsix==1.17.0\n\npytest==8.3.4\n")).toEqual([
      "six==1.17.0",
      "pytest==8.3.4",
    ]);
  });
});

describe("pythonOfVenv (the venv's Python against the task's)", () => {
  const cfg = "home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.11.2\n";
  it("records the venv's version; the same major.minor matches whatever the patch level", () => {
    expect(pythonOfVenv(cfg, undefined)).toEqual({ used: "3.11.2", matches: true });
    expect(pythonOfVenv(cfg, "3.11")).toEqual({ wanted: "3.11", used: "3.11.2", matches: true });
    expect(pythonOfVenv("version_info = 3.12.1.final.0\n", "3.12")).toMatchObject({
      used: "3.12.1",
      matches: true,
    });
  });
  it("says what a mismatch means, naming both versions", () => {
    const p = pythonOfVenv(cfg, "3.9");
    expect(p).toMatchObject({ wanted: "3.9", used: "3.11.2", matches: false });
    expect(p?.note).toContain("runs it under Python 3.9; this snapshot's venv runs Python 3.11.2");
    // no claim that another CPython cannot be had: the build chooses one (python-choice.ts)
    expect(p?.note).not.toContain("installable");
  });
  it("a pyvenv.cfg naming no version records nothing", () => {
    expect(pythonOfVenv("home = /usr/bin\n", "3.9")).toBeUndefined();
  });
});
