import { chmodSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { REPO_ROOT } from "@flakegym/test-utils";
import { execa, execaSync } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  podmanImageId,
  podmanLoadStream,
  readImageRecords,
} from "../../../packages/runner/src/images/nix-images.js";
import { defaultImageRecordFile } from "../../../packages/runner/src/images/targets.js";
import { imageSnapshotKey } from "../../../packages/runner/src/snapshots/from-image.js";
import { CONTAINERS_CONF } from "../../../packages/runner/src/workers/podman/podman-backend.js";
import { gitIndexStatProblems, incrementalArtefacts } from "./snapshot-repro.js";
import {
  createStubFlake,
  inStore,
  modernNix,
  STANDIN_BUILD_ARGS,
  type StubFlake,
  standinNixConfig,
} from "./stub-flake.js";

/**
 * The flake's real outputs built and run against the stand-in nixpkgs (tests/nix/standin-nixpkgs)
 * with the modern Nix and its private /nix/store (docs/reference/nix.md "The stand-in nixpkgs").
 *   - always (a reduced form, ~15 s): the stand-in's Node builds as a store closure; in a
 *     bubblewrap sandbox it runs with that closure bound read-only and fails without it;
 *   - `npm run nix:e2e` (FLAKEGYM_NIX_E2E=1; ~40 min with the stand-in's tools built, more the
 *     first time): `nix run .#rollout` (Nix binds its store itself) on an offline catalog task
 *     with the gold and empty policies: rewards 1 and 0, as from a checkout, and run.json naming
 *     the store path it ran from; a catalog task's snapshot per profile built three times,
 *     `--rebuild` failing on any differing byte, with no stat data in its git index and no
 *     incremental artefacts; every profile's image built twice to the same digest, loaded into
 *     podman, each answering its smoke commands (profiles.json's and the profile file's
 *     toolSmoke) in a container with no network and nothing of the host; and `images load` of the
 *     node image, then a podman rollout with the agent and the scorer in it.
 */
const FULL = process.env.FLAKEGYM_NIX_E2E === "1";
const TASK = "semver-lite-caret-zero";
/**
 * One offline catalog task per profile, and a path its snapshot's work tree must hold: a file of
 * the source, or what the task's install commands built (rust's target/, c's build/).
 */
const SNAPSHOT_TASKS = [
  { task: "semver-lite-caret-zero", profile: "node", holds: "package.json" },
  { task: "stats-empty-mean", profile: "rust", holds: "target/debug/deps" },
  { task: "truncate-runes", profile: "go", holds: "go.mod" },
  { task: "bytesize-unit-boundary", profile: "python", holds: "pyproject.toml" },
  { task: "b64-two-byte-tail", profile: "c", holds: "build" },
] as const;
/**
 * Every profile's image (the stand-in copies each tool; its rust and go come from the toolchains'
 * own dirs, STANDIN_HOST_TOOLCHAINS).
 */
/** A rust task whose install step builds (`cargo build --tests`): its snapshot image holds target/. */
const SNAPSHOT_IMAGE_TASK = "stats-empty-mean";
const IMAGE_PROFILES = ["dev-base", "node", "rust", "go", "python", "c"] as const;
const modern = modernNix();
const MISSING_TOOLS = ["patchelf", "rg", "bwrap"].filter(
  (t) => execaSync("sh", ["-c", `command -v ${t}`], { reject: false }).exitCode !== 0,
);
const whyNot =
  modern.impl === null
    ? `no modern Nix: ${modern.reason}`
    : process.getuid?.() !== 0
      ? "needs root (a private store is bound at /nix/store in a mount namespace)"
      : process.arch !== "x64"
        ? "the stand-in nixpkgs builds for x86_64-linux only"
        : MISSING_TOOLS.length
          ? `the stand-in nixpkgs copies host tools with ${MISSING_TOOLS.join(", ")}, missing here (sh scripts/ensure-system-deps)`
          : "";
/** The rollout flags both runs of TASK use: a group of two, the gold and the empty policy. */
const goldAndEmpty = (out: string) =>
  ["--task", TASK, "--group-size", "2", "--policy", "gold", "--policy", "empty", "--out", out] as const;
/** A run's rewards, sorted. */
const rewardsOf = (out: string): number[] =>
  readFileSync(join(out, "metrics.jsonl"), "utf8")
    .trim()
    .split("\n")
    .map((l) => (JSON.parse(l) as { reward: number }).reward)
    .sort();
/** Each trajectory's score.json (gate and terms), for a failure's message. */
const scoresOf = (out: string): string =>
  readdirSync(join(out, "trajectories"))
    .map((t) => `${t}: ${readFileSync(join(out, "trajectories", t, "score.json"), "utf8").slice(0, 3000)}`)
    .join("\n");
if (whyNot) console.warn(`skipping the stand-in nixpkgs e2e: ${whyNot}`);

describe.skipIf(whyNot !== "")("the flake built and run against the stand-in nixpkgs", () => {
  let flake: StubFlake;
  beforeAll(async () => {
    if (!modern.impl) return;
    flake = await createStubFlake({ nixImpl: modern.impl, nixpkgs: "standin" });
  });
  afterAll(async () => flake?.cleanup());

  const build = async (ref: string, timeoutMs: number): Promise<string> => {
    const r = await flake.nix(
      ["build", ...flake.overrideArgs, ...STANDIN_BUILD_ARGS, "--print-out-paths", "--no-link", ref],
      timeoutMs,
    );
    if (r.exitCode !== 0)
      throw new Error(`nix build ${ref} failed (exit ${r.exitCode}):\n${r.stderr.slice(-4000)}`);
    return r.stdout.trim().split("\n").at(-1) ?? "";
  };
  /**
   * The profile file's Nix-only smoke commands (`toolSmoke`, one per tool it promises) and
   * dev-base's, as nix/profiles.nix joins them for the image; read from the files (their
   * `packages` are never forced, so no nixpkgs is needed).
   */
  const toolSmoke = async (profile: string): Promise<string[]> => {
    const read = (id: string) =>
      `(import ${flake.dir}/packages/profiles/nix/${id}.nix { stdenv.hostPlatform.isLinux = true; }).toolSmoke`;
    const expr = profile === "dev-base" ? read("dev-base") : `${read("dev-base")} ++ ${read(profile)}`;
    const r = await flake.nix(["eval", "--json", "--impure", "--expr", expr]);
    if (r.exitCode !== 0) throw new Error(`reading ${profile}'s toolSmoke failed: ${r.stderr}`);
    return JSON.parse(r.stdout) as string[];
  };
  const run = (argv: string[], timeoutMs: number) => {
    const c = inStore(flake.nixImpl, argv);
    return execa(c.file, c.args, { reject: false, timeout: timeoutMs, stdin: "ignore", all: true });
  };

  it("a store-built node runs in a sandbox with its closure bound read-only, and not without", async () => {
    const node = await build(
      `path:${flake.dir}/tests/nix?dir=standin-nixpkgs#legacyPackages.x86_64-linux.nodejs_24`,
      300_000,
    );
    const closure = (await flake.nix(["path-info", "--recursive", node])).stdout.trim().split("\n");
    expect(closure.length).toBeGreaterThan(0);
    const script = "console.log(process.execPath)";
    const bwrap = ["bwrap", "--unshare-net", "--proc", "/proc", "--dev", "/dev"];
    const withClosure = await run(
      [...bwrap, ...closure.flatMap((p) => ["--ro-bind", p, p]), `${node}/bin/node`, "-e", script],
      60_000,
    );
    expect(withClosure.stdout).toBe(`${node}/bin/node`);
    expect(withClosure.exitCode).toBe(0);
    const without = await run(
      [...bwrap, "--ro-bind", "/usr", "/usr", `${node}/bin/node`, "-e", script],
      60_000,
    );
    expect(without.exitCode).not.toBe(0);
  });

  it.skipIf(!FULL)(
    `scripts/nix-standin run .#rollout -- --task ${TASK}, from an empty cache: gold 1, empty 0 on the flake's store toolchain and snapshot; run.json names them and its store path`,
    async () => {
      const app = await build(`${flake.ref}#flakegym-rollout`, 3_000_000);
      const out = join(flake.dir, "run");
      // the documented command (Nix re-execs itself to bind its private store at /nix/store, then
      // the app realises the task's toolchain and snapshot through the same Nix), on a cache
      // nothing ran on before
      const r = await execa(
        "sh",
        [
          join(flake.dir, "scripts/nix-standin"),
          "run",
          "--max-jobs",
          "1",
          `${flake.ref}#rollout`,
          "--",
          ...goldAndEmpty(out),
        ],
        {
          reject: false,
          timeout: 2_400_000,
          stdin: "ignore",
          all: true,
          env: { FLAKEGYM_CACHE: join(flake.dir, "empty-cache") },
        },
      );
      if (r.exitCode !== 0)
        throw new Error(
          `nix-standin run .#rollout failed (exit ${r.exitCode}):\n${(r.all ?? "").slice(-4000)}`,
        );
      expect(rewardsOf(out), scoresOf(out)).toEqual([0, 1]);
      const manifest = JSON.parse(readFileSync(join(out, "run.json"), "utf8")) as {
        provenance: { nixStorePath?: string; nixpkgs?: string };
        tasks: Record<string, { image?: unknown }>;
      };
      expect(manifest.provenance.nixpkgs).toBe("standin");
      expect(manifest.tasks[TASK]?.image).toEqual({
        kind: "nix-store",
        toolchain: expect.stringMatching(/^\/nix\/store\/[0-9a-z]{32}-flakegym-node-env-toolchain$/),
        snapshot: expect.stringMatching(
          new RegExp(`^/nix/store/[0-9a-z]{32}-flakegym-snapshot-${TASK}-workspace$`),
        ),
        nixpkgs: "standin",
      });
      // the runner the app wraps (its store path is in the app's closure)
      const closure = (await flake.nix(["path-info", "--recursive", app])).stdout.split("\n");
      expect(manifest.provenance.nixStorePath).toMatch(/^\/nix\/store\/[0-9a-z]{32}-flakegym-0/);
      expect(closure).toContain(manifest.provenance.nixStorePath);
    },
    3_600_000,
  );
  for (const { task, profile, holds } of SNAPSHOT_TASKS) {
    it.skipIf(!FULL)(
      `snapshot-${task} (${profile}): three builds give the same bytes; no index stat data, no incremental dirs`,
      async () => {
        const ref = `${flake.ref}#packages.x86_64-linux.snapshot-${task}.snapshot.workspace`;
        const first = await build(ref, 900_000);
        // --rebuild builds it again and fails when any output byte differs from the first build;
        // twice, since an artefact written in random order (cargo's .rustc_info.json, a hash map)
        // differs only now and then
        for (const n of [2, 3]) {
          const again = await flake.nix(
            ["build", ...flake.overrideArgs, ...STANDIN_BUILD_ARGS, "--rebuild", "--no-link", ref],
            900_000,
          );
          expect(again.exitCode, `build ${n}: ${again.stderr.slice(-3000)}`).toBe(0);
        }
        const workspace = join(flake.realPath(first), "workspace");
        expect(gitIndexStatProblems(readFileSync(join(workspace, ".git/index")))).toEqual([]);
        const files = readdirSync(workspace, { recursive: true }).map(String);
        expect(files).toContain(holds);
        expect(incrementalArtefacts(files)).toEqual([]);
      },
      1_800_000,
    );
  }
  for (const profile of IMAGE_PROFILES) {
    it.skipIf(!FULL)(
      `${profile} image: same digest from two builds, loads into podman, answers its smoke commands`,
      async () => {
        const facts = JSON.parse(
          (
            await flake.nix([
              "eval",
              "--json",
              ...flake.overrideArgs,
              `${flake.ref}#lib.flakegym.x86_64-linux.profiles`,
            ])
          ).stdout,
        ) as Record<string, { nixName: string; smoke: string[] }>;
        const nixName = facts[profile]?.nixName ?? "";
        const stream = await build(`${flake.ref}#${nixName}-container`, 2_400_000);
        // the stream script runs from the store: in its namespace, via a wrapper podman load can spawn
        const wrapper = join(flake.dir, `stream-${nixName}.sh`);
        const c = inStore(flake.nixImpl, [stream]);
        writeFileSync(wrapper, `#!/bin/sh\nexec ${[c.file, ...c.args].map((a) => `'${a}'`).join(" ")}\n`);
        chmodSync(wrapper, 0o755);
        const digest = async () => {
          const r = await execa("sh", ["-c", `'${wrapper}' | sha256sum`], { timeout: 600_000 });
          return r.stdout.split(" ")[0];
        };
        const first = await digest();
        // `--rebuild` of the image alone rebuilds only its stream script: rebuild every derivation of
        // the image's own (its config and layer plan, the toolchain tree, the entrypoint), each
        // compared byte for byte with its first build, then stream it again.
        const drv = (
          await flake.nix([
            "path-info",
            "--derivation",
            ...flake.overrideArgs,
            `${flake.ref}#${nixName}-container`,
          ])
        ).stdout.trim();
        const requisites = await execa(
          join(dirname(flake.nixImpl.bin), "nix-store"),
          ["--query", "--requisites", drv],
          {
            timeout: 120_000,
          },
        );
        const ours = requisites.stdout
          .split("\n")
          .filter((d) => /-(stream-|flakegym-)[^/]*\.drv$|-conf\.drv$/.test(d));
        expect(ours.length).toBeGreaterThanOrEqual(3);
        for (const d of ours) {
          const r = await flake.nix(
            ["build", ...STANDIN_BUILD_ARGS, "--rebuild", "--no-link", `${d}^*`],
            1_200_000,
          );
          expect(r.exitCode, `${d}: ${r.stderr.slice(-3000)}`).toBe(0);
        }
        expect(await digest()).toBe(first);

        const ref = await podmanLoadStream(wrapper, { timeoutMs: 600_000 });
        expect(ref).toMatch(new RegExp(`^(localhost/)?flakegym/${nixName}:[0-9a-z]{32}$`));
        expect(await podmanImageId(ref, 60_000)).toMatch(/^[0-9a-f]{64}$/);
        const conf = join(flake.dir, "containers.conf");
        writeFileSync(conf, CONTAINERS_CONF);
        try {
          const smoke = [...(facts[profile]?.smoke ?? []), ...(await toolSmoke(profile))];
          expect(smoke.length).toBeGreaterThan(0);
          for (const cmd of smoke) {
            const r = await execa(
              "podman",
              ["run", "--rm", "--runtime", "/usr/sbin/runc", "--network", "none", ref, "sh", "-c", cmd],
              { reject: false, timeout: 300_000, stdin: "ignore", env: { CONTAINERS_CONF: conf } },
            );
            expect(r.exitCode, `${ref}: ${cmd}: ${r.stderr}`).toBe(0);
          }
        } finally {
          await execa("podman", ["rmi", "--force", ref], { reject: false, timeout: 60_000 });
        }
      },
      3_600_000,
    );
  }
  /**
   * `flakegym images load <select>` as a user runs it here: `nix` from PATH on the flake as given
   * (the copy's lock points nixpkgs at the stand-in, PATH's nix is the modern one, NIX_CONFIG
   * carries the stand-in build options), where the private store is /nix/store (the stream script
   * podman load runs is there). Returns the environment later commands share and the CLI.
   */
  const imagesLoad = async (select: readonly string[], cacheName: string) => {
    const lock = await flake.nix([
      "flake",
      "lock",
      ...flake.overrideArgs.filter((a) => a !== "--no-write-lock-file"),
      flake.ref,
    ]);
    expect(lock.exitCode, lock.stderr).toBe(0);
    const bin = join(flake.dir, "nix-bin");
    mkdirSync(bin, { recursive: true });
    writeFileSync(join(bin, "nix"), `#!/bin/sh\nexec '${flake.nixImpl.bin}' "$@"\n`, { mode: 0o755 });
    const env = {
      ...process.env,
      PATH: `${bin}:${process.env.PATH ?? ""}`,
      NIX_CONFIG: standinNixConfig(),
      FLAKEGYM_CACHE: join(flake.dir, cacheName),
    };
    const cli = join(REPO_ROOT, "packages/runner/bin/flakegym.js");
    const load = inStore(flake.nixImpl, [
      process.execPath,
      cli,
      "images",
      "load",
      ...select,
      "--flake",
      flake.ref,
    ]);
    const loaded = await execa(load.file, load.args, {
      reject: false,
      timeout: 2_400_000,
      stdin: "ignore",
      env,
      all: true,
    });
    expect(loaded.exitCode, loaded.all?.slice(-4000)).toBe(0);
    return { env, cli };
  };
  it.skipIf(!FULL)(
    `flakegym images load --profile node, then rollout --backend podman --images nix on ${TASK}: the agent and scorer in the Nix-built image, gold 1, empty 0, run.json names the image`,
    async () => {
      const { env, cli } = await imagesLoad(["--profile", "node"], "flakegym-cache");
      const records = readImageRecords(defaultImageRecordFile(env));
      const record = records.images.find((r) => r.name === "flakegym/node-env");
      expect(record?.storePath).toMatch(/^\/nix\/store\/[0-9a-z]{32}-stream-node-env$/);
      const out = join(flake.dir, "run-images");
      try {
        const r = await execa(
          process.execPath,
          [cli, "rollout", "--backend", "podman", "--images", "nix", ...goldAndEmpty(out)],
          { reject: false, timeout: 1_800_000, stdin: "ignore", env, all: true },
        );
        expect(r.exitCode, r.all?.slice(-4000)).toBe(0);
        expect(rewardsOf(out)).toEqual([0, 1]);
        const run = JSON.parse(readFileSync(join(out, "run.json"), "utf8")) as {
          tasks: Record<string, { image?: unknown }>;
        };
        expect(run.tasks[TASK]?.image).toMatchObject({
          name: "flakegym/node-env",
          kind: "profile",
          digest: record?.imageId,
          storePath: record?.storePath,
        });
      } finally {
        if (record)
          await execa("podman", ["rmi", "--force", record.imageId], { reject: false, timeout: 60_000 });
      }
    },
    3_600_000,
  );
  it.skipIf(!FULL)(
    `flakegym images load --task ${SNAPSHOT_IMAGE_TASK}, then rollout --backend podman --images nix: the snapshot is the image's /workspace (no install host-side), gold 1, empty 0; the bench's ratio printed`,
    async () => {
      const { env, cli } = await imagesLoad(["--task", SNAPSHOT_IMAGE_TASK], "flakegym-cache-snapimg");
      const record = readImageRecords(defaultImageRecordFile(env)).images.find(
        (r) => r.kind === "snapshot" && r.id === SNAPSHOT_IMAGE_TASK,
      );
      expect(record, "images load recorded no snapshot image").toBeDefined();
      const out = join(flake.dir, "run-snapimg");
      try {
        const r = await execa(
          process.execPath,
          [
            cli,
            "rollout",
            "--backend",
            "podman",
            "--images",
            "nix",
            ...goldAndEmpty(out).map((a) => (a === TASK ? SNAPSHOT_IMAGE_TASK : a)),
          ],
          { reject: false, timeout: 1_800_000, stdin: "ignore", env, all: true },
        );
        expect(r.exitCode, r.all?.slice(-4000)).toBe(0);
        expect(rewardsOf(out), scoresOf(out)).toEqual([0, 1]);
        // the only snapshot in the cache is the image's copy: no install or smoke ran host-side
        const snaps = join(env.FLAKEGYM_CACHE, "snapshots");
        const keys = readdirSync(snaps).filter((k) => /^[0-9a-f]{64}$/.test(k));
        expect(keys).toEqual([imageSnapshotKey(record!.imageId)]);
        const manifest = JSON.parse(readFileSync(join(snaps, keys[0]!, "manifest.json"), "utf8"));
        expect(manifest).toMatchObject({ fromImage: { digest: record!.imageId }, install: [] });
        expect(readdirSync(join(snaps, keys[0]!, "tree", "workspace", "target"))).toContain("debug");
        // the measurement, on this Nix-built image
        const bench = await execa(
          "npm",
          [
            "run",
            "bench",
            "--",
            "snapshot-image",
            "--task",
            SNAPSHOT_IMAGE_TASK,
            "--image",
            record!.loadedAs,
          ],
          { cwd: REPO_ROOT, reject: false, timeout: 1_200_000, stdin: "ignore", all: true },
        );
        console.log(bench.all);
        expect(bench.exitCode, bench.all?.slice(-3000)).toBe(0);
      } finally {
        if (record)
          await execa("podman", ["rmi", "--force", record.imageId], { reject: false, timeout: 60_000 });
      }
    },
    3_600_000,
  );
  if (!FULL)
    console.warn(
      "skipping the full stand-in e2e (builds of the rollout app, a snapshot and every profile's image; the app on a task; the images in podman; a rollout on the node image): run `npm run nix:e2e`",
    );
});
