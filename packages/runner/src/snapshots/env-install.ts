import type { ProfileId } from "@flakegym/profiles";
import { match } from "ts-pattern";
import { z } from "zod";
import { PYTHON_INTERPRETER_ENV } from "../tasks/swebench-env-specs.js";
import { VENV_DIR } from "../workers/local/shape.js";
import { PYTHON_PROVIDERS } from "./python-choice.js";

/**
 * The environment install a snapshot build runs after the source step: a task's own `install` list
 * when it has one, else the profile's default for the files the repository declares (a venv with
 * its requirements for python, `cargo fetch` for rust, `go mod download` for go, `npm ci` for node,
 * nothing for c). Only this step reaches the network; every later sandbox finds what it installed in
 * the snapshot's deps dir (see depsEnv). Decisions here are pure; build.ts runs them.
 */

/** The resolved set an install recorded (pip freeze), inside the deps dir. */
export const ENV_LOCK_FILE = "env-lock.txt";
/** A previous build's resolved set, given back to pip as constraints so a rebuild is pinned. */
export const ENV_PINS_FILE = "env-pins.txt";

/**
 * Version of the default recipes below, part of the snapshot key: bump it when a default command
 * changes so no snapshot built by the old recipe is reused.
 */
export const ENV_RECIPE_VERSION = 2;

/** Files at the repository root that make a profile's default install apply. */
export const ENV_MANIFESTS: Readonly<Record<ProfileId, readonly string[]>> = {
  python: ["pyproject.toml", "setup.py", "setup.cfg"],
  rust: ["Cargo.toml", "Cargo.lock"],
  go: ["go.mod", "go.sum", "vendor"],
  node: ["package.json", "package-lock.json", "npm-shrinkwrap.json"],
  c: [],
  "dev-base": [],
};

/**
 * Python requirements files at the root (`requirements.txt`, `requirements-dev.txt`,
 * `requirements_test.txt`, …), except documentation ones (`requirements-docs.txt`): the tests do not
 * need a docs toolchain, and its pins often no longer install.
 */
export const REQUIREMENTS_FILE = /^requirements(?:[-_.](?!docs?\b)[\w.-]*)?\.txt$/;

/** The root entries that declare `profile`'s dependencies, in a stable order. Pure. */
export function manifestsOf(profile: ProfileId, rootEntries: readonly string[]): string[] {
  const named = ENV_MANIFESTS[profile].filter((f) => rootEntries.includes(f));
  if (profile !== "python") return named;
  return [...named, ...rootEntries.filter((f) => REQUIREMENTS_FILE.test(f)).sort()];
}

export const EnvInstallRecord = z
  .object({
    source: z
      .enum(["task", "profile", "none"])
      .describe(
        "task: the task's own install list ran; profile: the profile's default; none: nothing to install",
      ),
    reason: z.string().describe("why this install (or none) was chosen"),
    commands: z.array(z.string()).describe("the install commands, in order"),
    network: z.enum(["none", "host"]).describe("the network the install step had"),
    manifests: z.array(z.string()).describe("the root files the default was chosen from"),
    lockFile: z
      .string()
      .optional()
      .describe("the lock the install followed or wrote (repository path or deps file)"),
    lockSha256: z.string().optional().describe("sha256 of that lock's content after the install"),
    resolved: z
      .array(z.string())
      .optional()
      .describe(
        "the exact resolved set (python: `pip freeze` lines), given back as constraints on a rebuild",
      ),
    pinned: z.boolean().optional().describe("true when a previous build's resolved set constrained this one"),
    python: z
      .object({
        wanted: z
          .string()
          .optional()
          .describe(
            "the Python the task's source runs it under (SWE-bench's facts: `metadata.python_version`)",
          ),
        used: z.string().describe("the Python the snapshot's venv runs (its pyvenv.cfg)"),
        matches: z.boolean().describe("false when `wanted` names another major.minor than `used`"),
        note: z.string().optional().describe("what a mismatch means, for the build log and the reader"),
        provider: z
          .enum([...PYTHON_PROVIDERS, "sandbox"])
          .optional()
          .describe(
            "where the interpreter came from (python-choice.ts's chain: user, nix, uv, pyenv, path); sandbox: the sandbox's own python3, under --allow-python-mismatch",
          ),
        interpreter: z.string().optional().describe("the interpreter the venv was made with (host path)"),
        bind: z
          .string()
          .optional()
          .describe("its prefix, bound read-only at the same path into every sandbox of the snapshot"),
        allowedMismatch: z
          .boolean()
          .optional()
          .describe("true when the user allowed a run on another version (--allow-python-mismatch)"),
      })
      .strict()
      .optional()
      .describe("the interpreter of a snapshot with a venv, against the one the task asks for"),
  })
  .strict();
export type EnvInstallRecord = z.infer<typeof EnvInstallRecord>;

/**
 * The venv's Python (the `version` / `version_info` line of its pyvenv.cfg) against the one the
 * task wants: recorded always, with a note when their major.minor differ. Undefined when the text
 * names no version. Pure.
 */
export function pythonOfVenv(
  pyvenvCfg: string,
  wanted: string | undefined,
): EnvInstallRecord["python"] | undefined {
  const m = /^\s*version(?:_info)?\s*=\s*(\d+\.\d+(?:\.\d+)?)\b/m.exec(pyvenvCfg);
  if (!m) return undefined;
  const used = m[1]!;
  const minor = (v: string) => v.split(".").slice(0, 2).join(".");
  const matches = wanted === undefined || minor(wanted) === minor(used);
  return {
    ...(wanted !== undefined ? { wanted } : {}),
    used,
    matches,
    ...(matches
      ? {}
      : {
          note: `the task's source runs it under Python ${wanted}; this snapshot's venv runs Python ${used}: a test that depends on the interpreter's version may pass or fail differently`,
        }),
  };
}

/** What the build should run; `record` is what the manifest keeps (the lock digest is added after). */
export interface EnvInstallPlan {
  readonly record: EnvInstallRecord;
  /** Deps-dir file holding the resolved set after the install (python), read back into the manifest. */
  readonly resolvedFile?: string;
}

export interface EnvInstallInput {
  readonly profile: ProfileId;
  /** The task's explicit install commands (win when non-empty). */
  readonly taskInstall: readonly string[];
  /** Whether the task's source or explicit install needs network ("required") or not. */
  readonly taskNetwork: "none" | "required";
  /** "off" for self-contained catalog directories (authored offline, nothing to fetch). */
  readonly defaults: "auto" | "off";
  /** Names of the entries at the repository root (files and directories). */
  readonly rootEntries: readonly string[];
  /** The deps dir as seen inside the sandbox (`/deps`). */
  readonly depsDir: string;
  /** A previous build's resolved set exists (python: written to ENV_PINS_FILE before the install). */
  readonly hasPins: boolean;
}

/**
 * The `install` input of the snapshot key: the task's list; nothing for a catalog directory without
 * one; else the default recipe's identity, so a snapshot is rebuilt when the recipe changes. (The
 * lock and manifest files the default reads are pinned by the commit, also in the key.) Pure.
 */
export function installKeyOf(i: Pick<EnvInstallInput, "profile" | "taskInstall" | "defaults">): string[] {
  if (i.taskInstall.length > 0) return [...i.taskInstall];
  if (i.defaults === "off") return [];
  return [`flakegym-env-install:${i.profile}:v${ENV_RECIPE_VERSION}`];
}

/** Chooses the install for a snapshot (see the module comment). Pure. */
export function planEnvInstall(i: EnvInstallInput): EnvInstallPlan {
  const manifests = manifestsOf(i.profile, i.rootEntries);
  if (i.taskInstall.length > 0) {
    return {
      record: {
        source: "task",
        reason: "the task's own install list",
        commands: [...i.taskInstall],
        network: i.taskNetwork === "required" ? "host" : "none",
        manifests,
      },
    };
  }
  const none = (reason: string): EnvInstallPlan => ({
    record: { source: "none", reason, commands: [], network: "none", manifests },
  });
  if (i.defaults === "off")
    return none("a catalog directory installs nothing unless its task.json lists install commands");
  return match(i.profile)
    .with(
      "python",
      () =>
        pythonPlan(i, manifests) ??
        none("no pyproject.toml, setup.py, setup.cfg or requirements*.txt at the root"),
    )
    .with("rust", () => rustPlan(i, manifests) ?? none("no Cargo.toml at the root"))
    .with(
      "go",
      () => goPlan(i, manifests) ?? none("no go.mod at the root, or its modules are vendored (vendor/)"),
    )
    .with(
      "node",
      () =>
        nodePlan(manifests) ??
        none("no package-lock.json or npm-shrinkwrap.json at the root (npm ci needs one)"),
    )
    .with("c", "dev-base", (p) => none(`the ${p} profile installs nothing by default`))
    .exhaustive();
}

function profilePlan(
  reason: string,
  commands: string[],
  manifests: string[],
  extra: Partial<EnvInstallRecord> = {},
  resolvedFile?: string,
): EnvInstallPlan {
  return {
    record: { source: "profile", reason, commands, network: "host", manifests, ...extra },
    ...(resolvedFile ? { resolvedFile } : {}),
  };
}

/**
 * A venv made in the deps dir with the interpreter the build chose (PYTHON_INTERPRETER_ENV), else the
 * sandbox's /usr/bin/python3; the repository's requirements
 * files and the project itself (editable) installed with pytest, constrained by a previous build's
 * resolved set when there is one; the resolved set written for the manifest.
 */
function pythonPlan(i: EnvInstallInput, manifests: string[]): EnvInstallPlan | undefined {
  if (manifests.length === 0) return undefined;
  const venv = `${i.depsDir}/${VENV_DIR}`;
  const pip = `${venv}/bin/python -m pip`;
  const reqs = manifests.filter((f) => f.startsWith("requirements")).map((f) => `-r ${f}`);
  const project = manifests.some((f) => f === "pyproject.toml" || f === "setup.py" || f === "setup.cfg")
    ? ["-e ."]
    : [];
  const pins = i.hasPins ? [`-c ${i.depsDir}/${ENV_PINS_FILE}`] : [];
  return profilePlan(
    `python: a venv with ${manifests.join(", ")} installed`,
    [
      `"\${${PYTHON_INTERPRETER_ENV}:-/usr/bin/python3}" -m venv ${venv}`,
      `${pip} install --disable-pip-version-check --no-input -q ${[...pins, ...reqs, ...project, "pytest"].join(" ")}`,
      `${pip} freeze --disable-pip-version-check --all --exclude-editable > ${i.depsDir}/${ENV_LOCK_FILE}`,
    ],
    manifests,
    { lockFile: ENV_LOCK_FILE, pinned: i.hasPins },
    ENV_LOCK_FILE,
  );
}

/** Crates into CARGO_HOME (the deps dir), exactly as Cargo.lock pins them when there is one. */
function rustPlan(_i: EnvInstallInput, manifests: string[]): EnvInstallPlan | undefined {
  if (!manifests.includes("Cargo.toml")) return undefined;
  const locked = manifests.includes("Cargo.lock");
  return profilePlan(
    locked
      ? "rust: the crates Cargo.lock pins"
      : "rust: crates resolved now (no Cargo.lock: the resolution is recorded)",
    [locked ? "cargo fetch --locked" : "cargo fetch"],
    manifests,
    { lockFile: "Cargo.lock" },
  );
}

/** Modules into GOMODCACHE (the deps dir), checked against go.sum. */
function goPlan(_i: EnvInstallInput, manifests: string[]): EnvInstallPlan | undefined {
  if (!manifests.includes("go.mod") || manifests.includes("vendor")) return undefined;
  return profilePlan("go: the modules go.mod requires", ["GOFLAGS=-mod=mod go mod download"], manifests, {
    lockFile: manifests.includes("go.sum") ? "go.sum" : "go.mod",
  });
}

/** node_modules in the workspace, exactly as the lock says. */
function nodePlan(manifests: string[]): EnvInstallPlan | undefined {
  const lock = manifests.find((f) => f === "package-lock.json" || f === "npm-shrinkwrap.json");
  if (!lock) return undefined;
  return profilePlan(`node: npm ci from ${lock}`, ["npm ci --no-audit --no-fund"], manifests, {
    lockFile: lock,
  });
}

/** The lines of a `pip freeze` output that name a package (comments and blanks dropped). Pure. */
export function resolvedLines(text: string): string[] {
  return text
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l.length > 0 && !l.startsWith("#"));
}
