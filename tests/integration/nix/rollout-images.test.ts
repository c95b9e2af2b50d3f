import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { chmod, copyFile, mkdir, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { basename, dirname, join, relative } from "node:path";
import { resolveClinePackage } from "@flakegym/cline-vendor";
import { forkTree } from "@flakegym/runner";
import { makeTempDir, runCli, type TempDir } from "@flakegym/test-utils";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  podmanImageId,
  readImageRecords,
  recordImage,
} from "../../../packages/runner/src/images/nix-images.js";
import { defaultImageRecordFile, nixBuildCapability } from "../../../packages/runner/src/images/targets.js";
import { resolveWorkerImages } from "../../../packages/runner/src/images/worker-images.js";
import { imageSnapshotKey } from "../../../packages/runner/src/snapshots/from-image.js";
import { snapshotSpecOfTask } from "../../../packages/runner/src/snapshots/spec.js";
import { BUILTIN_CATALOG_DIR, loadTask } from "../../../packages/runner/src/tasks/catalog.js";
import {
  CONTAINERS_CONF,
  createPodmanBackend,
  flakeImagePodmanOptions,
} from "../../../packages/runner/src/workers/podman/podman-backend.js";

// `rollout --images nix` on this machine: no Nix can build the flake's images here, so the image is
// made locally (a tiny rootfs `podman import`ed with the flake image's env and labels) and recorded
// in images.json exactly as `flakegym images load` records one. The choice, the check before the
// run, and the worker starting from that image run against real podman and runc.

const versionOf = (bin: string) => {
  try {
    return execFileSync(bin, ["--version"], { encoding: "utf8", timeout: 30_000 }).trim();
  } catch {
    return undefined;
  }
};
const NIX_CAN_BUILD = nixBuildCapability(versionOf("nix")).kind === "ok";
const MISSING = ["/usr/bin/podman", "/usr/sbin/runc"].filter((p) => !existsSync(p));
if (MISSING.length)
  console.warn(
    `rollout-images: podman cases skipped: missing ${MISSING.join(", ")} — apt-get install podman runc`,
  );

const TASK = "semver-lite-caret-zero"; // profile node
const TAG = "0123456789abcdfghijklmnpqrsvwxyz".split("").reverse().join("");
const REF = `localhost/flakegym-test/node-env:${TAG}`;
/** The same rootfs without the flake image's env and labels. */
const PLAIN_REF = `localhost/flakegym-test/plain:${TAG}`;
const CLINE_DIR = `/nix/store/${TAG}-cline-1.0.10/lib/node_modules/cline`;

let tmp: TempDir;
beforeAll(async () => {
  tmp = await makeTempDir("flakegym-rollout-images-");
});
afterAll(async () => {
  if (!MISSING.length)
    await execa("podman", ["image", "rm", "-f", REF, PLAIN_REF], { reject: false, timeout: 60_000 });
  await tmp?.cleanup();
});

/** Binaries of a node profile's image: a shell, coreutils, diff, grep, sed, find, git, node. */
function nodeProfileBinaries(): string[] {
  const listed = execFileSync("dpkg", ["-L", "coreutils", "diffutils", "grep", "sed", "findutils"], {
    encoding: "utf8",
  });
  const bins = listed.split("\n").filter((f) => /^\/(usr\/)?bin\/[^/]+$/.test(f));
  return [...bins, "/usr/bin/dash", "/usr/bin/bash", "/usr/bin/git", process.execPath];
}

/**
 * A flake-like image: everything in /bin (no /usr), libraries where ldd found them, `bins` with
 * their libraries, and with `cline` the runner's Cline core copied to {@link CLINE_DIR} (the
 * files the launcher needs), as the flake's images carry it; `FLAKEGYM_CLINE_DIR` and the
 * `org.flakegym.cline.version` label as nix/image.nix sets them. Streams the rootfs into
 * `podman import`.
 */
async function flakeLikeImage(
  dir: string,
  ref: string,
  o: { bins: string[]; cline: boolean },
): Promise<void> {
  const root = join(dir, "rootfs");
  for (const d of ["etc", "tmp", "workspace", "deps", "sandbox-home", "proc", "dev", "sys", "run/flakegym"])
    await mkdir(join(root, d), { recursive: true });
  const files = new Set<string>(o.bins);
  const pkg = resolveClinePackage();
  if (o.cline) files.add(pkg.hostBinary).add(pkg.ripgrep);
  for (const bin of [...files]) {
    const r = await execa("ldd", [bin], { reject: false });
    for (const line of r.stdout.split("\n")) {
      const lib = /(\/\S+) \(0x/.exec(line)?.[1];
      if (lib) files.add(lib);
    }
  }
  for (const f of files) {
    const dest = f.startsWith(pkg.root)
      ? join(root, CLINE_DIR, relative(pkg.root, f))
      : /^\/(usr\/)?bin\//.test(f)
        ? join(root, "bin", basename(f))
        : join(root, f);
    await mkdir(dirname(dest), { recursive: true });
    await copyFile(f, dest);
    await chmod(dest, 0o755);
  }
  await copyFile(join(root, "bin", "dash"), join(root, "bin", "sh"));
  await chmod(join(root, "bin", "sh"), 0o755);
  if (o.cline) {
    for (const f of [
      "package.json",
      "cline-core.js",
      "node_modules",
      "fake_node_modules",
      "proto",
      "extension",
    ])
      await execa("cp", ["-a", join(pkg.root, f), join(root, CLINE_DIR, f)]);
  }
  await writeFile(join(root, "etc", "passwd"), "root:x:0:0::/root:/bin/sh\n");
  await writeFile(join(root, "etc", "flakegym-image"), "flake-like node-env\n");
  const env = { CONTAINERS_CONF: await containersConf(dir) };
  const tar = execa("tar", ["--numeric-owner", "-C", root, "-c", "."], { buffer: false });
  const imported = execa(
    "podman",
    [
      "import",
      "--change",
      `ENV FLAKEGYM_CLINE_DIR=${CLINE_DIR}`,
      "--change",
      "LABEL org.flakegym.cline.version=1.0.10",
      "--change",
      "LABEL org.flakegym.profile=node",
      "-",
      ref,
    ],
    { timeout: 300_000, env, stdin: "pipe" },
  );
  tar.stdout!.pipe(imported.stdin!);
  await Promise.all([tar, imported]);
  await rm(root, { recursive: true, force: true });
}

/** `flakegym rollout --task TASK --backend podman --images nix <policies> --out <out>` on `cache`'s records. */
const podmanNixRollout = (policies: readonly string[], out: string, cache: string) =>
  runCli(["rollout", "--task", TASK, "--backend", "podman", "--images", "nix", ...policies, "--out", out], {
    env: { FLAKEGYM_CACHE: cache },
    timeoutMs: 600_000,
  });

async function containersConf(dir: string): Promise<string> {
  const f = join(dir, "containers.conf");
  await writeFile(f, CONTAINERS_CONF);
  return f;
}

describe("rollout --images nix: the check before the run", () => {
  it("names the task, the missing image and the command, and starts nothing", async () => {
    const cache = join(tmp.path, "empty-cache");
    const out = join(tmp.path, "run-missing");
    const r = await runCli(
      ["rollout", "--task", TASK, "--backend", "podman", "--images", "nix", "--policy", "gold", "--out", out],
      { env: { FLAKEGYM_CACHE: cache }, timeoutMs: 120_000 },
    );
    expect(r.exitCode, r.stderr).toBe(NIX_CAN_BUILD ? 1 : 3);
    expect(r.stderr).toContain(
      `--images nix: 1 task(s) have no worker image in ${join(cache, "images.json")}`,
    );
    expect(r.stderr).toContain(
      `task ${TASK} (profile node): no image recorded for task ${TASK} nor for its profile node`,
    );
    expect(r.stderr).toContain("run: flakegym images load --profile node");
    if (!NIX_CAN_BUILD)
      expect(r.stderr).toMatch(/This machine cannot build them: .*(not installed|cannot evaluate nixpkgs)/);
    expect(existsSync(out)).toBe(false);
  }, 150_000);

  it("refuses --images nix on the local backend (a usage error)", async () => {
    const r = await runCli(["rollout", "--task", TASK, "--images", "nix", "--out", join(tmp.path, "x")]);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toContain("--images nix needs a container backend");
  });
});

describe.skipIf(MISSING.length > 0)("rollout --images nix on a recorded image (real podman, runc)", () => {
  let cache: string;
  beforeAll(async () => {
    const dir = join(tmp.path, "image");
    await mkdir(dir, { recursive: true });
    const tiny = ["dash", "sleep", "timeout", "cat"].map((b) =>
      execFileSync("sh", ["-c", `command -v ${b}`], { encoding: "utf8" }).trim(),
    );
    await flakeLikeImage(dir, REF, { bins: tiny, cline: false });
    // an image without the flake's env and labels: one file is enough (it is only inspected)
    await mkdir(join(dir, "plain"));
    await writeFile(join(dir, "plain", "hello"), "hi\n");
    await execa("tar", ["-C", join(dir, "plain"), "-cf", join(dir, "plain.tar"), "."]);
    await execa("podman", ["import", join(dir, "plain.tar"), PLAIN_REF], { timeout: 120_000 });
    cache = join(tmp.path, "cache");
    // recorded as `flakegym images load` records a loaded image
    await recordImage(defaultImageRecordFile({ FLAKEGYM_CACHE: cache }), {
      kind: "profile",
      id: "node",
      package: "node-env-container",
      name: "localhost/flakegym-test/node-env",
      tag: TAG,
      storePath: `/nix/store/${TAG}-node-env.tar.gz`,
      imageId: await podmanImageId(REF, 60_000),
      loadedAs: REF,
      flakeRef: "git+file:///src/flakegym",
      recordedAt: new Date().toISOString(),
    });
  }, 180_000);

  it("a worker of the task starts from its profile's recorded image: the image's files, no host /usr", async () => {
    const records = readImageRecords(defaultImageRecordFile({ FLAKEGYM_CACHE: cache }));
    const chosen = resolveWorkerImages(records, [{ id: TASK, profile: "node" }], "podman");
    expect(chosen.kind).toBe("ok");
    if (chosen.kind !== "ok") return;
    const image = chosen.images.get(TASK)!;
    expect(image).toMatchObject({
      ref: REF,
      storePath: `/nix/store/${TAG}-node-env.tar.gz`,
      kind: "profile",
    });
    expect(image.digest).toMatch(/^[0-9a-f]{64}$/);

    const lower = join(tmp.path, "snap");
    await mkdir(join(lower, "workspace"), { recursive: true });
    await writeFile(join(lower, "workspace", "f.txt"), "file\n");
    const fork = await forkTree(lower, { dest: join(tmp.path, "fork"), quotaMb: 32 });
    const backend = createPodmanBackend({ ...flakeImagePodmanOptions(), stateDir: join(tmp.path, "podman") });
    const worker = await backend.start({
      runId: "images",
      taskId: TASK,
      trajectoryId: "score",
      profile: "node",
      workspace: join(fork.tree, "workspace"),
      gateway: {},
      limits: { memoryMb: 128, pids: 48, cpuSeconds: 60, diskMb: 32, wallClockMs: 60_000 },
      agent: false,
      image: image.ref,
    });
    try {
      const r = await worker.exec(
        "cat /etc/flakegym-image f.txt; echo cline=$FLAKEGYM_CLINE_DIR; test -e /usr/bin/node && echo host-usr || echo no-host-usr",
      );
      expect(r.exitCode, r.stderr).toBe(0);
      expect(r.stdout).toBe(`flake-like node-env\nfile\ncline=${CLINE_DIR}\nno-host-usr\n`);
      const ps = await execa(
        "podman",
        ["ps", "--filter", `name=^${worker.id}$`, "--format", "{{.ImageID}}"],
        {
          env: { CONTAINERS_CONF: join(tmp.path, "podman", "containers.conf") },
          timeout: 30_000,
        },
      );
      expect(image.digest.startsWith(ps.stdout.trim())).toBe(true);
    } finally {
      await worker.stop();
      await fork.release();
    }
  }, 180_000);

  it("an agent in an image without the flake's Cline core fails naming the image, leaving nothing", async () => {
    const backend = createPodmanBackend({
      ...flakeImagePodmanOptions(),
      stateDir: join(tmp.path, "podman-agent"),
    });
    const ws = join(tmp.path, "agent-ws");
    await mkdir(ws, { recursive: true });
    const start = backend.start({
      runId: "images",
      taskId: TASK,
      trajectoryId: "agent",
      profile: "node",
      workspace: ws,
      gateway: { socketPath: join(tmp.path, "gateway.sock") },
      limits: { memoryMb: 128, pids: 48, cpuSeconds: 60, diskMb: 32, wallClockMs: 60_000 },
      agent: true,
      image: PLAIN_REF,
    });
    await expect(start).rejects.toThrow(`image ${PLAIN_REF} has no Cline core of the flake`);
    const left = await execa("sh", [
      "-c",
      `ls ${join(tmp.path, "podman-agent")} | grep -c flakegym- || true`,
    ]);
    expect(left.stdout.trim()).toBe("0");
  }, 120_000);

  it("the check before the run finds the recorded image, and says when podman no longer has it", async () => {
    const gone = join(tmp.path, "cache-gone");
    const file = defaultImageRecordFile({ FLAKEGYM_CACHE: gone });
    const rec = readImageRecords(defaultImageRecordFile({ FLAKEGYM_CACHE: cache })).images[0]!;
    await recordImage(file, { ...rec, loadedAs: "localhost/flakegym-test/node-env:removed" });
    const out = join(tmp.path, "run-gone");
    const r = await runCli(
      ["rollout", "--task", TASK, "--backend", "podman", "--images", "nix", "--policy", "gold", "--out", out],
      { env: { FLAKEGYM_CACHE: gone }, timeoutMs: 120_000 },
    );
    expect(r.exitCode, r.stderr).toBe(NIX_CAN_BUILD ? 1 : 3);
    expect(r.stderr).toContain(
      `task ${TASK} (profile node): localhost/flakegym-test/node-env:removed is recorded in ${file} but podman does not have it; run: flakegym images load --profile node`,
    );
    expect(existsSync(out)).toBe(false);
  }, 150_000);

  it("as the flake app (FLAKEGYM_NIX_APP=1, no --backend/--images): the recorded image when podman has it, else local and why", async () => {
    // an unknown policy stops the run right after the choice: nothing starts
    // each its own run directory: a run directory has one writer at a time
    const app = (cacheDir: string) =>
      runCli(["rollout", "--task", TASK, "--policy", "nosuch:x", "--out", join(cacheDir, "run-app")], {
        env: { FLAKEGYM_CACHE: cacheDir, FLAKEGYM_NIX_APP: "1" },
        timeoutMs: 120_000,
      });
    const goneCache = join(tmp.path, "cache-app-gone");
    const rec = readImageRecords(defaultImageRecordFile({ FLAKEGYM_CACHE: cache })).images[0]!;
    await recordImage(defaultImageRecordFile({ FLAKEGYM_CACHE: goneCache }), {
      ...rec,
      loadedAs: "localhost/flakegym-test/node-env:removed",
    });
    const [here, gone] = await Promise.all([app(cache), app(goneCache)]);
    expect(here.stderr).toContain(
      "nix run .#rollout: workers run on the flake's images (--backend podman --images nix)",
    );
    expect(gone.stderr).toContain(
      `nix run .#rollout: workers run on the local backend (this machine's /usr), not the flake's images: task ${TASK}: localhost/flakegym-test/node-env:removed is recorded`,
    );
    for (const r of [here, gone]) {
      expect(r.exitCode, r.stderr).toBe(2);
      expect(r.stderr).toContain("policy spec 'nosuch:x'");
    }
    expect(existsSync(join(tmp.path, "run-app"))).toBe(false);
  }, 150_000);
});

const FULL_TAG = TAG.replace(/^./, "0");
const FULL_REF = `localhost/flakegym-test/node-env-full:${FULL_TAG}`;

describe.skipIf(MISSING.length > 0)("flakegym rollout --backend podman --images nix, end to end", () => {
  let cache: string;
  beforeAll(async () => {
    const dir = join(tmp.path, "full-image");
    await mkdir(dir, { recursive: true });
    const t0 = performance.now();
    await flakeLikeImage(dir, FULL_REF, { bins: nodeProfileBinaries(), cline: true });
    console.log(`rollout-images: flake-like node image made in ${Math.round(performance.now() - t0)} ms`);
    cache = join(tmp.path, "full-cache");
    await recordImage(defaultImageRecordFile({ FLAKEGYM_CACHE: cache }), {
      kind: "profile",
      id: "node",
      package: "node-env-container",
      name: "localhost/flakegym-test/node-env-full",
      tag: FULL_TAG,
      storePath: `/nix/store/${FULL_TAG}-node-env.tar.gz`,
      imageId: await podmanImageId(FULL_REF, 60_000),
      loadedAs: FULL_REF,
      flakeRef: "git+file:///src/flakegym",
      recordedAt: new Date().toISOString(),
    });
  }, 400_000);
  afterAll(async () => {
    if (!MISSING.length)
      await execa("podman", ["image", "rm", "-f", FULL_REF], { reject: false, timeout: 60_000 });
  });

  it("gold: the agent runs the image's node and Cline core, the score runs in the image; provenance names it", async () => {
    const out = join(tmp.path, "run-full");
    const r = await podmanNixRollout(["--policy", "gold", "--group-size", "1"], out, cache);
    expect(r.exitCode, r.stderr).toBe(0);
    const run = JSON.parse(await readFile(join(out, "run.json"), "utf8"));
    const image = {
      name: "localhost/flakegym-test/node-env-full",
      tag: FULL_TAG,
      kind: "profile",
      digest: await podmanImageId(FULL_REF, 60_000),
      storePath: `/nix/store/${FULL_TAG}-node-env.tar.gz`,
      ref: FULL_REF,
    };
    expect(run.config).toMatchObject({ backend: "podman", images: "nix" });
    expect(run.tasks[TASK].image).toEqual(image);
    const metrics = (await readFile(join(out, "metrics.jsonl"), "utf8"))
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(metrics[0]).toMatchObject({ outcome: "completed", reward: 1 });
    const group = JSON.parse((await readFile(join(out, "groups.jsonl"), "utf8")).trim().split("\n")[0]!);
    expect(JSON.stringify(group)).toContain(JSON.stringify(image.digest));
  }, 420_000);

  it("a task's snapshot image is its snapshot: /workspace copied from the image (no install host-side), gold 1, empty 0", async () => {
    // the snapshot image as nix/snapshot-image.nix makes it: the profile image plus the task's work
    // tree (a git commit) at /workspace, a build output git ignores, and the snapshot labels
    const t = await loadTask(TASK, BUILTIN_CATALOG_DIR);
    const spec = snapshotSpecOfTask(t);
    const ws = join(tmp.path, "snapimg-ws");
    await spec.materialize(ws, { log: () => {} });
    await writeFile(join(ws, ".git", "info", "exclude"), "built-in-image/\n");
    await mkdir(join(ws, "built-in-image"));
    await writeFile(join(ws, "built-in-image", "out.txt"), "made by the image's build\n");
    const ref = `localhost/flakegym-test/snapshot-${TASK}:${FULL_TAG}`;
    const ctr = `flakegym-test-snapimg-${FULL_TAG.slice(0, 8)}`;
    await execa("podman", ["create", "--name", ctr, FULL_REF, "true"], { timeout: 120_000 });
    try {
      await execa("podman", ["cp", `${ws}/.`, `${ctr}:/workspace`], { timeout: 300_000 });
      const labels = {
        "org.flakegym.task": TASK,
        "org.flakegym.snapshot.commit": spec.commit,
        "org.flakegym.snapshot.profile": "node",
      };
      const changes = Object.entries(labels).flatMap(([k, v]) => ["--change", `LABEL ${k}=${v}`]);
      await execa("podman", ["commit", "--quiet", ...changes, ctr, ref], { timeout: 300_000 });
    } finally {
      await execa("podman", ["rm", "-f", ctr], { reject: false, timeout: 60_000 });
    }
    try {
      const digest = await podmanImageId(ref, 60_000);
      const snapCache = join(tmp.path, "snapimg-cache");
      await recordImage(defaultImageRecordFile({ FLAKEGYM_CACHE: snapCache }), {
        kind: "snapshot",
        id: TASK,
        package: `snapshot-${TASK}`,
        name: `localhost/flakegym-test/snapshot-${TASK}`,
        tag: FULL_TAG,
        storePath: `/nix/store/${FULL_TAG}-snapshot-${TASK}.tar.gz`,
        imageId: digest,
        loadedAs: ref,
        flakeRef: "git+file:///src/flakegym",
        recordedAt: new Date().toISOString(),
      });
      const out = join(tmp.path, "run-snapimg");
      const r = await podmanNixRollout(
        ["--policy", "gold", "--policy", "empty", "--group-size", "2"],
        out,
        snapCache,
      );
      expect(r.exitCode, r.stderr).toBe(0);
      const rewards = (await readFile(join(out, "metrics.jsonl"), "utf8"))
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l).reward as number)
        .sort();
      expect(rewards, await readFile(join(out, "metrics.jsonl"), "utf8")).toEqual([0, 1]);
      const run = JSON.parse(await readFile(join(out, "run.json"), "utf8"));
      expect(run.tasks[TASK].image).toMatchObject({ kind: "snapshot", digest, ref });
      // the only snapshot is the image's copy: no host build ran its install or smoke commands
      const snaps = join(snapCache, "snapshots");
      const keys = (await readdir(snaps)).filter((k) => /^[0-9a-f]{64}$/.test(k));
      expect(keys).toEqual([imageSnapshotKey(digest)]);
      const manifest = JSON.parse(await readFile(join(snaps, keys[0]!, "manifest.json"), "utf8"));
      expect(manifest).toMatchObject({ fromImage: { ref, digest }, install: [], smoke: [], taskId: TASK });
      expect(
        await readFile(join(snaps, keys[0]!, "tree", "workspace", "built-in-image", "out.txt"), "utf8"),
      ).toBe("made by the image's build\n");
      expect(await readFile(join(snaps, keys[0]!, "build.log"), "utf8")).toContain(
        "no install command ran host-side",
      );
    } finally {
      await execa("podman", ["image", "rm", "-f", ref], { reject: false, timeout: 60_000 });
    }
  }, 700_000);
});
