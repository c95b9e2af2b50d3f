import { describe, expect, it } from "vitest";
import { parseArgs } from "../../src/cli/parse-args.js";
import { resolveRolloutOptions } from "../../src/rollout/config.js";
import { RolloutOptions } from "../../src/rollout/options.js";
import { groupProvenanceOf, newManifest, resumedManifest } from "../../src/rollout/run-manifest.js";
import { FLAKEGYM_VERSION } from "../../src/version.js";

const configOf = (argv: string[]) =>
  resolveRolloutOptions(parseArgs(RolloutOptions, ["--task", "a", "--task", "b", ...argv]), {}, "w", "RUN")
    .config;

const manifest = (over: { nixStorePath?: string; imageDigest?: string; integrity?: string } = {}) =>
  newManifest({
    runId: "RUN",
    createdAt: "2026-11-21T00:00:00.000Z",
    config: configOf([]),
    provenance: {
      cline: { version: "1.0.10", ...(over.integrity ? { integrity: over.integrity } : {}) },
      ...(over.imageDigest ? { imageDigest: over.imageDigest } : {}),
    },
    nodeVersion: "v20.0.0",
    nixStorePath: over.nixStorePath,
  });

describe("run.json", () => {
  it("of a new run: every task listed, the provenance of this flakegym, Cline and node", () => {
    const m = manifest();
    expect(m.tasks).toEqual({ a: {}, b: {} });
    expect(m.provenance).toEqual({
      flakegymVersion: FLAKEGYM_VERSION,
      cline: { version: "1.0.10" },
      node: "v20.0.0",
    });
    expect(
      manifest({ nixStorePath: "/nix/store/x-flakegym", imageDigest: "sha256:1" }).provenance,
    ).toMatchObject({
      nixStorePath: "/nix/store/x-flakegym",
      imageDigest: "sha256:1",
    });
  });

  it("of a resumed run: the stored one with this session's concurrency, retries and Atropos", () => {
    const stored = manifest();
    const now = configOf(["--concurrency", "7", "--max-infra-retries", "5", "--group-size", "9"]);
    const m = resumedManifest(stored, now);
    expect(m.config).toEqual({ ...stored.config, concurrency: 7, maxInfraRetries: 5 });
    expect(m.config.groupSize).toBe(stored.config.groupSize);
    const atropos = {
      ...now,
      atropos: {
        url: "http://127.0.0.1:8000",
        maxTokenLength: 1,
        dropEqualScores: true,
        maxBatchesOffpolicy: 1,
        waitMs: 1,
        name: "x",
      },
    };
    expect(resumedManifest(stored, atropos).config.atropos).toEqual(atropos.atropos);
    expect(
      resumedManifest({ ...stored, config: { ...stored.config, atropos: atropos.atropos } }, now).config
        .atropos,
    ).toEqual(atropos.atropos);
  });

  it("gives each group record the run's and the task's provenance", () => {
    const m = manifest({ integrity: "sha512-x", imageDigest: "sha256:1" });
    m.tasks.a = { rowId: "a/task.json", snapshotKey: "k" };
    expect(groupProvenanceOf(m, "a")).toEqual({
      rowId: "a/task.json",
      snapshotKey: "k",
      run_id: "RUN",
      flakegym_version: FLAKEGYM_VERSION,
      cline_version: "1.0.10",
      cline_integrity: "sha512-x",
      image_digest: "sha256:1",
      seed: m.config.seed,
      policies: m.config.policies,
    });
    expect(groupProvenanceOf(manifest(), "b")).not.toHaveProperty("cline_integrity");
  });
});
