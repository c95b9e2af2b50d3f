import { join } from "node:path";
import { stripVTControlCharacters } from "node:util";
import { makeTempDir, REPO_ROOT } from "@flakegym/test-utils";
import { execa } from "execa";
import { describe, expect, it } from "vitest";
import {
  copyTestSources,
  linkNodeModules,
  reachesOut,
  readUnitCheckScript,
  sandboxArgs,
  sandboxSensitiveTests,
  writeEtc,
} from "./unit-check-sandbox.js";

// `checks.<system>.runner-unit-tests` without Nix: the check's own lines, under bubblewrap with no
// network, uid 1000 and only the check's inputs, proving the unit layer needs no sandbox binary
// and that every test it skips says why. The replay runs the check's test files that can reach
// past their process (a program, a worker, a socket: see reachesOut); the others compute
// in-process on their sources alone and already run in the projects' own run of `npm test`.

describe("reachesOut", () => {
  const root = "/r";
  const sources = new Map([
    ["/r/packages/a/test/pure.test.ts", 'import { f } from "../src/f.js";\nimport { z } from "zod";'],
    ["/r/packages/a/src/f.ts", 'import { join } from "node:path";\nexport const f = 1; // Buffer.from("x")'],
    ["/r/packages/a/test/spawns.test.ts", 'import { g } from "../src/g.js";'],
    ["/r/packages/a/src/g.ts", 'import { h } from "./deep/h.js";'],
    ["/r/packages/a/src/deep/h.ts", 'import { execa } from "execa";'],
    ["/r/packages/a/test/socket.test.ts", 'import { createServer } from "node:http";'],
    ["/r/packages/a/test/fetches.test.ts", 'await fetch("http://x");'],
    ["/r/packages/a/test/dynamic.test.ts", "await import(name);"],
    ["/r/packages/a/test/lost.test.ts", 'import { m } from "../src/missing.js";'],
    ["/r/packages/a/test/workspace.test.ts", 'import { p } from "@flakegym/b";'],
    ["/r/packages/b/src/index.ts", 'import { spawn } from "node:child_process";'],
    [
      "/r/packages/a/test/cycle.test.ts",
      'import "./cycle.test.js";\nimport { Worker } from "node:worker_threads";',
    ],
  ]);
  it("follows relative and workspace imports to a program, a worker or a socket; only in-process modules stay out", () => {
    const out = [...sources.keys()].filter((f) => f.endsWith(".test.ts") && reachesOut(f, sources, root));
    expect(out.map((f) => f.slice("/r/packages/a/test/".length)).sort()).toEqual([
      "cycle.test.ts",
      "dynamic.test.ts",
      "fetches.test.ts",
      "lost.test.ts",
      "socket.test.ts",
      "spawns.test.ts",
      "workspace.test.ts",
    ]);
  });
});

const bwrap = await execa("sh", ["-c", "command -v bwrap"], { reject: false });
const probe =
  bwrap.exitCode === 0
    ? await execa(bwrap.stdout, ["--unshare-all", "--unshare-user", "--ro-bind", "/", "/", "true"], {
        reject: false,
      })
    : undefined;
const reason =
  bwrap.exitCode !== 0
    ? "bubblewrap (bwrap) is not installed"
    : probe?.exitCode !== 0
      ? `bwrap cannot create a user namespace here: ${probe?.stderr.trim()}`
      : undefined;
if (reason) console.log(`skipped the runner-unit-tests replay: ${reason}`);

/** Files whose tests were skipped, and files that printed a `skipped …: <reason>` line. */
function skipsOf(output: string): { skipped: Set<string>; explained: Set<string> } {
  const lines = stripVTControlCharacters(output).split("\n");
  const skipped = new Set<string>();
  const explained = new Set<string>();
  lines.forEach((line, i) => {
    const s = /(test\/\S+\.test\.ts) \(\d+ tests? \| (?:\d+ failed \| )?\d+ skipped\)/.exec(line);
    if (s) skipped.add(s[1]!);
    const out = /^stdout \| (\S+\.test\.ts)/.exec(line);
    if (out && lines[i + 1]?.startsWith("skipped ")) explained.add(out[1]!);
  });
  return { skipped, explained };
}

describe.skipIf(reason !== undefined)("checks.<system>.runner-unit-tests, replayed under bubblewrap", () => {
  it("passes with no sandbox binary, no network, uid 1000; every skipping file prints its reason", async () => {
    const check = readUnitCheckScript(join(REPO_ROOT, "nix/checks/runner-tests.nix"));
    const projects = [...check.matchAll(/--project (\S+)/g)].map((m) => m[1]!);
    const files = sandboxSensitiveTests(REPO_ROOT, projects);
    // at least the files that need a sandbox binary (they skip here, saying why)
    expect(files).toEqual(expect.arrayContaining(["packages/runner/test/scoring/score-diff.test.ts"]));
    const script = `${check} ${files.join(" ")}`;
    const tmp = await makeTempDir("flakegym-unit-check-");
    try {
      const work = join(tmp.path, "work");
      copyTestSources(REPO_ROOT, work);
      linkNodeModules(join(REPO_ROOT, "node_modules"), work);
      writeEtc(join(tmp.path, "etc"));
      const args = sandboxArgs({
        work,
        nodeModules: join(REPO_ROOT, "node_modules"),
        etc: join(tmp.path, "etc"),
      });
      // What the replay promises: the check's inputs only, no sandbox tool, no network.
      const net = `require("node:net").connect(80, "192.0.2.1").on("error", (e) => console.log(e.code))`;
      const inside = await execa(
        bwrap.stdout,
        [
          ...args,
          "/tools/bash",
          "-c",
          `id -u; command -v bwrap podman python3 cc; ls /usr/bin 2>&1 >/dev/null | wc -l; node -e '${net}'`,
        ],
        { reject: false },
      );
      expect(inside.stdout.split("\n")).toEqual(["1000", "1", "ENETUNREACH"]);
      const r = await execa(bwrap.stdout, [...args, "/tools/bash", "-euc", script], {
        reject: false,
        all: true,
        timeout: 900_000,
      });
      const summary = stripVTControlCharacters(r.all).match(/^\s*Tests\s+.*$/m)?.[0];
      expect(r.exitCode, r.all.slice(-4_000)).toBe(0);
      expect(summary).toMatch(/passed/);
      const ran = stripVTControlCharacters(r.all).match(/^\s*Test Files\s+.*\((\d+)\)$/m)?.[1];
      expect(Number(ran), "every selected file ran, none other").toBe(files.length);
      const { skipped, explained } = skipsOf(r.all);
      expect(skipped.size).toBeGreaterThan(0); // at least the bubblewrap suites
      expect([...skipped].filter((f) => !explained.has(f))).toEqual([]);
    } finally {
      await tmp.cleanup();
    }
  }, 1_000_000);
});
