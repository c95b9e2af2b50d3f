import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { REPO_ROOT } from "@flakegym/test-utils";
import { describe, expect, it } from "vitest";

// Tests share one machine (and one PID namespace) with other checkouts' tests, validate runs and
// e2e:real, and as root the host's /proc shows and may signal every process on it, sandboxed ones
// too. A test that kills what it finds by walking /proc (or by name: pkill, killall) must match only
// its own run's processes — scoped by the TMPDIR its run was given — else it ends other runs'
// scoring scripts (sympy-18189's "killed from outside its sandbox (exit 137)", gold and empty at once).

/** Files whose /proc-walking kills are code under test's, run inside a sandbox's own PID namespace, or only screened as text. */
const SANDBOXED: Readonly<Record<string, string>> = {
  "tests/integration/scoring/red-team/attacks-outcome.ts":
    "attacks run as the agent's code in the scoring sandbox",
  "tests/integration/workers/podman-worker.test.ts": "attacks run by worker.exec inside the container",
  "packages/runner/test/scoring/screen.test.ts": "diff lines given to the static screen, never run",
  "tests/integration/workers/local-agent.test.ts":
    "`kill -0` probes (no signal) run as the agent's command inside its sandbox",
  "tests/chaos/faults-four.test.ts":
    "the /proc walk that stops the supervisor is the agent's command, run inside its sandbox's pid namespace",
};

const PROC_WALK = /\/proc\/\[0-9\]\*/;
const KILLS = /\bkill\b/;
const BY_NAME = /\b(pkill|killall)\b/;

/** Lines of `source` that kill processes found by walking /proc or by name, not scoped to the run's TMPDIR. Pure. */
function unscopedKillers(source: string): number[] {
  return source.split("\n").flatMap((line, i) => {
    const walks = PROC_WALK.test(line) && KILLS.test(line);
    return (walks || BY_NAME.test(line)) && !line.includes("TMPDIR") ? [i + 1] : [];
  });
}

function sources(dir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  return names.flatMap((name) => {
    if (name === "node_modules" || name === "dist") return [];
    const p = join(dir, name);
    return statSync(p).isDirectory() ? sources(p) : /\.(m|c)?[jt]s$|\.sh$|\.py$/.test(name) ? [p] : [];
  });
}

describe("test killers", () => {
  it("finds an unscoped /proc walk that kills, and one by name; passes one scoped to its TMPDIR", () => {
    const all = `for p in /proc/[0-9]*; do case "$(cat $p/cmdline)" in *"$H script"*) kill -9 "\${p#/proc/}";; esac; done`;
    const scoped = `for p in /proc/[0-9]*; do case "$c" in "$TMPDIR"/*"$H script"*) kill -9 "\${p#/proc/}";; esac; done`;
    expect(
      unscopedKillers(["x", all, scoped, "pkill -f flakegym", "echo $(cat /proc/[0-9]*/comm)"].join("\n")),
    ).toEqual([2, 4]);
  });

  it("no test kills processes outside its own run (scope a /proc walk by its TMPDIR; no pkill/killall)", () => {
    const roots = readdirSync(join(REPO_ROOT, "packages")).map((p) => join(REPO_ROOT, "packages", p, "test"));
    roots.push(
      join(REPO_ROOT, "tests"),
      join(REPO_ROOT, "scripts", "test"),
      join(REPO_ROOT, "bench", "test"),
    );
    const self = relative(REPO_ROOT, join(REPO_ROOT, "scripts", "test", "test-killers.test.ts"));
    const offenders = roots
      .flatMap(sources)
      .map((f) => relative(REPO_ROOT, f))
      .filter((f) => f !== self && !Object.hasOwn(SANDBOXED, f))
      .flatMap((f) => unscopedKillers(readFileSync(join(REPO_ROOT, f), "utf8")).map((n) => `${f}:${n}`));
    expect(offenders).toEqual([]);
  });
});
