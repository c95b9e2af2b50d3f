import { mkdir, readdir } from "node:fs/promises";
import { join } from "node:path";
import { makeTempDir, REPO_ROOT, runCli, type TempDir } from "@flakegym/test-utils";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/** `tasks check` on our own SWE-bench Verified-shaped rows: the real CLI process. */
const SHAPES = join(REPO_ROOT, "tests/fixtures/swebench/verified-shapes.jsonl");

describe("tasks check (SWE-bench family)", () => {
  it("lists each rejection, the notes on accepted rows and a table by reason, and exits 1", async () => {
    const r = await runCli(["tasks", "check", "--dataset", SHAPES, "--allow-python-mismatch"], {
      timeoutMs: 60_000,
    });
    expect(r.exitCode, r.stderr).toBe(1);
    const lines = r.stdout.split("\n");
    expect(lines).toContainEqual(
      expect.stringMatching(/^note: row 3 \[psf__requests-2317\]: PASS_TO_PASS: dropped '\[100%\]'/),
    );
    const table = lines.indexOf("count  reason (first rows)");
    expect(table).toBeGreaterThan(0);
    expect(lines.slice(table + 1, table + 7)).toEqual([
      // a reason one row has is shown whole: its quoted value, its path
      expect.stringMatching(/^ +1 {2}FAIL_TO_PASS: '[^'…]+' is not a SymPy test name/),
      "         row 7 [sympy__sympy-99999]",
      expect.stringMatching(/^ +1 {2}FAIL_TO_PASS: is empty once junk ids are dropped/),
      "         row 9 [acme__junk-2]",
      expect.stringMatching(/^ +1 {2}repo_url: local repository \/\S+ does not exist/),
      "         row 8 [acme__gone-1]",
    ]);
    expect(r.stdout).toMatch(/9 rows, 6 accepted, 3 rejected/);
  });

  it("notes a per-id (jest) row whose graded ids no decoy twin can guard", async () => {
    const sample = join(REPO_ROOT, "tests/fixtures/swebench/swebench-sample.jsonl");
    const r = await runCli(["tasks", "check", "--dataset", sample], { timeoutMs: 60_000 });
    expect(r.stdout.split("\n")).toContainEqual(
      "note: row 5 [left-pad__left-pad-9]: 2 of 2 graded id(s) without a decoy twin: pads by code points \\(emoji\\) (no test in the hidden test files (index.test.js) is named like it); pads ascii (no test in the hidden test files (index.test.js) is named like it) — a forged pass of an unguarded id would go unseen; validate fails it unless --allow-unguarded",
    );
  });

  it("--json carries the table by reason and the notes", async () => {
    const r = await runCli(["tasks", "check", "--dataset", SHAPES, "--json", "--allow-python-mismatch"], {
      timeoutMs: 60_000,
    });
    const body = JSON.parse(r.stdout) as {
      byReason: { reason: string; count: number; rows: number[] }[];
      notes: { row: number; id: string; note: string }[];
    };
    expect(body.byReason.map((g) => [g.count, g.rows])).toEqual([
      [1, [7]],
      [1, [9]],
      [1, [8]],
    ]);
    expect(body.notes).toContainEqual(
      expect.objectContaining({ row: 3, id: "psf__requests-2317", note: expect.stringMatching(/\[100%\]/) }),
    );
    // Python rows say whose install facts they use and what differs here
    expect(body.notes).toContainEqual(
      expect.objectContaining({
        row: 1,
        id: "django__django-16041",
        note: expect.stringMatching(/^install from django\/django's facts/),
      }),
    );
  });

  it("lists what each swe-agent row will be scored by (no hidden tests: build, lint, judge)", async () => {
    const rows = join(REPO_ROOT, "tests/fixtures/swe-agent-13k-sample.jsonl");
    const r = await runCli(["tasks", "check", "--dataset", rows, "--judge", "http://127.0.0.1:9/v1#j"], {
      timeoutMs: 60_000,
    });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).toMatch(
      /^scored by: row \d+ \[go-0003\] \(go\): build `go build \.\/\.\.\.` \(default for go\), lint `go vet \.\/\.\.\.` \(default for go\), judge \(--judge\)$/m,
    );
    // without a judge it warns that build and lint alone reward an unchanged repository
    expect(r.stdout).not.toContain("note: build and lint alone");
    const plain = await runCli(["tasks", "check", "--dataset", rows], { timeoutMs: 60_000 });
    expect(plain.stdout).toContain(
      "note: build and lint alone give 1 to an unchanged repository that builds",
    );
    const json = await runCli(["tasks", "check", "--dataset", rows, "--json", "--build-cmd", "make"], {
      timeoutMs: 60_000,
    });
    const body = JSON.parse(json.stdout) as {
      scoring: { id: string; terms: { name: string; from: string }[] }[];
    };
    expect(body.scoring.length).toBeGreaterThan(0);
    for (const line of body.scoring)
      expect(line.terms[0]).toMatchObject({ name: "build", from: "--build-cmd" });
  });
});

/** An environment in which no provider but /usr/bin's python3 (Debian's 3.11) is found. */
async function bareEnv(dir: string): Promise<NodeJS.ProcessEnv> {
  for (const d of ["pyenv", "uv", "nix"]) await mkdir(join(dir, d), { recursive: true });
  return {
    HOME: dir,
    PYENV_ROOT: join(dir, "pyenv"),
    UV_PYTHON_INSTALL_DIR: join(dir, "uv"),
    XDG_DATA_HOME: dir,
    NIX_PROFILES: join(dir, "nix"),
    PATH: "/usr/bin:/bin",
    FLAKEGYM_PYTHON: "",
    FLAKEGYM_ALLOW_PYTHON_MISMATCH: "",
  };
}

/** A CPython 3.9 of this machine (pyenv's), to name with --python, or why there is none. */
async function python39(): Promise<{ path?: string; why?: string }> {
  const root = await execa("pyenv", ["root"], { reject: false, timeout: 15_000 }).catch(() => undefined);
  const dir = root?.exitCode === 0 ? join(root.stdout.trim(), "versions") : undefined;
  const v = dir ? (await readdir(dir).catch(() => [])).find((d) => /^3\.9\.\d+$/.test(d)) : undefined;
  return dir && v
    ? { path: join(dir, v, "bin", "python3.9") }
    : { why: "no pyenv-built CPython 3.9 on this machine (pyenv root/versions/3.9.*)" };
}

describe("tasks check: the Python each row wants", () => {
  let tmp: TempDir;
  beforeAll(async () => {
    tmp = await makeTempDir("flakegym-check-python-");
  });
  afterAll(async () => {
    await tmp.cleanup();
  });

  it("rejects a row whose Python is not here (field python), saying how to provide one", async () => {
    const env = await bareEnv(tmp.path);
    const r = await runCli(["tasks", "check", "--dataset", SHAPES], { timeoutMs: 60_000, env });
    expect(r.exitCode, r.stderr).toBe(1);
    // sympy 1.7's facts run it under 3.9
    expect(r.stdout).toMatch(
      /verified-shapes\.jsonl:2: \[sympy__sympy-20590\] field 'python': task 'sympy__sympy-20590' wants Python 3\.9, and no CPython 3\.9 was found \(looked in: user, nix, uv, pyenv, path; found: 3\.11\.\d+ \(path\)\): name one: --python 3\.9=\/path\/to\/python3\.9 .*uv python install 3\.9.*pyenv install 3\.9.*--allow-python-mismatch/m,
    );
    expect(r.stdout).toMatch(/9 rows, 1 accepted, 8 rejected/);
    const allowed = await runCli(["tasks", "check", "--dataset", SHAPES, "--allow-python-mismatch"], {
      timeoutMs: 60_000,
      env,
    });
    expect(allowed.stdout).toContain(
      "python: row 2 [sympy__sympy-20590]: wants 3.9, none here: runs on the sandbox's python3 (--allow-python-mismatch)",
    );
    expect(allowed.stdout).toMatch(/9 rows, 6 accepted, 3 rejected/);
  });

  it("tasks import refuses the same rows, naming row, wanted version and how to provide it; --python imports them", async (ctx) => {
    const env = await bareEnv(tmp.path);
    const out = join(tmp.path, "imported");
    const r = await runCli(["tasks", "import", "--dataset", SHAPES, "--out", out], {
      timeoutMs: 60_000,
      env,
    });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).toMatch(
      /verified-shapes\.jsonl:2: \[sympy__sympy-20590\] field 'python': task 'sympy__sympy-20590' wants Python 3\.9, and no CPython 3\.9 was found .*name one: --python 3\.9=\/path\/to\/python3\.9 .*pyenv install 3\.9/m,
    );
    expect(r.stdout).toMatch(/9 rows, 1 accepted, 8 rejected/);
    expect(r.stdout).not.toContain("imported sympy__sympy-20590");
    expect(await readdir(out)).toEqual(["cli__cli-10139"]);
    const py = await python39();
    if (!py.path) ctx.skip(py.why!);
    const named = await runCli(
      [
        "tasks",
        "import",
        "--dataset",
        SHAPES,
        "--out",
        join(tmp.path, "named"),
        "--python",
        `3.9=${py.path}`,
      ],
      { timeoutMs: 60_000, env },
    );
    expect(named.stdout).toContain("imported sympy__sympy-20590 (python, network required)");
    expect(named.stdout).toMatch(/9 rows, 6 accepted, 3 rejected/);
  });

  it("names the provider that serves each row: --python (user) before the others", async (ctx) => {
    const py = await python39();
    if (!py.path) ctx.skip(py.why!);
    const env = await bareEnv(tmp.path);
    const r = await runCli(["tasks", "check", "--dataset", SHAPES, "--json", "--python", `3.9=${py.path}`], {
      timeoutMs: 60_000,
      env,
    });
    const body = JSON.parse(r.stdout) as { pythons: Record<string, unknown>[] };
    expect(body.pythons).toContainEqual(
      expect.objectContaining({
        row: 2,
        wanted: "3.9",
        kind: "match",
        provider: "user",
        version: expect.stringMatching(/^3\.9\./),
      }),
    );
  });
});

describe("tasks check (Harbor task dirs)", () => {
  it("notes an accepted task whose eval_cmd verdict has no decoy twin, and only that one", async () => {
    const r = await runCli(["tasks", "check", "--dataset", join(REPO_ROOT, "tests/fixtures/harbor")], {
      timeoutMs: 60_000,
    });
    const unguarded = r.stdout.split("\n").filter((l) => l.includes("has no decoy twin"));
    // absolute-paths compares with a file it reads at /tests/ (no literal a decoy can change) and
    // empty-workspace has no source the decoy code reads: both noted, no other
    expect(unguarded).toEqual([
      expect.stringMatching(
        /^note: row \d+ \[absolute-paths\]: its eval_cmd verdict has no decoy twin \(no assertion in the hidden test files .* has a literal expected value decoys can change\).*--allow-unguarded$/,
      ),
      expect.stringMatching(
        /^note: row \d+ \[empty-workspace\]: its eval_cmd verdict has no decoy twin \(no hidden file is source the decoy code reads.*--allow-unguarded$/,
      ),
    ]);
    // nine accepted (absolute-paths, apt-oracle, reward-json and script-solution among them; the two
    // script solve.sh ones run as Harbor's oracle in bubblewrap), eight rejected for eight reasons
    expect(r.stdout).toMatch(/17 task dirs, 9 accepted, 8 rejected/);
  });
});
