import { spawnSync } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { aptRunOf, environmentOf, harborEvalCommand, withoutCtrf } from "../../src/tasks/harbor.js";
import { composeProblem } from "../../src/tasks/harbor-compose.js";
import { readHarborDir } from "../../src/tasks/harbor-dir.js";
import {
  executableFiles,
  oracleBwrapArgs,
  oraclePatch,
  patchProblem,
} from "../../src/tasks/harbor-oracle.js";
import { missingPackages, substitutionNote } from "../../src/tasks/harbor-served.js";
import { findBwrap } from "../../src/workers/local/shape.js";

const FIXTURES = fileURLToPath(new URL("../../../../tests/fixtures/harbor/", import.meta.url));

const noBwrap = findBwrap() === undefined;
if (noBwrap) console.log("skipped solve.sh oracle runs: bubblewrap (bwrap) is not installed here");
/** dpkg-query reads this machine's installed packages (the replay under the Nix check has none: every package is missing). */
const noDpkg = spawnSync("dpkg-query", ["--version"], { stdio: "ignore" }).status !== 0;
if (noDpkg)
  console.log(
    "skipped reading installed packages: dpkg-query is not installed here (so every apt package is missing)",
  );

describe("aptRunOf", () => {
  it("takes apt-get update/install and the lists' rm out of a RUN line, keeping the rest", () => {
    expect(
      aptRunOf(
        "apt-get update && apt-get install -y --no-install-recommends curl python3 && rm -rf /var/lib/apt/lists/*",
      ),
    ).toEqual({ packages: ["curl", "python3"] });
    expect(aptRunOf("DEBIAN_FRONTEND=noninteractive apt-get install -y git && chmod +x /app/run.sh")).toEqual(
      {
        packages: ["git"],
        rest: "chmod +x /app/run.sh",
      },
    );
    expect(aptRunOf("make -C /app")).toEqual({ packages: [], rest: "make -C /app" });
  });

  it("refuses what it cannot read, by name", () => {
    expect(aptRunOf("apt-get install -y python3=3.12.3-0ubuntu1")).toMatch(
      /'python3=3\.12\.3-0ubuntu1' is not a plain package name/,
    );
    expect(aptRunOf("apt-get dist-upgrade -y")).toMatch(/'apt-get dist-upgrade' is not read/);
    expect(aptRunOf("apt-get install -y curl || true")).toMatch(/pipes or \|\|/);
  });
});

describe("environmentOf (the cookbook's Dockerfiles)", () => {
  it("reads FROM ubuntu:24.04 + apt-get + WORKDIR /app, and refuses ENTRYPOINT by name", () => {
    const env = environmentOf(
      "FROM ubuntu:24.04\n\nRUN apt-get update && apt-get install -y \\\n    curl \\\n    python3 \\\n    && rm -rf /var/lib/apt/lists/*\n\nWORKDIR /app\n",
    );
    expect(env).toMatchObject({
      profile: "dev-base",
      image: "ubuntu:24.04",
      workdir: "/app",
      aptPackages: ["curl", "python3"],
      install: [],
    });
    expect(environmentOf('FROM ubuntu:24.04\nWORKDIR /app\nENTRYPOINT ["/entrypoint.sh"]')).toMatchObject({
      reason: /^ENTRYPOINT .*flakegym starts no entrypoint/,
    });
    expect(environmentOf("FROM ubuntu:24.04\nWORKDIR /usr/src/app")).toMatchObject({
      reason: /WORKDIR .*sandbox's own \/usr/,
    });
  });
});

describe("harbor-served", () => {
  it.skipIf(noDpkg)(
    "finds installed packages installed and an unknown one missing (dpkg on this machine)",
    async () => {
      expect(await missingPackages(["bash", "flakegym-no-such-package"])).toEqual([
        "flakegym-no-such-package",
      ]);
    },
  );

  it("records the substitution", () => {
    expect(
      substitutionNote(
        { image: "ubuntu:24.04", aptPackages: ["curl"] },
        "this machine's Debian 12.11 system",
      ),
    ).toBe(
      "FROM ubuntu:24.04 served by this machine's Debian 12.11 system (the dev-base profile: /usr bound read-only, no image registry); apt-get install curl served by the Debian packages installed there (Ubuntu's archive is unreachable)",
    );
  });
});

describe("oraclePatch (solve.sh run as Harbor's oracle)", () => {
  it("binds the workspace at the WORKDIR as cwd, the solution read-only, no network, root inside", () => {
    const a = oracleBwrapArgs("/t", "/app");
    expect(a.join(" ")).toContain("--bind /t/ws /app");
    expect(a.join(" ")).toContain("--ro-bind /t/solution /solution");
    expect(a).toContain("--unshare-net");
    expect(a.join(" ")).toContain("--chdir /app");
    expect(a.join(" ")).toContain("--uid 0 --gid 0");
  });

  it.skipIf(noBwrap)("turns what solve.sh wrote (relative and /app paths, chmod) into a patch", async () => {
    const r = await oraclePatch({
      repo: { "greet.py": "def greet(n):\n    return 'hi'\n" },
      solution: {
        "solve.sh":
          "#!/bin/bash\nset -e\necho 'Hello, world!' > hello.txt\nsed -i \"s/'hi'/f'hi {n}'/\" /app/greet.py\nprintf '#!/bin/sh\\necho ok\\n' > /app/run.sh\nchmod +x /app/run.sh\n[ \"$(pwd)\" = /app ]\n",
      },
      workdir: "/app",
      timeoutMs: 60_000,
    });
    if ("reason" in r) throw new Error(r.reason);
    expect(r.patch).toMatch(/^diff --git a\/greet\.py b\/greet\.py/m);
    expect(r.patch).toContain("+    return f'hi {n}'");
    expect(r.patch).toMatch(/diff --git a\/hello\.txt b\/hello\.txt\nnew file mode 100644/);
    expect(r.patch).toMatch(/diff --git a\/run\.sh b\/run\.sh\nnew file mode 100755/);
    expect(executableFiles(r.patch)).toEqual(["run.sh"]);
  });

  it.skipIf(noBwrap)(
    "keeps a hunk's trailing blank context lines (a real task's solve.sh edits a file ending in blank lines), so the patch applies",
    async () => {
      const before = "def main():\n    run(1)\n    print('done')\n\n\n";
      const r = await oraclePatch({
        repo: { "m.py": before },
        solution: { "solve.sh": "set -e\nsed -i 's/run(1)/run(2)/' m.py\n" },
        workdir: "/app",
        timeoutMs: 60_000,
      });
      if ("reason" in r) throw new Error(r.reason);
      expect(r.patch.endsWith(" print('done')\n \n \n")).toBe(true);
      const d = await mkdtemp(join(tmpdir(), "fg-oracle-apply-"));
      try {
        await writeFile(join(d, "m.py"), before);
        await writeFile(join(d, "p.diff"), r.patch);
        const a = spawnSync("git", ["apply", "--check", "p.diff"], { cwd: d, encoding: "utf8" });
        expect(a.stderr).toBe("");
        expect(a.status).toBe(0);
      } finally {
        await rm(d, { recursive: true, force: true });
      }
    },
  );

  it.skipIf(noBwrap)(
    "leaves out the bytecode caches running Python code writes (a real public task's solve.sh runs its resolver), naming them",
    async () => {
      const r = await oraclePatch({
        repo: {
          "runtime/resolver.py": "VALUE = 1\n",
          "runtime/run.py": "import resolver\nprint(resolver.VALUE)\n",
        },
        solution: {
          "solve.sh": "set -e\nsed -i 's/1/2/' runtime/resolver.py\ncd runtime && python3 run.py > out.txt\n",
        },
        workdir: "/app",
        timeoutMs: 60_000,
      });
      if ("reason" in r) throw new Error(r.reason);
      expect(r.patch).toContain("+VALUE = 2");
      expect(r.patch).toMatch(/diff --git a\/runtime\/out\.txt/);
      expect(r.patch).not.toMatch(/pycache|\.pyc|GIT binary patch/);
      expect(r.byproducts).toEqual(["runtime/__pycache__/"]);
    },
  );

  it.skipIf(noBwrap)(
    "refuses a failing script, one that changes nothing, one that reaches the network, and a symlink",
    async () => {
      const run = (script: string) =>
        oraclePatch({
          repo: { "a.txt": "a\n" },
          solution: { "solve.sh": script },
          workdir: "/app",
          timeoutMs: 60_000,
        });
      expect(await run("echo broken >&2; exit 3")).toMatchObject({ reason: /exited 3 .*broken/ });
      expect(await run("true")).toMatchObject({ reason: /changed nothing under WORKDIR \/app/ });
      expect(await run("echo x > /etc/owned")).toMatchObject({ reason: /exited 1/ });
      expect(await run("exec 3<>/dev/tcp/1.1.1.1/80 && echo reached > /app/net.txt")).toMatchObject({
        reason: /exited/,
      });
      expect(patchProblem("diff --git a/l b/l\nnew file mode 120000\n", "/app")).toMatchObject({
        reason: /symbolic link/,
      });
      expect(
        patchProblem(
          "diff --git a/bin/x b/bin/x\nnew file mode 100755\nindex 0..1\nGIT binary patch\nliteral 3\n",
          "/app",
        ),
      ).toMatchObject({ reason: /binary file bin\/x .*cannot write/ });
      const slow = await oraclePatch({
        repo: { "a.txt": "a\n" },
        solution: { "solve.sh": "sleep 30" },
        workdir: "/app",
        timeoutMs: 1000,
      });
      expect(slow).toMatchObject({ reason: /did not finish within 1000 ms/ });
    },
    120_000,
  );
});

describe("readHarborDir with a script solve.sh", () => {
  it.skipIf(noBwrap)(
    "imports the cookbook-shaped fixture: ubuntu + apt served here, /app bound, the oracle's diff as the reference",
    async () => {
      const r = await readHarborDir(`${FIXTURES}apt-oracle`, 1);
      if (!r.ok) throw new Error(`${r.error.field}: ${r.error.reason}`);
      const { spec, files, notes } = r.task;
      expect(spec).toMatchObject({ profile: "dev-base", workdir: "/app", install: [] });
      expect(spec.metadata?.harbor_environment).toMatch(
        /^FROM ubuntu:24\.04 served by .*apt-get install curl python3/,
      );
      expect(spec.metadata?.harbor_solution).toMatch(/solve\.sh run as Harbor's oracle/);
      expect(String(files["solution.patch"])).toMatch(
        /new file mode 100644\n[\s\S]*\+def count_words\(text\):/,
      );
      expect(notes?.join("\n")).toMatch(/reference solution: solution\/solve\.sh run/);
    },
  );

  it("refuses the fixture whose Dockerfile installs a package this system lacks, and the ENTRYPOINT one", async () => {
    const missing = await readHarborDir(`${FIXTURES}apt-missing`, 1);
    // without dpkg-query the fixture's curl and python3 are missing too, and named
    expect(!missing.ok && missing.error.reason).toMatch(
      noDpkg
        ? /^RUN apt-get install curl python3 flakegym-no-such-package: not installed in /
        : /^RUN apt-get install flakegym-no-such-package: not installed in /,
    );
    const entry = await readHarborDir(`${FIXTURES}entrypoint`, 1);
    expect(!entry.ok && `${entry.error.field}: ${entry.error.reason}`).toMatch(
      /^environment\/Dockerfile: ENTRYPOINT /,
    );
  });
});

describe("withoutCtrf", () => {
  it("drops pytest's ctrf report option, saying so, and leaves other lines alone", () => {
    expect(withoutCtrf("pytest --ctrf /logs/verifier/ctrf.json /tests/t.py -rA\necho --ctrf x")).toEqual({
      script: "pytest /tests/t.py -rA\necho --ctrf x",
      notes: ["tests/test.sh: pytest's --ctrf report option dropped (no pytest-json-ctrf plugin here)"],
    });
    expect(withoutCtrf("pytest /tests/t.py --ctrf=/logs/c.json").script).toBe("pytest /tests/t.py");
    expect(withoutCtrf("pytest -q").notes).toEqual([]);
  });
});

describe("composeProblem", () => {
  it("names each service beside main that could not be started, and what it is built from", () => {
    const text =
      "services:\n  main:\n    depends_on:\n      api-server:\n        condition: service_healthy\n  api-server:\n    build:\n      context: ./api-server\n  cache:\n    image: redis:7\n";
    expect(composeProblem("environment/docker-compose.yaml", text).reason).toMatch(
      /^service 'api-server' \(build \.\/api-server\), 'cache' \(image redis:7\) could not be started: /,
    );
    expect(composeProblem("c.yaml", "services:\n  main:\n    cpus: 2\n").reason).toMatch(
      /overrides Harbor's main container/,
    );
    expect(composeProblem("c.yaml", "services: [").reason).toMatch(/not valid YAML/);
    expect(composeProblem("c.yaml", "version: 3\n").reason).toMatch(/no `services` map/);
  });
});

/** python3 runs reward.json's judge (the task's sandbox has it; the replay under the Nix check has none). */
const noPython3 = spawnSync("python3", ["-c", "import json"], { stdio: "ignore" }).status !== 0;
if (noPython3) console.log("skipped the reward.json verdicts: python3 is not installed here");

describe("harborEvalCommand", () => {
  /** The eval command's exit code and output over a test.sh, in a scratch workspace. */
  async function withVerdict(
    run: (
      verdict: (testSh: string) => Promise<{ code: number | undefined; out: string }>,
      dir: string,
    ) => Promise<void>,
  ) {
    const { execa } = await import("execa");
    const { mkdtemp, mkdir, writeFile, rm } = await import("node:fs/promises");
    const { tmpdir } = await import("node:os");
    const { join } = await import("node:path");
    const dir = await mkdtemp(join(tmpdir(), "flakegym-reward-"));
    try {
      await run(async (testSh: string) => {
        await mkdir(join(dir, ".harbor", "tests"), { recursive: true });
        await writeFile(join(dir, ".harbor", "tests", "test.sh"), testSh);
        const r = await execa("sh", ["-c", harborEvalCommand()], { cwd: dir, reject: false });
        return { code: r.exitCode, out: r.stdout };
      }, dir);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }
  const L = "$HARBOR_ROOT/logs/verifier";

  it("judges reward.txt; no reward at all, or a test.sh cut short by the verifier timeout, is 0", async () => {
    const { execa } = await import("execa");
    const { writeFile } = await import("node:fs/promises");
    const { join } = await import("node:path");
    await withVerdict(async (verdict, dir) => {
      expect((await verdict(`echo 1 > ${L}/reward.txt`)).code).toBe(0);
      expect((await verdict(`echo 0 > ${L}/reward.txt`)).code).toBe(1);
      // Harbor reads reward.txt with float(): 1.0 (a public dynamo task writes it so) is 1
      for (const text of ["1.0", " 1.00\n\n", "+1.", "2"])
        expect((await verdict(`printf '${text}' > ${L}/reward.txt`)).code, text).toBe(0);
      for (const text of ["0.0", "0.5", "one", "1 1", "", ".5", "1.0.0", "1+1"])
        expect((await verdict(`printf '${text}' > ${L}/reward.txt`)).code, text).toBe(1);
      expect((await verdict("true")).code).toBe(1);
      // task.toml's verifier timeout cuts test.sh short: no reward written, so 0
      const cmd = harborEvalCommand(1);
      expect(cmd).toContain('timeout -k 10 1 bash "$HARBOR_ROOT/tests/test.sh"');
      await writeFile(join(dir, ".harbor", "tests", "test.sh"), `sleep 5; echo 1 > ${L}/reward.txt`);
      expect((await execa("sh", ["-c", cmd], { cwd: dir, reject: false })).exitCode).toBe(1);
    });
  });

  it.skipIf(noPython3)("else judges every key of reward.json, printing it whole", async () => {
    await withVerdict(async (verdict) => {
      const both = await verdict(`echo '{"correctness": 1, "performance": 1}' > ${L}/reward.json`);
      expect(both).toEqual({ code: 0, out: 'harbor reward.json: {"correctness": 1, "performance": 1}' });
      expect((await verdict(`echo '{"correctness": 1, "performance": 0}' > ${L}/reward.json`)).code).toBe(1);
      expect((await verdict(`echo '{}' > ${L}/reward.json`)).code).toBe(1);
      expect((await verdict(`echo '{"a": "1"}' > ${L}/reward.json`)).code).toBe(1);
    });
  });
});
