import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readFileSync,
  realpathSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execa } from "execa";
import { afterAll, describe, expect, it } from "vitest";
import { CORE_PROBES_NODE_ARGS, CORE_PROBES_PRELOAD_PATH } from "../src/core-probes.js";

// The core's tool probes answered in its own process (supervisor/core-probes.cjs): every answer is
// compared with what the real `which` and `xdg-user-dir` say on the same files and environment.

interface Probes {
  whichToolAnswer(
    command: string,
    env: Record<string, string>,
    cwd: string,
    fsx: unknown,
  ): { found: boolean } | undefined;
  spawnProbeAnswer(
    file: string,
    args: string[],
    env: Record<string, string | undefined>,
    cwd: string,
    fsx: unknown,
  ): { stdout: string; code: number } | undefined;
  realFs: unknown;
  KNOWN: Record<string, string[]>;
}
const require = createRequire(import.meta.url);
const probes = require("../supervisor/core-probes.cjs") as Probes;

const sha = (p: string) => createHash("sha256").update(readFileSync(p)).digest("hex");
const known = (name: string, path: string) =>
  existsSync(path) && (probes.KNOWN[name] ?? []).includes(sha(realpathSync(path)));
const hasWhich = known("which", "/usr/bin/which");
const hasXdg = known("xdg-user-dir", "/usr/bin/xdg-user-dir");

const root = join(tmpdir(), `flakegym-core-probes-${process.pid}`);
afterAll(() => execFileSync("rm", ["-rf", root]));

/** Directories of PATH entries with every kind of entry `which` must tell apart. */
function fixture(): { dirs: Record<string, string>; cwd: string } {
  const d = (n: string) => {
    const p = join(root, n);
    mkdirSync(p, { recursive: true });
    return p;
  };
  const dirs = { a: d("a"), b: d("b"), c: d("c"), cwd: d("cwd") };
  const file = (p: string, mode: number) => {
    writeFileSync(p, "#!/bin/sh\n");
    chmodSync(p, mode);
  };
  file(join(dirs.a, "tool"), 0o755);
  file(join(dirs.b, "tool"), 0o755);
  file(join(dirs.a, "noexec"), 0o644);
  file(join(dirs.b, "noexec"), 0o755);
  mkdirSync(join(dirs.a, "isdir"), { recursive: true });
  symlinkSync(join(dirs.b, "tool"), join(dirs.c, "link"));
  symlinkSync(join(dirs.b, "missing"), join(dirs.c, "dangling"));
  file(join(dirs.cwd, "dotted"), 0o755);
  return { dirs, cwd: dirs.cwd };
}

describe.skipIf(!hasWhich)(
  "core-probes: which <tool> (skipped: /usr/bin/which is not the pinned debianutils script)",
  () => {
    const { dirs, cwd } = fixture();
    const paths = [
      `${dirs.a}:${dirs.b}:${dirs.c}:/usr/bin:/bin`,
      `${dirs.b}:${dirs.a}:/usr/bin:/bin`,
      `:${dirs.c}:/usr/bin:/bin`,
      `${dirs.c}::/usr/bin:/bin`,
      `/usr/bin:/bin:`,
      `${root}/nonexistent:/usr/bin:/bin`,
    ];
    const names = ["tool", "noexec", "isdir", "link", "dangling", "dotted", "sh", "no-such-tool", "ls"];

    it("says found exactly when `sh -c 'which <tool>'` succeeds, for every PATH shape", () => {
      for (const PATH of paths)
        for (const name of names) {
          const env = { PATH, HOME: root };
          const ours = probes.whichToolAnswer(`which ${name}`, env, cwd, probes.realFs);
          let real = true;
          try {
            execFileSync("/bin/sh", ["-c", `which ${name}`], { env, cwd, stdio: "ignore" });
          } catch {
            real = false;
          }
          expect({ PATH, name, found: ours?.found }).toEqual({ PATH, name, found: real });
        }
    });

    it("runs the real program for anything else", () => {
      const env = { PATH: `/usr/bin:/bin`, HOME: root };
      for (const cmd of ["which -a ls", "which ls git", "which $(id)", "which ../x", "whichls", "which"])
        expect(probes.whichToolAnswer(cmd, env, cwd, probes.realFs)).toBeUndefined();
      // a `which` earlier on PATH that is not the pinned script: the real one must run
      const planted = join(root, "planted");
      mkdirSync(planted, { recursive: true });
      writeFileSync(join(planted, "which"), "#!/bin/sh\nexit 0\n");
      chmodSync(join(planted, "which"), 0o755);
      expect(
        probes.whichToolAnswer("which ls", { PATH: `${planted}:/usr/bin:/bin` }, cwd, probes.realFs),
      ).toBeUndefined();
    });

    it("answers `which xdg-user-dir` as the real one prints it", () => {
      for (const PATH of [`${dirs.a}:/usr/bin:/bin`, `${dirs.a}:${dirs.b}`, `:/usr/bin`]) {
        const ours = probes.spawnProbeAnswer("which", ["xdg-user-dir"], { PATH }, cwd, probes.realFs);
        if (!PATH.includes("/usr/bin")) {
          // no `which` on PATH at all: not ours to answer
          expect(ours).toBeUndefined();
          continue;
        }
        let real: { stdout: string; code: number };
        try {
          real = {
            stdout: execFileSync("which", ["xdg-user-dir"], { env: { PATH }, cwd, encoding: "utf8" }),
            code: 0,
          };
        } catch (e) {
          real = {
            stdout: String((e as { stdout?: string }).stdout ?? ""),
            code: (e as { status: number }).status,
          };
        }
        expect(ours).toEqual(real);
      }
    });
  },
);

describe.skipIf(!hasWhich || !hasXdg)(
  "core-probes: xdg-user-dir DOCUMENTS (skipped: /usr/bin/which or /usr/bin/xdg-user-dir is not the pinned script)",
  () => {
    const home = join(root, "home");
    mkdirSync(join(home, ".config"), { recursive: true });
    const real = (env: Record<string, string>) =>
      execFileSync("xdg-user-dir", ["DOCUMENTS"], { env, cwd: home, encoding: "utf8" });

    it("prints HOME as the script does when it has no user-dirs file to read", () => {
      const env = { PATH: "/usr/bin:/bin", HOME: home };
      const ours = probes.spawnProbeAnswer("xdg-user-dir", ["DOCUMENTS"], env, home, probes.realFs);
      expect(ours).toEqual({ stdout: real(env), code: 0 });
    });

    it("lets the script run whenever it would read something: a user-dirs file, XDG variables, an odd HOME", () => {
      const env = { PATH: "/usr/bin:/bin", HOME: home };
      writeFileSync(join(home, ".config", "user-dirs.dirs"), 'XDG_DOCUMENTS_DIR="$HOME/Docs"\n');
      expect(
        probes.spawnProbeAnswer("xdg-user-dir", ["DOCUMENTS"], env, home, probes.realFs),
      ).toBeUndefined();
      expect(real(env)).toBe(`${home}/Docs\n`); // what it would have missed
      execFileSync("rm", [join(home, ".config", "user-dirs.dirs")]);
      for (const extra of [
        { XDG_CONFIG_HOME: root },
        { XDG_DOCUMENTS_DIR: "/x" },
        { HOME: `${home} x` },
        { HOME: "/a*" },
      ])
        expect(
          probes.spawnProbeAnswer("xdg-user-dir", ["DOCUMENTS"], { ...env, ...extra }, home, probes.realFs),
        ).toBeUndefined();
      expect(probes.spawnProbeAnswer("xdg-user-dir", ["DESKTOP"], env, home, probes.realFs)).toBeUndefined();
    });

    it("gives execa 9 the same results as the real programs, without spawning them", async () => {
      // a node process with the probes installed and one without, the same calls
      const script = `
        const cp = require("node:child_process");
        let spawned = 0;
        const spawn = cp.spawn;
        cp.spawn = function () { spawned++; return spawn.apply(this, arguments); };
        if (process.env.WITH_PROBES === "1") require(${JSON.stringify(CORE_PROBES_PRELOAD_PATH)});
        (async () => {
          const { execa } = await import(${JSON.stringify(require.resolve("execa"))});
          const out = [];
          for (const [f, a] of [["which", ["xdg-user-dir"]], ["xdg-user-dir", ["DOCUMENTS"]]]) {
            const r = await execa(f, a).then((r) => r, (e) => e);
            out.push({ stdout: r.stdout, exitCode: r.exitCode, failed: r.failed });
          }
          const r2 = await execa("which", ["xdg-user-dir"], { env: { PATH: "/nonexistent-dir" }, extendEnv: false }).then((r) => r, (e) => e);
          out.push({ failed: r2.failed });
          const tools = ["sh", "no-such-tool-x"].map((t) => { try { cp.execSync("which " + t, { stdio: "ignore" }); return true; } catch { return false; } });
          console.log(JSON.stringify({ out, tools, spawned }));
        })().catch((e) => { console.error(e); process.exit(1); });`;
      const run = async (withProbes: boolean) =>
        JSON.parse(
          await execa(process.execPath, ["-e", script], {
            env: { PATH: "/usr/bin:/bin", HOME: home, WITH_PROBES: withProbes ? "1" : "0" },
            extendEnv: false,
            timeout: 60_000,
            reject: false,
          }).then((r) => r.stdout || r.stderr),
        ) as { out: unknown[]; tools: boolean[]; spawned: number };
      const [without, withP] = [await run(false), await run(true)];
      expect(withP.out).toEqual(without.out);
      expect(withP.tools).toEqual(without.tools);
      expect(without.tools).toEqual([true, false]);
      expect(without.spawned).toBeGreaterThanOrEqual(2);
      // with no `which` on PATH there is nothing to answer for: that call really runs (and fails)
      expect(withP.spawned).toBe(1);
    });
  },
);

describe("core-probes preload", () => {
  it("ships beside the supervisor and is loaded with --require", () => {
    expect(existsSync(CORE_PROBES_PRELOAD_PATH)).toBe(true);
    expect(CORE_PROBES_NODE_ARGS).toEqual(["--require", CORE_PROBES_PRELOAD_PATH]);
  });
});
