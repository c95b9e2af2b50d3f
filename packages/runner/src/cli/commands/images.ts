import { match } from "ts-pattern";
import { z } from "zod";
import { UsageError } from "../../errors.js";
import {
  nixBuildImage,
  nixVersionLine,
  podmanImageId,
  podmanLoadStream,
  podmanPush,
  readImageRecords,
  recordImage,
} from "../../images/nix-images.js";
import { snapshotImageExpr } from "../../images/snapshot-expr.js";
import {
  defaultImageRecordFile,
  EXIT_NEEDS_NIX,
  type ImageTarget,
  nixBuildCapability,
  selectImageTargets,
  TAG_AFTER_BUILD,
  tagOfStorePath,
} from "../../images/targets.js";
import { type FlakeFacts, readFlakeFacts } from "../../nix/flake-facts.js";
import { runningNixBin } from "../../nix/running-nix.js";
import { snapshotSpecOfTask } from "../../snapshots/spec.js";
import { loadTask } from "../../tasks/catalog.js";
import { type CliContext, defineCommand } from "../command.js";

/** `flakegym images build|load|list`: the flake's worker and snapshot images, built with Nix. */

const selection = {
  profile: z.array(z.string().min(1)).default([]).describe("a profile's worker image (default: all)"),
  task: z.array(z.string().min(1)).default([]).describe("a task's snapshot image (default: all)"),
  flake: z.string().optional().describe("flake reference (default: $FLAKEGYM_FLAKE, else this checkout)"),
  system: z.string().optional().describe("Nix system (default: this machine's)"),
  timeoutMs: z
    .number()
    .int()
    .positive()
    .default(3_600_000)
    .describe("deadline for each nix build / podman step, in ms"),
};

const EXIT_DOC = `Exit status: 0 done; 1 a build, load or push failed; ${EXIT_NEEDS_NIX} this machine cannot build the images (no Nix >= 2.18 that reaches nixpkgs: the message says what to run instead).`;

type Facts = { facts: FlakeFacts; flakeRef: string };

/** Reads the facts, or writes why not and returns the exit status. */
async function facts(
  opts: { flake?: string | undefined; system?: string | undefined; timeoutMs: number },
  ctx: CliContext,
): Promise<Facts | number> {
  const r = await readFlakeFacts({
    ...(opts.flake !== undefined ? { flakeRef: opts.flake } : {}),
    ...(opts.system !== undefined ? { system: opts.system } : {}),
    env: ctx.env,
    signal: ctx.signal,
    timeoutMs: Math.min(opts.timeoutMs, 600_000),
  });
  return match(r)
    .with({ kind: "facts" }, ({ facts, flakeRef }) => ({ facts, flakeRef }) as Facts)
    .with({ kind: "nix-missing" }, ({ reason }) => {
      ctx.stderr.write(`flakegym images: ${reason}\n`);
      return EXIT_NEEDS_NIX;
    })
    .with({ kind: "no-flake" }, ({ reason }) => {
      ctx.stderr.write(`flakegym images: ${reason}; pass --flake <ref> or set FLAKEGYM_FLAKE\n`);
      return 1;
    })
    .exhaustive();
}

/** Checks the Nix here can build nixpkgs-based images; writes why not. */
async function canBuild(ctx: CliContext): Promise<boolean> {
  const cap = nixBuildCapability(await nixVersionLine(runningNixBin(ctx.env), ctx.env));
  return match(cap)
    .with({ kind: "ok" }, () => true)
    .with({ kind: "unavailable" }, ({ reason, whatToRun }) => {
      ctx.stderr.write(
        `flakegym images: cannot build the flake's images here: ${reason}. They need Nix >= 2.18 with access to nixpkgs and its binary cache.\n${whatToRun}\n`,
      );
      return false;
    })
    .exhaustive();
}

async function buildAll(
  targets: readonly ImageTarget[],
  f: Facts,
  timeoutMs: number,
  ctx: CliContext,
  each: (t: ImageTarget, storePath: string) => Promise<void>,
): Promise<void> {
  for (const t of targets) {
    const what =
      t.expr === undefined
        ? `${f.flakeRef}#${t.package}`
        : `--impure --expr <lib.mkSnapshotImage for ${t.id}>`;
    ctx.stderr.write(`flakegym images: nix build ${what}\n`);
    const storePath = await nixBuildImage(t, {
      flakeRef: f.flakeRef,
      env: ctx.env,
      signal: ctx.signal,
      timeoutMs,
    });
    await each(t.tag === TAG_AFTER_BUILD ? { ...t, tag: tagOfStorePath(storePath) } : t, storePath);
  }
}

/**
 * The images to build: the flake's (facts), plus, for a `--task` the flake does not list, a
 * catalog task with a local source (any profile) built through lib.mkSnapshotImage from the runner's own
 * snapshot spec (a remote source needs its narHash pinned in the flake: add it as an input).
 */
async function targetsFor(
  f: Facts,
  opts: { profile: string[]; task: string[]; system?: string | undefined },
): Promise<ImageTarget[]> {
  const known = opts.task.filter((t) => t in f.facts.snapshots);
  const others = opts.task.filter((t) => !(t in f.facts.snapshots));
  const targets =
    opts.profile.length + known.length > 0 || others.length === 0
      ? selectImageTargets(f.facts, { profiles: opts.profile, tasks: known })
      : [];
  for (const id of others) {
    const task = await loadTask(id).catch(() => {
      throw new UsageError(
        `--task ${id}: the flake has no snapshot image for it and it is not a catalog task`,
        "`flakegym images list` shows the flake's images; `flakegym tasks list` the catalog",
      );
    });
    const spec = snapshotSpecOfTask(task);
    if (task.spec.source.kind !== "local" || task.paths.sourceDir === undefined) {
      throw new UsageError(
        `--task ${id}: its source is fetched from ${spec.repo}; the flake builds it only when pinned by narHash (a flake input and a nix/snapshots/${id}.nix spec, or lib.mkSnapshotImage with narHash)`,
        "docs/reference/nix.md, 'Any task: lib.mkSnapshotImage'",
      );
    }
    targets.push({
      kind: "snapshot",
      id,
      package: "lib.mkSnapshotImage",
      name: `flakegym/snapshot-${id}`,
      tag: TAG_AFTER_BUILD,
      expr: snapshotImageExpr(f.flakeRef, opts.system ?? f.facts.system, spec, { dir: task.paths.sourceDir }),
    });
  }
  return targets;
}

export const imagesBuildCommand = defineCommand({
  path: ["images", "build"],
  summary: "build the flake's worker and snapshot images with Nix (`nix build .#<image>`)",
  details: `Prints each image's stream script (a store path: \`<it> | podman load\`). ${EXIT_DOC}`,
  options: z.object(selection).strict(),
  examples: ["flakegym images build --profile rust", "flakegym images build --task ratatui-2148"],
  async run(opts, ctx) {
    if (!(await canBuild(ctx))) return EXIT_NEEDS_NIX;
    const f = await facts(opts, ctx);
    if (typeof f === "number") return f;
    const targets = await targetsFor(f, opts);
    await buildAll(targets, f, opts.timeoutMs, ctx, async (t, storePath) => {
      ctx.stdout.write(`${t.name}:${t.tag}\t${storePath}\n`);
    });
    return 0;
  },
});

export const imagesLoadCommand = defineCommand({
  path: ["images", "load"],
  summary: "build the flake's images and load them into podman (optionally push them for Nomad)",
  details: `Builds each image, streams it into \`podman load\`, and records name, tag, podman image id and store path in $FLAKEGYM_CACHE/images.json (the podman backend and \`images list\` read it). --push copies each to <registry>/<name>:<tag> and records <registry>/<name>@<digest>. ${EXIT_DOC}`,
  options: z
    .object({
      ...selection,
      push: z.string().optional().describe("registry to push to after loading, e.g. localhost:5000/flakegym"),
    })
    .strict(),
  examples: ["flakegym images load --profile rust", "flakegym images load --push localhost:5000/flakegym"],
  async run(opts, ctx) {
    if (!(await canBuild(ctx))) return EXIT_NEEDS_NIX;
    const f = await facts(opts, ctx);
    if (typeof f === "number") return f;
    const targets = await targetsFor(f, opts);
    const file = defaultImageRecordFile(ctx.env);
    await buildAll(targets, f, opts.timeoutMs, ctx, async (t, storePath) => {
      const loadedAs = await podmanLoadStream(storePath, { timeoutMs: opts.timeoutMs });
      const imageId = await podmanImageId(loadedAs, 60_000);
      const pushed =
        opts.push === undefined ? undefined : await podmanPush(loadedAs, opts.push, t.name, opts.timeoutMs);
      await recordImage(file, {
        ...t,
        storePath,
        imageId,
        loadedAs,
        ...(pushed !== undefined ? { pushed } : {}),
        flakeRef: f.flakeRef,
        recordedAt: new Date().toISOString(),
      });
      ctx.stdout.write(`${loadedAs}\t${imageId}\t${storePath}${pushed ? `\t${pushed}` : ""}\n`);
    });
    return 0;
  },
});

export const imagesListCommand = defineCommand({
  path: ["images", "list"],
  summary: "list the images the flake builds and which are loaded here",
  details:
    "Without Nix (or without a flake) lists only what `images load` recorded. Exit 0; 1 when the records file is malformed.",
  options: z
    .object({
      flake: selection.flake,
      system: selection.system,
      json: z.boolean().default(false).describe("print JSON"),
      timeoutMs: z
        .number()
        .int()
        .positive()
        .default(300_000)
        .describe("deadline for reading the flake, in ms"),
    })
    .strict(),
  examples: ["flakegym images list", "flakegym images list --json"],
  async run(opts, ctx) {
    const records = readImageRecords(defaultImageRecordFile(ctx.env)).images;
    let f: Facts | number;
    try {
      f = await facts(opts, ctx);
    } catch (e) {
      ctx.stderr.write(
        `flakegym images: the flake's images are unknown (${(e as Error).message.split("\n")[0]}); listing what was loaded\n`,
      );
      f = 1;
    }
    const targets = typeof f === "number" ? [] : selectImageTargets(f.facts, { profiles: [], tasks: [] });
    const rows = targets.map((t) => {
      const rec = records.find((r) => r.name === t.name && r.tag === t.tag);
      return {
        ...t,
        loaded: rec?.imageId ?? null,
        storePath: rec?.storePath ?? null,
        pushed: rec?.pushed ?? null,
      };
    });
    const others = records.filter((r) => !targets.some((t) => t.name === r.name && t.tag === r.tag));
    if (opts.json) {
      ctx.stdout.write(`${JSON.stringify({ flake: rows, recordedOnly: others }, null, 2)}\n`);
      return 0;
    }
    const line = (r: { kind: string; id: string; name: string; tag: string }, state: string) =>
      `${r.kind.padEnd(9)}${r.id.padEnd(16)}${`${r.name}:${r.tag}`.padEnd(60)}${state}`;
    const out = [`${"KIND".padEnd(9)}${"ID".padEnd(16)}${"IMAGE".padEnd(60)}LOADED`];
    for (const r of rows)
      out.push(line(r, r.loaded ? `${r.loaded.slice(0, 12)}${r.pushed ? ` ${r.pushed}` : ""}` : "-"));
    for (const r of others)
      out.push(line(r, `${r.imageId.slice(0, 12)} (recorded; not in this flake's facts)`));
    ctx.stdout.write(`${out.join("\n")}\n`);
    return 0;
  },
});
