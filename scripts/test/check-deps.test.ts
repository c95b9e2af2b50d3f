import { cp, mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { makeTempDir, REPO_ROOT } from "@flakegym/test-utils";
import { execa } from "execa";
import { describe, expect, it } from "vitest";
import {
  type FolderImport,
  findViolations,
  folderLoops,
  layerViolations,
  RUNNER_LAYERS,
} from "../check-deps.js";

async function copyManifests(dst: string) {
  for (const p of ["profiles", "nomad-jobs", "cline-vendor", "runner"]) {
    await mkdir(join(dst, "packages", p, "src"), { recursive: true });
    await cp(join(REPO_ROOT, "packages", p, "package.json"), join(dst, "packages", p, "package.json"));
  }
}

describe("dependency direction", () => {
  it("holds for the repository as it is", () => {
    expect(findViolations(REPO_ROOT)).toEqual([]);
  });

  it("catches a leaf importing the runner by package name", async () => {
    await using tmp = await makeTempDir();
    await copyManifests(tmp.path);
    await writeFile(
      join(tmp.path, "packages/profiles/src/bad.ts"),
      'import { main } from "@flakegym/runner";\n',
    );
    expect(findViolations(tmp.path, [])).toEqual([
      { from: "profiles", to: "runner", where: "packages/profiles/src/bad.ts:1 imports '@flakegym/runner'" },
    ]);
  });

  it("catches a relative import that climbs into another package and a manifest dependency", async () => {
    await using tmp = await makeTempDir();
    await copyManifests(tmp.path);
    await writeFile(
      join(tmp.path, "packages/cline-vendor/src/bad.ts"),
      'export { x } from "../../nomad-jobs/src/index.js";\n',
    );
    await writeFile(
      join(tmp.path, "packages/nomad-jobs/package.json"),
      JSON.stringify({ name: "@flakegym/nomad-jobs", dependencies: { "@flakegym/cline-vendor": "*" } }),
    );
    const v = findViolations(tmp.path, []);
    expect(v.map((x) => `${x.from}->${x.to}`).sort()).toEqual([
      "cline-vendor->nomad-jobs",
      "nomad-jobs->cline-vendor",
    ]);
  });

  it("the npm script fails with a message naming the edge", async () => {
    await using tmp = await makeTempDir();
    await copyManifests(tmp.path);
    await writeFile(join(tmp.path, "packages/nomad-jobs/src/bad.ts"), 'import "@flakegym/runner";\n');
    const r = await execa("npx", ["tsx", join(REPO_ROOT, "scripts/check-deps.ts"), tmp.path], {
      reject: false,
      cwd: REPO_ROOT,
    });
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toContain("nomad-jobs → runner is not allowed");
  });

  it("catches a lower runner folder importing one that composes it", async () => {
    await using tmp = await makeTempDir();
    await copyManifests(tmp.path);
    await mkdir(join(tmp.path, "packages/runner/src/scoring"), { recursive: true });
    await writeFile(
      join(tmp.path, "packages/runner/src/scoring/bad.ts"),
      'import type { Score } from "../rollout/schema.js";\nimport { x } from "../tasks/task-spec.js";\n',
    );
    expect(findViolations(tmp.path, [])).toEqual([
      {
        from: "runner/scoring",
        to: "runner/rollout",
        where:
          "packages/runner/src/scoring/bad.ts:1 imports '../rollout/schema.js': an import up the layer order",
      },
    ]);
  });

  it("names a two-folder loop and a folder missing from the order", async () => {
    await using tmp = await makeTempDir();
    await copyManifests(tmp.path);
    for (const d of ["text", "redact", "brand-new"])
      await mkdir(join(tmp.path, "packages/runner/src", d), { recursive: true });
    await writeFile(join(tmp.path, "packages/runner/src/text/a.ts"), 'import { r } from "../redact/b.js";\n');
    await writeFile(join(tmp.path, "packages/runner/src/redact/b.ts"), 'export { t } from "../text/a.js";\n');
    await writeFile(join(tmp.path, "packages/runner/src/brand-new/c.ts"), 'import "../errors.js";\n');
    const v = findViolations(tmp.path, []);
    expect(v.map((x) => `${x.from} ${x.to}`).sort()).toEqual([
      "runner/brand-new runner/errors",
      "runner/redact runner/text",
      "runner/text runner/redact",
      "runner/{redact, text} one another",
    ]);
    expect(v.find((x) => x.from === "runner/text")!.where).toContain("same layer");
    expect(v.find((x) => x.from === "runner/brand-new")!.where).toContain(
      "brand-new is not in RUNNER_LAYERS",
    );
  });
});

describe("runner layer rules (pure)", () => {
  const imp = (from: string, to: string): FolderImport => ({
    from,
    to,
    where: `${from}/x.ts:1 imports '../${to}/y.js'`,
  });
  const layers = [["a"], ["b", "c"], ["d"]];

  it("allows only imports down the order", () => {
    expect(layerViolations([imp("d", "b"), imp("c", "a"), imp("d", "a")], layers)).toEqual([]);
    const v = layerViolations([imp("a", "b"), imp("b", "c"), imp("b", "z")], layers);
    expect(v.map((x) => x.where.split(": ")[1])).toEqual([
      "an import up the layer order",
      "same layer",
      "z is not in RUNNER_LAYERS (add it to the layer its imports put it in)",
    ]);
  });

  it("passes over a pending pair, and names one that no import uses any more", () => {
    expect(layerViolations([imp("a", "d")], layers, ["a -> d"])).toEqual([]);
    const v = layerViolations([], layers, ["a -> d"]);
    expect(v).toEqual([
      {
        from: "runner/a",
        to: "runner/d",
        where: "RUNNER_LAYER_PENDING lists it but no import uses it any more: strike it",
      },
    ]);
  });

  it("finds every loop, long or short, and no loop in a layered graph", () => {
    expect(folderLoops([imp("d", "b"), imp("b", "a"), imp("d", "a")])).toEqual([]);
    expect(
      folderLoops([imp("a", "b"), imp("b", "c"), imp("c", "a"), imp("c", "d"), imp("x", "y"), imp("y", "x")]),
    ).toEqual([
      ["a", "b", "c"],
      ["x", "y"],
    ]);
  });

  it("run-format is the ground floor: it lies below every folder but the pure helpers, and its import up fails", async () => {
    const level = (f: string) => RUNNER_LAYERS.findIndex((l) => l.includes(f));
    const below = RUNNER_LAYERS.slice(0, level("run-format")).flat();
    expect(below.sort()).toEqual([
      "cache-root",
      "doctor",
      "errors",
      "gc",
      "nix",
      "redact",
      "safe-read",
      "text",
      "version",
    ]);
    await using tmp = await makeTempDir();
    await copyManifests(tmp.path);
    for (const dir of ["run-format", "scoring"]) await mkdir(join(tmp.path, "packages/runner/src", dir));
    await writeFile(join(tmp.path, "packages/runner/src/scoring/score.ts"), "export const Score = 1;\n");
    await writeFile(
      join(tmp.path, "packages/runner/src/run-format/schema.ts"),
      'import { Score } from "../scoring/score.js";\nexport { Score };\n',
    );
    expect(findViolations(tmp.path, [])).toEqual([
      {
        from: "runner/run-format",
        to: "runner/scoring",
        where:
          "packages/runner/src/run-format/schema.ts:1 imports '../scoring/score.js': an import up the layer order",
      },
    ]);
  });

  it("lists every folder of the runner's src exactly once", () => {
    const names = RUNNER_LAYERS.flat();
    expect(new Set(names).size).toBe(names.length);
  });
});
