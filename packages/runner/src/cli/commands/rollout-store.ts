import type { ProfileId } from "@flakegym/profiles";
import { isNixApp } from "../../images/nix-app.js";
import { realiseStoreOutput } from "../../nix/realise.js";
import { storeOutputsOf, storeSnapshotChoice } from "../../nix/store-outputs.js";
import type { RunConfig, StoreWorkerProvenance } from "../../run-format/schema.js";
import { useStoreToolchain } from "../../workers/local/toolchain.js";
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
  for (const t of await tasksOf()) {
    const toolchain = outputs.profiles[t.profile];
    if (!toolchain) {
      say(
        `task ${t.id}: the flake has no toolchain for profile ${t.profile}; its workers run on this machine's /usr`,
      );
      continue;
    }
    const tc = await realiseStoreOutput(toolchain, opts);
    useStoreToolchain(t.profile as ProfileId, tc);
    const snap = t.catalog
      ? storeSnapshotChoice(outputs, t.id)
      : { use: false as const, reason: "a dataset row" };
    const snapshot = snap.use ? (await realiseStoreOutput(snap.output, opts)).path : undefined;
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
  return out;
}
