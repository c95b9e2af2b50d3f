import { execFileSync, spawnSync } from "node:child_process";
import { cp, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadTask } from "../../src/tasks/catalog.js";
import {
  difficultyOf,
  dockerInstructions,
  environmentOf,
  offlineUvVerifier,
  parseTaskToml,
  patchOfSolveScript,
  profileOfImage,
  rewriteTestScript,
} from "../../src/tasks/harbor.js";
import {
  EMPTY_WORKSPACE_FILE,
  loadHarbor,
  missingDockerfile,
  readHarborDir,
  verifierScript,
  withEmptyWorkspace,
} from "../../src/tasks/harbor-dir.js";
import {
  AGENT_TREE,
  exportHarborDir,
  exportSolveScript,
  passLineRegex,
} from "../../src/tasks/harbor-export.js";
import { materializeSource } from "../../src/tasks/materialize.js";
import { writeTaskFolder } from "../../src/tasks/task-dir.js";
import { findBwrap } from "../../src/workers/local/shape.js";

const FIXTURES = fileURLToPath(new URL("../../../../tests/fixtures/harbor/", import.meta.url));

let tmp: string;
beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), "flakegym-harbor-"));
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

/** `python3 -m pytest` and git run here (the replay under the Nix check has neither). */
const noPytest = (() => {
  try {
    execFileSync("python3", ["-m", "pytest", "--version"], { stdio: "ignore" });
    execFileSync("git", ["--version"], { stdio: "ignore" });
    return false;
  } catch {
    return true;
  }
})();
if (noPytest)
  console.log(
    "skipped the uv verifier's real run: python3 -m pytest or git is not available here (sh scripts/ensure-system-deps installs them)",
  );

/** The fixtures whose solve.sh is a script, run as Harbor's oracle in bubblewrap (harbor-oracle.ts). */
const ORACLE_RUNS = ["apt-oracle", "script-solution"];
const noBwrap = findBwrap() === undefined;
if (noBwrap)
  console.log(
    `skipped importing ${ORACLE_RUNS.join(" and ")} (their solve.sh runs in a sandbox): bubblewrap (bwrap) is not installed here, so they are refused saying so`,
  );
/** dpkg-query reads which apt packages this machine serves (the replay under the Nix check has none). */
const noDpkg = spawnSync("dpkg-query", ["--version"], { stdio: "ignore" }).status !== 0;
if (noDpkg)
  console.log(
    "skipped importing apt-oracle: dpkg-query is not installed here, so its apt packages (curl, python3) are refused as missing",
  );

describe("loadHarbor", () => {
  it("reads the fixture dirs: nine tasks, each other dir rejected naming the file and the reason", async () => {
    const h = await loadHarbor(FIXTURES);
    expect(h.dirs).toBe(17);
    const tasks = [
      "absolute-paths",
      "apt-oracle",
      "empty-workspace",
      "hello-greeting",
      "platform-from",
      "reward-json",
      "script-solution",
      "uv-cookbook",
      "uv-tests",
    ];
    // without bwrap, a script solve.sh cannot run: refused naming the missing binary (harbor-oracle.ts)
    // without dpkg-query apt-oracle's packages are missing, and its Dockerfile is refused first
    const refused: Record<string, unknown> = {};
    if (noBwrap)
      for (const id of ORACLE_RUNS)
        refused[id] = expect.stringMatching(
          /^solution\/solve\.sh: is a script, .*bubblewrap \(bwrap\) is missing/,
        );
    if (noDpkg)
      refused["apt-oracle"] = expect.stringMatching(
        /^environment\/Dockerfile: RUN apt-get install curl python3: not installed in /,
      );
    expect(h.tasks.map((t) => t.spec.id)).toEqual(tasks.filter((t) => !(t in refused)));
    expect(Object.fromEntries(h.rejected.map((e) => [e.id, `${e.field}: ${e.reason}`]))).toEqual({
      ...refused,
      "apt-missing": expect.stringMatching(
        noDpkg
          ? /^environment\/Dockerfile: RUN apt-get install curl python3 flakegym-no-such-package: not installed in /
          : /^environment\/Dockerfile: RUN apt-get install flakegym-no-such-package: not installed in /,
      ),
      entrypoint: expect.stringMatching(
        /^environment\/Dockerfile: ENTRYPOINT \["\/app\/entrypoint\.sh"\]: runs at container start/,
      ),
      "bad-toml": expect.stringMatching(/^task\.toml( line \d+[^:]*)?: is not valid TOML/),
      "compose-sidecar": expect.stringMatching(
        /^environment\/docker-compose\.yaml: service 'client' \(build \.\), 'cache' \(image redis:7\) could not be started: flakegym runs one sandbox/,
      ),
      "multi-step": expect.stringMatching(/^task\.toml: steps: uses Harbor's multi-step layout/),
      "net-install": expect.stringMatching(
        /^environment\/Dockerfile: RUN pip install .*fetches over the network/,
      ),
      "prebuilt-image": expect.stringMatching(
        /^environment\/Dockerfile: missing: the task names the prebuilt image/,
      ),
      "uv-extra-deps": expect.stringMatching(/^tests\/test\.sh: asks uv for requests/),
    });
  });

  it("points a test file's /tests/ at the workspace's .harbor/ as the verifier sees it at WORKDIR", async () => {
    const r = await readHarborDir(join(FIXTURES, "absolute-paths"), 1);
    if (!r.ok) throw new Error(r.error.reason);
    expect(String(r.task.files["hidden/.harbor/tests/test_greet.py"])).toMatch(
      /open\("\/app\/\.harbor\/tests\/expected\.txt"\)/,
    );
    expect(r.task.notes).toContainEqual(
      expect.stringMatching(/tests\/test_greet\.py: \/tests\/ and \/logs\/ read at \/app\/\.harbor\//),
    );
  });

  it("maps a Harbor task: profile from the image, workspace from COPY, test.sh pointed at the workspace, patch from solve.sh", async () => {
    const r = await readHarborDir(join(FIXTURES, "hello-greeting"), 1);
    if (!r.ok) throw new Error(r.error.reason);
    const { spec, files } = r.task;
    expect(spec).toMatchObject({
      id: "hello-greeting",
      profile: "python",
      difficulty: "easy",
      network: "none",
      source: { kind: "local", dir: "repo" },
      tests: { dir: "hidden", run: { kind: "eval_cmd" } },
      protected: [".harbor/"],
      limits: { memoryMb: 1024, diskMb: 1024, wallClockMs: 600_000 },
    });
    expect(spec.prompt).toMatch(/^# greet\(\) drops the name/);
    expect(Object.keys(files).sort()).toEqual([
      "harbor-environment/Dockerfile",
      "harbor-environment/app/greet.py",
      "hidden/.harbor/tests/test.sh",
      "hidden/.harbor/tests/test_greet.py",
      "repo/greet.py",
      "solution.patch",
    ]);
    const sh = String(files["hidden/.harbor/tests/test.sh"]);
    expect(sh).toContain("mkdir -p $HARBOR_ROOT/logs/verifier");
    expect(sh).toContain("cd /app\n"); // the verifier sees the workspace at WORKDIR
    expect(sh).toContain("$HARBOR_ROOT/tests/test_greet.py");
    expect(String(files["solution.patch"])).toMatch(
      /^diff --git a\/greet\.py b\/greet\.py\n[\s\S]*\+ {4}return f"Hello, /,
    );
    // the commit the folder materializes to is the one the spec names
    const dir = await writeTaskFolder(join(tmp, "catalog"), r.task);
    const repo = join(tmp, "materialized");
    await cp(join(dir, "repo"), repo, { recursive: true });
    const { commitTree } = await import("../../src/tasks/materialize.js");
    expect(await commitTree(repo)).toBe(spec.source.kind === "local" ? spec.source.commit : "");
  });

  it("reads FROM --platform=… image AS name", async () => {
    const r = await readHarborDir(join(FIXTURES, "platform-from"), 1);
    expect(r.ok && r.task.spec.profile).toBe("python");
    expect(environmentOf("FROM --platform=$BUILDPLATFORM node:20 AS build\nWORKDIR /app")).toMatchObject({
      profile: "node",
    });
    expect(environmentOf("FROM --platform=linux/amd64")).toMatchObject({ reason: /names no image/ });
  });

  it("imports a Dockerfile that copies nothing as an empty workspace that materializes to its commit", async () => {
    const r = await readHarborDir(join(FIXTURES, "empty-workspace"), 1);
    if (!r.ok) throw new Error(r.error.reason);
    expect(Object.keys(r.task.files).filter((f) => f.startsWith("repo/"))).toEqual(["repo/.gitkeep"]);
    expect(r.task.notes).toContain(
      "environment/Dockerfile copies no files into WORKDIR /app: the workspace starts empty (holding only .gitkeep)",
    );
    const catalog = join(tmp, "empty-catalog");
    await writeTaskFolder(catalog, r.task);
    const task = await loadTask("empty-workspace", catalog);
    const { commit } = await materializeSource(task, join(tmp, "empty-ws"));
    expect(commit).toBe((task.spec.source as { commit: string }).commit);
  });

  it.skipIf(noPytest)(
    "makes the cookbook's uv verifier offline: python3 -m pytest, and it scores the real tests (fail before, pass after)",
    async () => {
      const r = await readHarborDir(join(FIXTURES, "uv-cookbook"), 1);
      if (!r.ok) throw new Error(r.error.reason);
      const script = String(r.task.files["hidden/.harbor/tests/test.sh"]);
      expect(script).not.toMatch(/astral|uvx|apt-get|curl -LsSf|\.local\/bin\/env/);
      expect(script).toContain("python3 -m pytest $HARBOR_ROOT/tests/test_greet.py -rA");
      expect(r.task.notes?.[0]).toMatch(/uv bootstrap is replaced .*uv asked for Python 3\.13/);
      // run the eval command in a workspace laid out as flakegym's: before and after the reference patch
      const eval_ = r.task.spec.tests.run;
      if (eval_.kind !== "eval_cmd") throw new Error("expected eval_cmd");
      for (const solved of [false, true]) {
        const ws = join(tmp, `uv-ws-${solved}`);
        await mkdir(ws, { recursive: true });
        for (const [p, c] of Object.entries(r.task.files)) {
          const rel = p.startsWith("repo/") ? p.slice(5) : p.startsWith("hidden/") ? p.slice(7) : undefined;
          if (rel === undefined) continue;
          await mkdir(join(ws, rel, ".."), { recursive: true });
          await writeFile(join(ws, rel), c);
        }
        if (solved) {
          execFileSync("git", ["apply"], { cwd: ws, input: String(r.task.files["solution.patch"]) });
        }
        let code = 0;
        try {
          execFileSync("bash", ["-c", eval_.command], { cwd: ws, stdio: "pipe" });
        } catch (e) {
          code = (e as { status: number }).status;
        }
        expect(code === 0, `solved=${solved}`).toBe(solved);
      }
    },
  );

  it("refuses a uv verifier that needs packages beyond pytest, naming them", async () => {
    const r = await readHarborDir(join(FIXTURES, "uv-extra-deps"), 1);
    expect(r.ok ? "accepted" : `${r.error.field}: ${r.error.reason}`).toMatch(
      /^tests\/test\.sh: asks uv for requests==2\.32\.3 at test time/,
    );
  });

  it("rejects a task dir holding a symbolic link, without following it", async () => {
    const dir = join(tmp, "linked");
    await cp(join(FIXTURES, "hello-greeting"), dir, { recursive: true });
    await symlink("/etc/passwd", join(dir, "environment/app/secrets.txt"));
    const r = await readHarborDir(dir, 1);
    expect(r).toMatchObject({
      ok: false,
      error: { field: "./environment/app/secrets.txt", reason: "is a symbolic link (never followed)" },
    });
  });
  it("rejects a task dir holding a .git entry (its config would run commands in git on the host)", async () => {
    const dir = join(tmp, "with-git");
    await cp(join(FIXTURES, "hello-greeting"), dir, { recursive: true });
    await mkdir(join(dir, "environment/app/.git"), { recursive: true });
    await writeFile(join(dir, "environment/app/.git/config"), "[core]\n\tfsmonitor = false\n");
    const r = await readHarborDir(dir, 1);
    expect(r).toMatchObject({
      ok: false,
      error: { field: "./environment/app/.git", reason: expect.stringMatching(/\.git entry/) },
    });
  });
});

describe("environmentOf", () => {
  it("joins continuation lines and drops comments", () => {
    expect(dockerInstructions("# c\nFROM node:20\nRUN make \\\n  all\n")).toEqual([
      { op: "FROM", args: "node:20" },
      { op: "RUN", args: "make    all" },
    ]);
  });
  it("maps COPY under WORKDIR and offline RUN lines; refuses ADD, ENV, multi-stage, foreign images and paths outside", () => {
    expect(
      environmentOf("FROM golang:1.19\nWORKDIR /src\nCOPY . .\nCOPY go.mod /src/sub/\nRUN go build ./...\n"),
    ).toEqual({
      profile: "go",
      workdir: "/src",
      copies: [
        { from: ".", to: ".", intoDir: true },
        { from: "go.mod", to: "sub", intoDir: true },
      ],
      mounts: [],
      install: ["go build ./..."],
      image: "golang:1.19",
      aptPackages: [],
      pipPytest: [],
    });
    // the verifier's pytest pinned with pip is served by Debian's python3-pytest; `mkdir -p <WORKDIR>` has nothing to do
    expect(
      environmentOf(
        "FROM python:3.13-slim\nRUN pip install --no-cache-dir pytest==8.4.1 pytest-json-ctrf==0.3.5\nRUN mkdir -p /app\nWORKDIR /app",
      ),
    ).toMatchObject({
      pipPytest: ["pytest==8.4.1", "pytest-json-ctrf==0.3.5"],
      install: [],
      aptPackages: [],
    });
    expect(environmentOf("FROM python:3.13-slim\nRUN pip install pytest requests")).toMatchObject({
      reason: /fetches over the network/,
    });
    // a COPY placed before the final WORKDIR is measured against it; a directory outside it is a mount
    expect(
      environmentOf("FROM ubuntu:24.04\nCOPY skills/ /skills/\nCOPY a.txt /app/\nWORKDIR /app"),
    ).toMatchObject({
      copies: [{ from: "a.txt", to: ".", intoDir: true }],
      mounts: [{ from: "skills", at: "/skills" }],
    });
    expect(environmentOf("FROM python:3.12\nADD https://x/y.tgz /app/")).toMatchObject({
      reason: /ADD is not supported/,
    });
    expect(environmentOf("FROM python:3.12\nENV A=1")).toMatchObject({ reason: /ENV A=1/ });
    expect(environmentOf("FROM rust:1 AS b\nFROM debian:12")).toMatchObject({ reason: /multi-stage/ });
    expect(environmentOf("FROM openjdk:21")).toMatchObject({
      reason: /base image 'openjdk:21' has no flakegym profile/,
    });
    expect(environmentOf("FROM gcc:12\nWORKDIR /app\nCOPY x /etc/")).toMatchObject({
      reason: /COPY x \/etc\/: the destination \/etc lies outside WORKDIR, and .*sandbox's own \/etc/,
    });
    expect(environmentOf("FROM gcc:12\nWORKDIR /app\nCOPY x /opt/x.txt")).toMatchObject({
      reason: /\/opt\/x\.txt lies outside WORKDIR and is a file/,
    });
    expect(environmentOf("FROM gcc:12\nCOPY ../x /")).toMatchObject({
      reason: /plain path inside environment/,
    });
    expect(environmentOf("WORKDIR /app")).toMatchObject({ reason: "has no FROM line" });
  });
  it("names profiles by image", () => {
    expect(profileOfImage("ghcr.io/laude-institute/t-bench/python-3-13:20250620")).toBe("python");
    expect(profileOfImage("node:20-bookworm-slim")).toBe("node");
    expect(profileOfImage("ubuntu:24.04")).toBe("dev-base");
    expect(profileOfImage("mcr.microsoft.com/dotnet/sdk:8.0")).toBeUndefined();
    expect(difficultyOf(" Hard ")).toBe("hard");
    expect(difficultyOf("extreme")).toBeUndefined();
  });
});

describe("offlineUvVerifier", () => {
  it("leaves a script without uv alone", () => {
    expect(offlineUvVerifier("python3 -m pytest /tests -rA\n")).toEqual({
      script: "python3 -m pytest /tests -rA\n",
      notes: [],
    });
  });
  it("turns uv's pytest runs into the profile's pytest, dropping ctrf reports", () => {
    const r = offlineUvVerifier(
      [
        "uv venv .tvenv",
        "uv pip install pytest==8.4.1 'pytest-json-ctrf==0.3.5'",
        "uv run --with pytest==8.4.1 pytest --ctrf=/logs/verifier/ctrf.json /tests/test_x.py -rA || true",
        "uvx python -m pytest -q /tests",
      ].join("\n"),
    );
    expect(r).toEqual({
      script: "python3 -m pytest /tests/test_x.py -rA || true\npython3 -m pytest -q /tests",
      notes: [expect.stringMatching(/uv bootstrap is replaced/)],
    });
  });
  it("refuses uv for other tools or packages, naming them", () => {
    expect(offlineUvVerifier("uvx ruff check /app")).toMatchObject({ reason: /runs 'ruff' through uv/ });
    expect(offlineUvVerifier("uv pip install numpy pytest")).toMatchObject({
      reason: /installs numpy with uv/,
    });
  });
});

describe("test.sh and solve.sh", () => {
  it("rewrites only whole container paths, and leaves WORKDIR as written (the verifier sees the workspace there)", () => {
    expect(rewriteTestScript('cd /app && pytest /tests/t.py > /logs/verifier/x; ls /testsuite "/app"')).toBe(
      'cd /app && pytest $HARBOR_ROOT/tests/t.py > $HARBOR_ROOT/logs/verifier/x; ls /testsuite "/app"',
    );
    // Harbor's hello-workdir: the WORKDIR is also the value its test greps for
    const hello =
      'grep -q "/custom-workdir" /custom-workdir/workdir.txt && echo 1 > /logs/verifier/reward.txt';
    expect(rewriteTestScript(hello)).toBe(
      'grep -q "/custom-workdir" /custom-workdir/workdir.txt && echo 1 > $HARBOR_ROOT/logs/verifier/reward.txt',
    );
  });
  it("a patch survives solve.sh both ways, even one that holds the heredoc tag", () => {
    const patch = "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-FLAKEGYM_PATCH\n+y\n";
    expect(patchOfSolveScript(exportSolveScript(patch))).toBe(patch);
    expect(patchOfSolveScript("#!/bin/sh\nsed -i s/a/b/ x\n")).toBeUndefined();
  });
  it("the pass-line regexes match the runners' real pass lines and not their fail lines", () => {
    const cases = [
      [
        "pytest",
        "tests/t.py::test_a[1-2]",
        "PASSED tests/t.py::test_a[1-2]",
        "FAILED tests/t.py::test_a[1-2] - x",
      ],
      ["libtest", "m::t", "test m::t ... ok", "test m::t ... FAILED"],
      ["tap", "caret (zero)", "  ok 3 - caret (zero)", "not ok 3 - caret (zero)"],
      ["check-h", "trim", "ok trim", "FAIL trim"],
      [
        "gotest",
        "TestSub/inner_case",
        "    --- PASS: TestSub/inner_case (0.00s)",
        "    --- FAIL: TestSub/inner_case (0.00s)",
      ],
      ["django", "test_a (app.tests.T)", "test_a (app.tests.T) ... ok", "test_a (app.tests.T) ... FAIL"],
      [
        "django",
        "test_a (app.tests.T)",
        "test_a (app.tests.T.test_a) ... ok",
        "test_a (app.tests.T.test_a) ... ERROR",
      ],
      [
        "django",
        "A docstring (with parens).",
        "A docstring (with parens). ... ok",
        "A docstring (with parens). ... FAIL",
      ],
      ["sympy", "test_a", "test_a ok", "test_a F"],
      ["sympy", "test_a", "test_a ok                          [OK]", "test_a F                 [FAIL]"],
    ] as const;
    for (const [format, id, pass, fail] of cases) {
      const grep = (line: string) => {
        try {
          execFileSync("grep", ["-qP", passLineRegex(format, id)], { input: `${line}\n` });
          return true;
        } catch {
          return false;
        }
      };
      expect([format, grep(pass), grep(fail)]).toEqual([format, true, false]);
    }
  });
});

describe("exportHarborDir", () => {
  it("writes a catalog task as a Harbor dir that reads back as the same task", async () => {
    const task = await loadTask("tinyini-interpolation");
    const dir = await exportHarborDir(task, join(tmp, "harbor"));
    const test = await readFile(join(dir, "tests/test.sh"), "utf8");
    expect(test).toContain("cp -R /tests/files/. /app/");
    // reward 0 is on disk before anything runs: a verifier cut short leaves 0, not nothing
    expect(test.indexOf("echo 0 > /logs/verifier/reward.txt")).toBeGreaterThan(0);
    expect(test.indexOf("echo 0 > /logs/verifier/reward.txt")).toBeLessThan(
      test.indexOf("cp -R /tests/files"),
    );
    expect(test).toContain("grep -qP '^PASSED tests/test_parser\\.py::test_typed_getters$'");
    // the current task schema, and a separate verifier that gets the agent's /app as an artifact
    const toml = await readFile(join(dir, "task.toml"), "utf8");
    expect(parseTaskToml(toml)).toMatchObject({
      schema_version: "1.4",
      artifacts: [{ source: "/app", destination: "agent-app", exclude: [".git"] }],
      verifier: { environment_mode: "separate" },
    });
    expect(test.indexOf(`cp -a ${AGENT_TREE}/. /app/`)).toBeLessThan(test.indexOf("cp -R /tests/files"));
    expect(await readFile(join(dir, "environment/Dockerfile"), "utf8")).toBe(
      "FROM python:3.11-slim-bookworm\nWORKDIR /app\nCOPY repo/ /app/\n",
    );
    const back = await readHarborDir(dir, 1);
    if (!back.ok) throw new Error(back.error.reason);
    expect(back.task.spec).toMatchObject({
      id: task.spec.id,
      profile: "python",
      prompt: task.spec.prompt.trim(),
    });
    expect(back.task.spec.source).toEqual(task.spec.source);
    expect(String(back.task.files["solution.patch"])).toBe(await readFile(task.paths.solution, "utf8"));
  });
});

describe("readHarborDir's pure steps", () => {
  it("missingDockerfile names the prebuilt image a task points at instead", () => {
    expect(missingDockerfile(undefined)).toEqual({ field: "environment/Dockerfile", reason: "missing" });
    expect(missingDockerfile("ghcr.io/x/y:1").reason).toBe(
      "missing: the task names the prebuilt image 'ghcr.io/x/y:1', which flakegym cannot turn into a workspace",
    );
  });

  it("verifierScript: paths rewritten, uv made offline with notes, a fetch outside comments refused", async () => {
    const plain =
      "#!/bin/bash\n# curl is only named here\ncd /app && pytest /tests/t.py > /logs/verifier/out\n";
    expect(verifierScript(plain)).toEqual({ script: rewriteTestScript(plain), notes: [] });
    const uv = await readFile(join(FIXTURES, "uv-tests/tests/test.sh"), "utf8");
    const offline = offlineUvVerifier(uv);
    if ("reason" in offline) throw new Error(`fixture uv-tests no longer reads: ${offline.reason}`);
    expect(offline.notes.length).toBeGreaterThan(0);
    expect(verifierScript(uv)).toEqual({
      script: rewriteTestScript(offline.script),
      notes: offline.notes,
    });
    expect(verifierScript("cd /app\n  wget http://x/y\n")).toEqual({
      field: "tests/test.sh",
      reason:
        "runs 'wget', which fetches over the network (the sandbox is offline): the tests must run with the profile's tools",
    });
  });

  it("withEmptyWorkspace: an empty workspace holds one placeholder and says so; a copied one is kept", () => {
    const empty = withEmptyWorkspace({}, "/srv");
    expect(Object.keys(empty.repo)).toEqual([EMPTY_WORKSPACE_FILE]);
    expect(empty.note).toBe(
      `environment/Dockerfile copies no files into WORKDIR /srv: the workspace starts empty (holding only ${EMPTY_WORKSPACE_FILE})`,
    );
    const kept = withEmptyWorkspace({ "a.py": Buffer.from("x") }, "/app");
    expect(kept).toEqual({ repo: { "a.py": Buffer.from("x") } });
  });
});
