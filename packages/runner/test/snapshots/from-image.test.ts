import { execFileSync } from "node:child_process";
import { chmod, chown, mkdir, mkdtemp, readdir, readFile, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { depsOfSnapshot } from "../../src/rollout/wire-forks.js";
import { agentWorkerSpec, scoringWorkerSpec } from "../../src/rollout/worker-specs.js";
import type { RecordedImage } from "../../src/run-format/schema.js";
import { forkSnapshot } from "../../src/snapshots/build.js";
import {
  chooseImageSnapshot,
  dummyImageTreeReader,
  imageLabelProblems,
  imageManifestOf,
  imageSnapshotKey,
  snapshotFromImage,
} from "../../src/snapshots/from-image.js";
import { storeTreeReader } from "../../src/snapshots/from-store.js";
import { SnapshotManifest } from "../../src/snapshots/manifest.js";
import type { SnapshotSpec } from "../../src/snapshots/spec.js";
import { capabilitiesOf } from "../../src/workers/backend.js";
import type { BackendKind } from "../../src/workers/types.js";

const image = (kind: RecordedImage["kind"]): RecordedImage => ({
  name: "localhost/flakegym/snapshot-t",
  tag: "abc",
  kind,
  digest: "d".repeat(64),
  storePath: "/nix/store/abc-snapshot-t.tar.gz",
  ref: "localhost/flakegym/snapshot-t:abc",
});

const spec = (commit: string): SnapshotSpec => ({
  taskId: "t",
  repo: "catalog:t",
  commit,
  profile: "rust",
  install: [],
  smoke: [],
  network: "none",
  limits: { memoryMb: 512, pids: 64, cpuSeconds: 60, diskMb: 64 },
  materialize: () => {
    throw new Error("an image snapshot never materializes the source");
  },
});

const on = (kind: BackendKind) => ({ kind, capabilities: capabilitiesOf(kind) });

describe("chooseImageSnapshot", () => {
  it("uses a task's snapshot image on podman only", () => {
    expect(chooseImageSnapshot(image("snapshot"), on("podman"))).toEqual({
      use: true,
      ref: image("snapshot").ref,
      digest: "d".repeat(64),
    });
    expect(chooseImageSnapshot(image("profile"), on("podman"))).toEqual({
      use: false,
      reason: `image ${image("profile").ref} is a profile image`,
    });
    expect(chooseImageSnapshot("host /usr", on("podman"))).toMatchObject({ use: false });
    expect(chooseImageSnapshot(image("snapshot"), on("local"))).toMatchObject({ use: false });
    expect(chooseImageSnapshot(image("snapshot"), on("nomad"))).toMatchObject({ use: false });
  });
});

describe("imageLabelProblems", () => {
  const labels = {
    "org.flakegym.task": "t",
    "org.flakegym.snapshot.commit": "c1",
    "org.flakegym.snapshot.profile": "rust",
  };
  it("accepts the task's own labels and names each label that differs", () => {
    expect(imageLabelProblems(labels, { taskId: "t", commit: "c1", profile: "rust" })).toEqual([]);
    expect(imageLabelProblems(labels, { taskId: "u", commit: "c2", profile: "rust" })).toEqual([
      'label org.flakegym.task is "t", the task wants "u"',
      'label org.flakegym.snapshot.commit is "c1", the task wants "c2"',
    ]);
    expect(imageLabelProblems({}, { taskId: "t", commit: "c1", profile: "rust" })).toHaveLength(3);
  });
});

describe("imageManifestOf / imageSnapshotKey", () => {
  it("is a valid manifest saying the image, with no install or smoke host-side; keys differ per digest", () => {
    const m = imageManifestOf(spec("c1"), image("snapshot"), {
      key: imageSnapshotKey("d".repeat(64)),
      base: { commit: "b".repeat(40), changed: ["target/x"] },
      copyMs: 12.4,
      now: new Date(0),
    });
    expect(SnapshotManifest.parse(m)).toEqual(m);
    expect(m).toMatchObject({
      install: [],
      smoke: [],
      baseCommit: "b".repeat(40),
      baseChanges: ["target/x"],
      buildMs: 12,
    });
    expect(m.fromImage).toEqual({ ref: image("snapshot").ref, digest: "d".repeat(64) });
    expect(imageSnapshotKey("a")).not.toBe(imageSnapshotKey("b"));
    expect(imageSnapshotKey("a")).toMatch(/^[0-9a-f]{64}$/);
  });
});

/** A git work tree at one commit, with an ignored build output (as nix/snapshot-workspace.nix). */
async function imageWorkspace(dir: string): Promise<string> {
  await mkdir(join(dir, "target"), { recursive: true });
  await writeFile(join(dir, "lib.rs"), "pub fn f() {}\n");
  await writeFile(join(dir, "target", "built"), "prebuilt\n");
  const g = (...args: string[]) =>
    execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...args], {
      cwd: dir,
      encoding: "utf8",
    });
  g("init", "-q", "-b", "main");
  // git makes .git/info only from its templates, which a bare machine (the Nix check) may lack
  await mkdir(join(dir, ".git", "info"), { recursive: true });
  await writeFile(join(dir, ".git", "info", "exclude"), "target/\n");
  g("add", "-A");
  g("commit", "-q", "-m", "snapshot");
  return g("rev-parse", "HEAD").trim();
}

describe("snapshotFromImage (dummy reader)", () => {
  const labels = {
    "org.flakegym.task": "t",
    "org.flakegym.snapshot.commit": "c1",
    "org.flakegym.snapshot.profile": "rust",
  };

  it("copies the image's tree once per digest, bases the diff on its commit, forks without a deps dir", async () => {
    const root = await mkdtemp(join(tmpdir(), "fg-snapimg-"));
    const head = await imageWorkspace(join(root, "img"));
    // an image layer carries its builder's uid (root here can make such a file)
    const foreign = process.getuid?.() === 0;
    if (foreign) await chown(join(root, "img", "target", "built"), 30001, 30001);
    else console.log("from-image: the foreign-owner case needs root (chown to another uid): not checked");
    await chmod(join(root, "img", "target", "built"), 0o444);
    const reader = dummyImageTreeReader({ labels, workspace: join(root, "img") });
    const cacheDir = join(root, "cache");
    const [a, b] = await Promise.all([
      snapshotFromImage(spec("c1"), image("snapshot"), reader, { cacheDir }),
      snapshotFromImage(spec("c1"), image("snapshot"), reader, { cacheDir }),
    ]);
    expect(reader.copies).toBe(1);
    expect(a.key).toBe(imageSnapshotKey("d".repeat(64)));
    expect([a.cached, b.cached].sort()).toEqual([false, true]);
    // the image's build outputs are in the base commit (a child of the image's), not in any diff
    expect(a.manifest.baseCommit).not.toBe(head);
    expect(a.manifest.baseChanges).toEqual(["target/built"]);
    const parent = execFileSync(
      "git",
      ["--git-dir", join(a.workspace, ".git"), "rev-parse", `${a.manifest.baseCommit}^`],
      {
        encoding: "utf8",
      },
    );
    expect(parent.trim()).toBe(head);
    expect(await readFile(join(a.workspace, "target", "built"), "utf8")).toBe("prebuilt\n");
    const built = await stat(join(a.workspace, "target", "built"));
    expect(built.uid).toBe(process.getuid?.());
    expect(built.mode & 0o200).toBe(0o200);
    expect(await readFile(join(a.dir, "build.log"), "utf8")).toContain("no install command ran host-side");
    const again = await snapshotFromImage(spec("c1"), image("snapshot"), reader, { cacheDir });
    expect(again.cached).toBe(true);
    expect(reader.copies).toBe(1);

    const fork = await forkSnapshot(a, { dest: join(root, "fork") });
    try {
      expect(await readFile(join(fork.workspace, "target", "built"), "utf8")).toBe("prebuilt\n");
      const deps = depsOfSnapshot(a, fork.tree);
      expect(deps).toBeUndefined();
      const base = {
        runId: "r",
        taskId: "t",
        task: { id: "t", profile: "rust", limits: spec("c1").limits },
        image: image("snapshot"),
        fork: { workspace: fork.workspace, deps },
      } as unknown as Parameters<typeof agentWorkerSpec>[0];
      const limits = { timeoutMs: 60_000, testTimeoutMs: 60_000 } as Parameters<typeof agentWorkerSpec>[2];
      expect(agentWorkerSpec(base, "x", limits, { socketPath: "/s" })).not.toHaveProperty("depsDir");
      expect(
        scoringWorkerSpec(
          base,
          "x",
          { limits, testRepeat: 1 } as Parameters<typeof scoringWorkerSpec>[2],
          undefined,
        ),
      ).not.toHaveProperty("depsDir");
    } finally {
      await fork.release();
    }
    // a host-built snapshot keeps its deps dir
    expect(depsOfSnapshot({ manifest: { ...a.manifest, fromImage: undefined } }, "/f")).toBe("/f/deps");
  });

  it("a store snapshot's cargo-home becomes the fork's deps dir (CARGO_HOME), owned and writable; the store copy untouched", async () => {
    const root = await mkdtemp(join(tmpdir(), "fg-snapstore-"));
    const out = join(root, "store-out"); // what nix/snapshot-workspace.nix writes: workspace, cargo-home, snapshot.json
    const head = await imageWorkspace(join(out, "workspace"));
    await mkdir(join(out, "cargo-home"));
    const config = '[source.vendored-sources]\ndirectory = "/nix/store/x-cargo-vendor-dir"\n';
    await writeFile(join(out, "cargo-home", "config.toml"), config);
    await writeFile(join(out, "snapshot.json"), JSON.stringify({ task: "t", commit: "c1", profile: "rust" }));
    await chmod(join(out, "cargo-home", "config.toml"), 0o444);
    await chmod(join(out, "cargo-home"), 0o555);
    const s = await snapshotFromImage(spec("c1"), { ref: out, digest: out }, storeTreeReader(), {
      cacheDir: join(root, "cache"),
    });
    expect(s.manifest.fromImage).toEqual({ ref: out, digest: out, deps: ["cargo-home"] });
    expect(s.manifest.baseCommit).not.toBe(head);
    const fork = await forkSnapshot(s, { dest: join(root, "fork") });
    try {
      const deps = depsOfSnapshot(s, fork.tree);
      expect(deps).toBe(join(fork.tree, "deps"));
      const copied = join(deps!, "cargo", "config.toml");
      expect(await readFile(copied, "utf8")).toBe(config);
      expect((await stat(copied)).mode & 0o200).toBe(0o200);
      expect((await stat(join(out, "cargo-home", "config.toml"))).mode & 0o777).toBe(0o444);
    } finally {
      await fork.release();
      await chmod(join(out, "cargo-home"), 0o755);
    }
  });

  it("refuses an image whose labels are another task's, naming the label and what to run; caches nothing", async () => {
    const root = await mkdtemp(join(tmpdir(), "fg-snapimg-"));
    await imageWorkspace(join(root, "img"));
    const reader = dummyImageTreeReader({
      labels: { ...labels, "org.flakegym.snapshot.commit": "old" },
      workspace: join(root, "img"),
    });
    const cacheDir = join(root, "cache");
    await expect(snapshotFromImage(spec("c1"), image("snapshot"), reader, { cacheDir })).rejects.toThrow(
      /is not the snapshot image of task t: label org\.flakegym\.snapshot\.commit is "old", the task wants "c1"/,
    );
    expect(reader.copies).toBe(0);
    expect((await readdir(cacheDir)).filter((d) => /^[0-9a-f]{64}$/.test(d))).toEqual([]);
  });

  it("refuses an image whose /workspace is no git work tree", async () => {
    const root = await mkdtemp(join(tmpdir(), "fg-snapimg-"));
    await mkdir(join(root, "img"));
    await writeFile(join(root, "img", "f"), "x\n");
    const reader = dummyImageTreeReader({ labels, workspace: join(root, "img") });
    await expect(
      snapshotFromImage(spec("c1"), image("snapshot"), reader, { cacheDir: join(root, "cache") }),
    ).rejects.toThrow(/\/workspace has no git commit to diff against/);
  });
});
