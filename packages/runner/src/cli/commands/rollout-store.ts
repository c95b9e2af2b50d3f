import type { ProfileId } from "@flakegym/profiles";
import { isNixApp } from "../../images/nix-app.js";
import { type RealisedOutput, realiseStoreOutput } from "../../nix/realise.js";
import { storeOutputsOf, storeSnapshotChoice } from "../../nix/store-outputs.js";
import type { RunConfig, StoreWorkerProvenance } from "../../run-format/schema.js";
import { type StoreToolchain, useStoreToolchain } from "../../workers/local/toolchain.js";
import type { CliContext } from "../command.js";

/**
 * `nix run .#rollout` on the local backend: each task's workers run on the flake's store paths, not
 * this machine's toolchain. Before anything runs, every task's profile toolchain is realised (built
 * by the Nix the app runs under when absent) and bound into the sandboxes; a catalog task's snapshot
 * comes from the store when the flake built one the local backend can use (else the runner builds
 * it, and says why). Returns each task's provenance for run.json, or undefined outside the app.
 */
export async function preflightStoreWorkers(
  config: RunConfig,
  tasksOf: () => Promise<
    readonly { readonly id: string; readonly profile: string; readonly catalog: boolean }[]
  >,
  ctx: Pick<CliContext, "env" | "stderr" | "signal">,
): Promise<ReadonlyMap<string, StoreWorkerProvenance> | undefined> {
  if (!isNixApp(ctx.env) || config.backend !== "local" || config.images === "nix") return undefined;
  const outputs = storeOutputsOf(ctx.env);
  if (!outputs) return undefined;
  const say = (m: string) => ctx.stderr.write(`nix run .#rollout: ${m}\n`);
  const label = outputs.nixpkgs === "standin" ? " (stand-in nixpkgs: copies of this machine's tools)" : "";
  const opts = { env: ctx.env, signal: ctx.signal, onProgress: say };
  const out = new Map<string, StoreWorkerProvenance>();
  const bound = new Map<string, StoreToolchain>();
  for (const t of await tasksOf()) {
    const toolchain = outputs.profiles[t.profile];
    if (!toolchain) {
      say(
        `task ${t.id}: the flake has no toolchain for profile ${t.profile}; its workers run on this machine's /usr`,
      );
      continue;
    }
    const tc = await realiseStoreOutput(toolchain, opts);
    const snap = t.catalog
      ? storeSnapshotChoice(outputs, t.id)
      : { use: false as const, reason: "a dataset row" };
    const realisedSnap = snap.use ? await realiseStoreOutput(snap.output, opts) : undefined;
    const snapshot = realisedSnap?.path;
    bound.set(t.profile, withSnapshotClosure(bound.get(t.profile) ?? tc, realisedSnap));
    say(
      `task ${t.id}: toolchain ${tc.path}${label}; snapshot ${snapshot ?? `built here (${snap.use ? "" : snap.reason})`}`,
    );
    out.set(t.id, {
      kind: "nix-store",
      toolchain: tc.path,
      ...(snapshot ? { snapshot } : {}),
      nixpkgs: outputs.nixpkgs,
    });
  }
  for (const [profile, tc] of bound) useStoreToolchain(profile as ProfileId, tc);
  return out;
}

/**
 * A store toolchain's binds plus what a store snapshot's work tree needs at run time (its closure
 * without the work tree itself, which is copied: e.g. the vendored crates its cargo-home names), no
 * path twice. Pure.
 */
export function withSnapshotClosure(tc: StoreToolchain, snap: RealisedOutput | undefined): StoreToolchain {
  if (!snap) return tc;
  const extra = snap.closure.filter((p) => p !== snap.path && !tc.closure.includes(p));
  return { path: tc.path, closure: [...tc.closure, ...extra] };
}
