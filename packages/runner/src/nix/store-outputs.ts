import { z } from "zod";
import { FlakegymError } from "../errors.js";
import { nixStorePathOf } from "./store-path.js";

/**
 * What the flake's `rollout` app says its workers can run on (FLAKEGYM_NIX_OUTPUTS, written by
 * nix/store-outputs.nix): each profile's toolchain and each task's snapshot work tree as a
 * derivation and its output path, not yet built. Pure parsing; realising is nix/realise.ts.
 */
export const NIX_OUTPUTS_ENV = "FLAKEGYM_NIX_OUTPUTS";

const StorePath = z
  .string()
  .refine((p) => nixStorePathOf(p) === p, { message: "not a store path /nix/store/<hash>-<name>" });

/** A derivation and the output the runner uses. */
export const StoreOutput = z.object({ drv: StorePath, out: StorePath }).strict();
export type StoreOutput = z.infer<typeof StoreOutput>;

export const StoreOutputs = z
  .object({
    schemaVersion: z.literal(1),
    nixpkgs: z
      .enum(["nixpkgs", "standin"])
      .describe("standin: toolchains are copies of the build machine's tools"),
    profiles: z.record(z.string(), StoreOutput),
    snapshots: z.record(
      z.string(),
      StoreOutput.extend({
        imageDirs: z
          .array(z.string())
          .describe("dependency dirs beside the work tree (cargo-home, python-deps)"),
      }).strict(),
    ),
  })
  .strict();
export type StoreOutputs = z.infer<typeof StoreOutputs>;

/** The app's store outputs, or undefined outside the app. Throws naming the variable when malformed. */
export function storeOutputsOf(env: Readonly<Record<string, string | undefined>>): StoreOutputs | undefined {
  const text = env[NIX_OUTPUTS_ENV];
  if (text === undefined || text === "") return undefined;
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw badOutputs(`is not JSON (${(e as Error).message})`);
  }
  const r = StoreOutputs.safeParse(json);
  if (!r.success) {
    const i = r.error.issues[0]!;
    throw badOutputs(`field ${i.path.join(".") || "(root)"}: ${i.message}`);
  }
  return r.data;
}

function badOutputs(what: string): FlakegymError {
  return new FlakegymError("E_NIX_OUTPUTS", `${NIX_OUTPUTS_ENV} ${what}`, {
    hint: "it is set by the flake's rollout app (nix/store-outputs.nix): run `nix run .#rollout`, or unset it",
  });
}

/**
 * A store snapshot's dependency dirs the local backend can use, and where each goes in the
 * snapshot's deps dir (what workers/local/shape.ts `depsEnv` points at): cargo-home holds only a
 * config.toml whose source replacement names the vendored crates' store path (bound read-only with
 * the snapshot's closure), so a copy of it is CARGO_HOME. python-deps is a package tree the image
 * puts on PYTHONPATH: not here.
 */
export const STORE_DEPS_DIRS: Readonly<Record<string, string>> = { "cargo-home": "cargo" };

/**
 * Whether a task's snapshot can come from the store as is, and if not why. A work tree with
 * dependency dirs beside it the local backend cannot use (python-deps) needs the image's
 * environment, which only a snapshot image on podman has. Pure.
 */
export function storeSnapshotChoice(
  outputs: StoreOutputs,
  taskId: string,
): { use: true; output: StoreOutput } | { use: false; reason: string } {
  const s = outputs.snapshots[taskId];
  if (!s) return { use: false, reason: `the flake has no snapshot for task ${taskId}` };
  const unusable = s.imageDirs.filter((d) => !Object.hasOwn(STORE_DEPS_DIRS, d));
  if (unusable.length > 0)
    return {
      use: false,
      reason: `its snapshot keeps dependencies in ${unusable.join(", ")}, which only its image provides (--backend podman --images nix)`,
    };
  return { use: true, output: { drv: s.drv, out: s.out } };
}
