import { describe, expect, it } from "vitest";
import type { FlakegymError } from "../../src/errors.js";
import {
  catalogTaskOf,
  imageOf,
  noReference,
  ROW_LIMITS,
  rowRuntimeOf,
  rowTaskOf,
} from "../../src/rollout/wire-tasks.js";
import type { RecordedImage } from "../../src/run-format/schema.js";
import { hiddenTestsOf } from "../../src/scoring/hidden-tests.js";
import { BUILTIN_CATALOG_DIR, loadTask } from "../../src/tasks/catalog.js";
import type { TaskProfile } from "../../src/tasks/task-profile.js";

const row = (over: Partial<TaskProfile> = {}): TaskProfile => ({
  id: "row-7",
  repo: "owner/repo",
  repoKind: "github",
  repoUrl: "https://github.com/owner/repo",
  language: "Rust",
  profile: "rust",
  prompt: "fix the parser",
  source: { file: "rows.jsonl", row: 7 },
  metadata: {},
  ...over,
});

function thrown(f: () => unknown): FlakegymError {
  try {
    f();
  } catch (err) {
    return err as FlakegymError;
  }
  throw new Error("expected a throw");
}

const image: RecordedImage = {
  name: "flakegym/rust-env",
  tag: "abc",
  kind: "profile",
  digest: "sha256:1",
  storePath: "/nix/store/x-rust-env",
  ref: "localhost/flakegym/rust-env:abc",
};

describe("imageOf", () => {
  it("is the host's /usr without --images nix, whatever was chosen", () => {
    expect(imageOf(undefined, new Map([["a", image]]), "a")).toBe("host /usr");
  });

  it("is the flake's store paths a task runs on under nix run .#rollout, else the host's /usr", () => {
    const store = {
      kind: "nix-store" as const,
      toolchain: "/nix/store/0123456789abcdfghijklmnpqrsvwxyz-flakegym-node-env-toolchain",
      nixpkgs: "standin" as const,
    };
    expect(imageOf(undefined, undefined, "a", new Map([["a", store]]))).toBe(store);
    expect(imageOf(undefined, undefined, "b", new Map([["a", store]]))).toBe("host /usr");
    // --images nix wins: the task's image, never the store toolchain
    expect(imageOf("nix", new Map([["a", image]]), "a", new Map([["a", store]]))).toBe(image);
  });

  it("is the task's chosen image with --images nix", () => {
    expect(imageOf("nix", new Map([["a", image]]), "a")).toBe(image);
  });

  it("names the task and the command that loads an image when none was chosen", () => {
    expect(() => imageOf("nix", new Map(), "b")).toThrow(/no worker image chosen for task b/);
    const err = thrown(() => imageOf("nix", undefined, "b"));
    expect(err.code).toBe("E_IMAGE_MISSING");
    expect(err.hint).toMatch(/flakegym images load/);
  });
});

describe("dataset rows", () => {
  it("run with the row limits", () => {
    expect(rowRuntimeOf(row())).toEqual({ id: "row-7", profile: "rust", limits: ROW_LIMITS, row: row() });
  });

  it("become tasks without hidden tests; a local repository needs no network", () => {
    const t = rowTaskOf(row(), 60_000, "host /usr");
    expect(t).toEqual({
      id: "row-7",
      rowId: "row-7",
      datasetRow: 7,
      profile: "rust",
      prompt: "fix the parser",
      network: "required",
      hidden: { testFiles: [], commands: [], timeoutMs: 60_000 },
      image: "host /usr",
    });
    expect(rowTaskOf(row({ repoKind: "local", repoUrl: "/src/repo" }), 1, image).network).toBe("none");
  });

  it("have no reference: the error names the row's file and line and the policies that work", () => {
    const err = noReference(rowRuntimeOf(row()));
    expect(err.code).toBe("E_NO_REFERENCE");
    expect(err.message).toBe(
      "task 'row-7' (rows.jsonl row 7) has no reference solution, so the gold policy cannot run it",
    );
    expect(err.hint).toMatch(/--policy openai:/);
    expect(noReference({ id: "cat" }).message).toMatch(/^task 'cat' has no reference/);
  });
});

describe("catalogTaskOf", () => {
  it("a catalog task as a rollout task: its row id is its task.json relative to the catalog", async () => {
    const t = await loadTask("semver-lite-caret-zero");
    const hidden = await hiddenTestsOf(t, 1000);
    const task = catalogTaskOf("semver-lite-caret-zero", t, BUILTIN_CATALOG_DIR, hidden, "host /usr");
    expect(task).toEqual({
      id: "semver-lite-caret-zero",
      rowId: "semver-lite-caret-zero/task.json",
      profile: t.spec.profile,
      prompt: t.spec.prompt,
      network: t.spec.network,
      hidden,
      image: "host /usr",
    });
    expect(task.datasetRow).toBeUndefined();
  });
});
