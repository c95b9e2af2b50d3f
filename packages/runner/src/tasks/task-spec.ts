import { ProfileId } from "@flakegym/profiles";
import { z } from "zod";
import { LogParser } from "./swebench-log-parsers.js";

/** The fixed identity used to commit a catalog task's local repo, so its commit id is reproducible. */
export const CATALOG_GIT_IDENTITY = {
  name: "flakegym catalog",
  email: "catalog@flakegym.invalid",
  date: "2026-01-01T00:00:00Z",
} as const;

export const LocalSource = z
  .object({
    kind: z.literal("local"),
    dir: z.string().min(1).describe("directory inside the task folder holding the repository's files"),
    commit: z
      .string()
      .regex(/^[0-9a-f]{40}$/)
      .describe(
        "the commit id the directory materializes to (git init + one commit with a fixed identity and date); checked on every build",
      ),
  })
  .strict();

export const GitSource = z
  .object({
    kind: z.literal("git"),
    url: z.string().min(1).describe("clone URL"),
    rev: z
      .string()
      .regex(/^[0-9a-f]{40}$/)
      .describe("full commit id to check out"),
    probeTimeoutMs: z
      .number()
      .int()
      .positive()
      .default(3000)
      .describe("how long the reachability probe of the URL may take before the build fails fast"),
  })
  .strict();

export const TaskSource = z
  .discriminatedUnion("kind", [LocalSource, GitSource])
  .describe("where the repository comes from: a directory in the catalog, or a remote git URL at a rev");
export type TaskSource = z.infer<typeof TaskSource>;

/** Hidden tests named by id, run with a runner-specific command template. */
export const IdTests = z
  .object({
    kind: z.literal("ids"),
    command: z
      .string()
      .includes("{test}")
      .describe("shell command run once per test id, `{test}` replaced by the shell-quoted id"),
    passPattern: z
      .string()
      .min(1)
      .optional()
      .describe(
        "regular expression (multiline) the output must also match for a pass — for runners that exit 0 when the id matches no test",
      ),
    failToPass: z
      .array(z.string().min(1))
      .min(1)
      .describe("tests that fail before the fix and must pass after"),
    passToPass: z
      .array(z.string().min(1))
      .default([])
      .describe("tests that pass before and must keep passing"),
  })
  .strict();

/** Hidden tests as one evaluation command: exit status 0 means solved. */
export const EvalCmdTests = z
  .object({
    kind: z.literal("eval_cmd"),
    command: z.string().min(1).describe("shell command; exit status 0 means the task is solved"),
  })
  .strict();

/** How a suite's output reports each test; the scorer reads only lines of this shape. */
export const ResultFormat = z
  .enum(["libtest", "pytest", "tap", "check-h", "gotest", "django", "sympy"])
  .describe(
    "libtest: `test <name> ... ok|FAILED` (cargo test without --quiet); pytest: `PASSED|FAILED <node id>` (pytest -rA); tap: `ok|not ok <n> - <name>` at any indent (node --test); check-h: `ok|FAIL <name>`; gotest: `--- PASS|FAIL|SKIP: <name> (…)` at any indent (go test -v); django: `<id> ... ok|FAIL|ERROR` and `FAIL|ERROR: <id>` (tests/runtests.py --verbosity 2); sympy: `test_x ok|F|E` (bin/test --verbose)",
  );
export type ResultFormat = z.infer<typeof ResultFormat>;

/**
 * A test added to a hidden test file for every scoring run, with a random name, that MUST fail
 * (it asserts two different random integers equal). If it passes or does not report, the test
 * framework or its exit status was tampered with and the reward is 0.
 */
export const Canary = z
  .object({
    file: z
      .string()
      .min(1)
      .describe("the hidden test file (a path the tests patch or dir adds) the canary is written into"),
    prepend: z
      .string()
      .default("")
      .describe("text put before the file's content (e.g. to register the test with the harness)"),
    append: z
      .string()
      .min(1)
      .describe(
        "text appended to the file: the canary test; `{name}` is its random name, `{a}` and `{b}` two different random integers it asserts equal",
      ),
    id: z
      .string()
      .includes("{name}")
      .describe("the canary's test id as the results report it (`{name}` replaced)"),
  })
  .strict();
export type Canary = z.infer<typeof Canary>;

/**
 * Graded test ids whose assertions are left to decoys, never externalized, each with what gold
 * emitted there: recorded from the gold patch's run when the task was validated (host-trusted,
 * fixed before any trajectory runs), for tests where gold computed a value the sandbox can only
 * render as an opaque object (a case-insensitive dict, a cookie jar) at an assertion whose expected
 * value is a literal kept on the host, so the host cannot compare it (scoring/externalize/opaque.ts).
 */
export const OpaqueTests = z
  .record(z.string().min(1), z.string().min(1))
  .describe(
    "graded test ids left to decoys (not externalized), each with the opaque value gold emitted at a literal assertion; written by `flakegym validate --record-opaque`",
  );
export type OpaqueTests = z.infer<typeof OpaqueTests>;

/**
 * Per graded test id, the decoy sites (`line:column` of a literal, the line counted from the
 * test's `def` line; scoring/decoys/site-key.ts) where gold passed a decoy when the task was
 * validated: the assertion there does not run for that case (a parametrized case that takes
 * another branch) or the changed value holds too. Written by `flakegym validate` from the gold
 * patch's probe run only (host-trusted, fixed before any trajectory runs); scorings draw no decoy
 * there, and a case with no other site is reported unguarded instead of failing gold closed.
 */
export const DecoyInertSites = z
  .record(z.string().min(1), z.array(z.string().regex(/^\d+:\d+$/)).min(1))
  .describe(
    "graded test ids → decoy sites (`line:column` from the test's def line) gold passed a decoy at when validated: no decoy is drawn there; written by `flakegym validate`",
  );
export type DecoyInertSites = z.infer<typeof DecoyInertSites>;

/** Hidden tests run as one suite command per run, judged by per-test result lines and a canary. */
export const SuiteTests = z
  .object({
    kind: z.literal("suite"),
    command: z
      .string()
      .min(1)
      .describe("shell command that runs every test once, reporting each in `results` form"),
    results: ResultFormat,
    logParser: LogParser.optional().describe(
      "pytest results only: read the log as SWE-bench's harness reads this repository's (a SWE-bench row's ids were recorded so); graded as it grades (XFAIL passes)",
    ),
    failToPass: z
      .array(z.string().min(1))
      .min(1)
      .describe("test ids (as the results name them) that fail before the fix and must pass after"),
    passToPass: z.array(z.string().min(1)).default([]).describe("test ids that must keep passing"),
    canary: Canary,
    opaque: OpaqueTests.optional(),
    decoyInert: DecoyInertSites.optional(),
  })
  .strict();
export type SuiteTests = z.infer<typeof SuiteTests>;

export const TestRun = z
  .discriminatedUnion("kind", [IdTests, EvalCmdTests, SuiteTests])
  .describe("how to run the hidden tests");
export type TestRun = z.infer<typeof TestRun>;

export const HiddenTests = z
  .object({
    patch: z
      .string()
      .min(1)
      .optional()
      .describe("patch file (relative to the task folder) adding the hidden tests; applied with `git apply`"),
    dir: z
      .string()
      .min(1)
      .optional()
      .describe("directory (relative to the task folder) copied over the workspace root instead of a patch"),
    run: TestRun,
  })
  .strict()
  .refine((t) => (t.patch === undefined) !== (t.dir === undefined), {
    message: "give exactly one of 'patch' or 'dir'",
    path: ["patch"],
  });
export type HiddenTests = z.infer<typeof HiddenTests>;

export const TaskLimits = z
  .object({
    memoryMb: z.number().int().positive().default(2048).describe("memory limit per worker, MiB"),
    pids: z.number().int().positive().default(512).describe("process/thread limit per worker"),
    cpuSeconds: z.number().int().positive().default(1800).describe("CPU time limit per worker, seconds"),
    diskMb: z.number().int().positive().default(2048).describe("writable space for the workspace, MiB"),
    wallClockMs: z
      .number()
      .int()
      .positive()
      .default(20 * 60_000)
      .describe("wall-clock limit of one trajectory, ms"),
  })
  .strict();
export type TaskLimits = z.infer<typeof TaskLimits>;

/** Sandbox paths a task's workdir may not take: the system's, and the sandbox's own. */
export const RESERVED_WORKDIRS = [
  "/",
  "/bin",
  "/boot",
  "/deps",
  "/dev",
  "/etc",
  "/lib",
  "/lib64",
  "/nix",
  "/proc",
  "/root",
  "/run",
  "/sandbox-home",
  "/sbin",
  "/sys",
  "/tmp",
  "/usr",
  "/var",
  "/workspace",
] as const;

/** Why `p` cannot be a task's workdir, or undefined. Pure. */
export function workdirProblem(p: string): string | undefined {
  if (!/^\/[A-Za-z0-9._/-]+$/.test(p) || p.split("/").some((s) => s === "." || s === ".."))
    return `'${p}' must be an absolute path of plain segments (letters, digits, . _ -)`;
  if (p.endsWith("/") || p.includes("//")) return `'${p}' must be normalized (no trailing or double /)`;
  const hit = RESERVED_WORKDIRS.find((r) => p === r || (r !== "/" && p.startsWith(`${r}/`)));
  return hit ? `'${p}' lies in the sandbox's own ${hit}: pick another path (e.g. /app)` : undefined;
}

/** The sandbox's workspace path: a task whose WORKDIR is it has its workspace there already (no alias). */
export const SANDBOX_WORKSPACE = "/workspace";

/** Why `p` cannot be a task's workdir — where the agent and verifier also see the workspace — or undefined. Pure. */
export function taskWorkdirProblem(p: string): string | undefined {
  return p === SANDBOX_WORKSPACE ? undefined : workdirProblem(p);
}

const TaskWorkdir = z.string().superRefine((p, ctx) => {
  const why = taskWorkdirProblem(p);
  if (why) ctx.addIssue({ code: "custom", message: why });
});

export const ContainerWorkdir = z.string().superRefine((p, ctx) => {
  const why = workdirProblem(p);
  if (why) ctx.addIssue({ code: "custom", message: why });
});

/** A directory of the task folder shown read-only at a container path. */
export const ContainerMount = z
  .object({
    dir: z
      .string()
      .regex(/^[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+)*$/)
      .refine((d) => !d.split("/").includes(".."), "must stay inside the task folder")
      .describe("directory inside the task folder"),
    at: ContainerWorkdir.describe("the container path it is shown at, read-only"),
  })
  .strict();

export const Difficulty = z
  .enum(["easy", "medium", "hard"])
  .describe("easy: a one-line fix; medium: a fix across a function or two; hard: a multi-file feature");
export type Difficulty = z.infer<typeof Difficulty>;

/** A built-in catalog task: `packages/runner/catalog/<id>/task.json` plus the files it names. */
export const TaskSpec = z
  .object({
    $comment: z.string().optional().describe("free text for maintainers"),
    id: z
      .string()
      .regex(/^[a-z0-9][a-z0-9._-]*$/)
      .describe("task id, equal to its directory name"),
    summary: z.string().min(1).describe("one line describing the task"),
    prompt: z.string().min(1).describe("what the agent is asked, written like a GitHub issue"),
    profile: ProfileId,
    language: z.string().default("").describe("GitHub language name, for reports"),
    difficulty: Difficulty.optional(),
    network: z
      .enum(["none", "required"])
      .default("none")
      .describe("none: builds and runs offline; required: the source or its dependencies are fetched"),
    source: TaskSource,
    install: z
      .array(z.string().min(1))
      .default([])
      .describe("commands run once in the snapshot to install dependencies / warm the build"),
    smoke: z
      .array(z.string().min(1))
      .default([])
      .describe("commands that must succeed in the snapshot; their log is kept with it"),
    tests: HiddenTests.describe("the hidden tests: files to add and how to run them"),
    solution: z.string().min(1).describe("reference solution patch (relative to the task folder)"),
    protected: z
      .array(z.string().min(1))
      .default([])
      .describe(
        "paths (patterns as in docs/reference/tasks.md) reset to the snapshot's version before scoring, beside the language defaults",
      ),
    allowEdits: z
      .array(z.string().min(1))
      .default([])
      .describe(
        "protected paths (patterns) the task legitimately asks the agent to edit, e.g. a dependency bump",
      ),
    limits: TaskLimits.default(TaskLimits.parse({})),
    mounts: z
      .array(ContainerMount)
      .optional()
      .describe(
        "directories of the task folder shown read-only at container paths (a Harbor Dockerfile's COPY outside WORKDIR, e.g. skills/ at /skills)",
      ),
    workdir: TaskWorkdir.optional().describe(
      "a container path where the agent and the verifier also see the workspace (a Harbor task's WORKDIR, e.g. /app); the workspace stays at /workspace too (a WORKDIR of /workspace is the workspace itself)",
    ),
    metadata: z
      .record(z.string(), z.string())
      .optional()
      .describe(
        "provenance kept from an imported row (instance_id, repo, version, environment_setup_commit, created_at, hints_text, intake notes, install_source, python_version: the Python the row's facts run it under); never shown to the agent",
      ),
  })
  .strict();
export type TaskSpec = z.infer<typeof TaskSpec>;
export type TaskSpecInput = z.input<typeof TaskSpec>;

/** POSIX shell single-quoting. */
export function shellQuote(s: string): string {
  return /^[A-Za-z0-9_./:=@%+,-]+$/.test(s) ? s : `'${s.replaceAll("'", `'\\''`)}'`;
}

/** One hidden-test command to run, with what its result must be after a correct fix. */
export interface TestCommand {
  readonly id: string;
  readonly kind: "fail_to_pass" | "pass_to_pass" | "eval_cmd";
  readonly command: string;
  /** When set, a pass also needs the output to match this (multiline) regular expression. */
  readonly passPattern?: string;
}

/** The commands that score a task (pure): one per test id, or the single eval command. */
export function testCommands(run: TestRun): TestCommand[] {
  if (run.kind === "suite") return [];
  if (run.kind === "eval_cmd") return [{ id: "eval_cmd", kind: "eval_cmd", command: run.command }];
  const one = (id: string, kind: TestCommand["kind"]): TestCommand => ({
    id,
    kind,
    command: run.command.replaceAll("{test}", shellQuote(id)),
    ...(run.passPattern === undefined ? {} : { passPattern: run.passPattern }),
  });
  return [
    ...run.failToPass.map((id) => one(id, "fail_to_pass")),
    ...run.passToPass.map((id) => one(id, "pass_to_pass")),
  ];
}

/** Whether one hidden-test command passed, given its exit status and combined output (pure). */
export function testPassed(cmd: TestCommand, exitCode: number, output: string): boolean {
  if (exitCode !== 0) return false;
  return cmd.passPattern === undefined || new RegExp(cmd.passPattern, "m").test(output);
}
