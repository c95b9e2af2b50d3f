import { match } from "ts-pattern";
import type { DoctorRow } from "../doctor/probe.js";
import type { NixBuildCapability } from "./targets.js";
import type { MissingImage } from "./worker-images.js";

/**
 * What `nix run .#rollout` runs on when the user did not say: the flake's images on podman when
 * they are all here, else the local backend with the reason printed. Pure: the facts are gathered
 * by cli/commands/rollout-images.ts. Also the doctor's row on whether `--images nix` can run here.
 */

/** Set to 1 by the flake's `rollout` app (flake.nix), beside FLAKEGYM_FLAKE (the app's own flake). */
export const NIX_APP_ENV = "FLAKEGYM_NIX_APP";

/** Whether this process is the flake's `rollout` app. */
export function isNixApp(env: Readonly<Record<string, string | undefined>>): boolean {
  return env[NIX_APP_ENV] === "1";
}

/** The rollout flags that pin where workers run: any of them given means no default is chosen. */
export interface RolloutChoiceFlags {
  readonly backend?: string | undefined;
  readonly images?: string | undefined;
  readonly resume?: string | undefined;
  readonly dataset?: string | undefined;
}

/** The first flag that pins the choice, or undefined. --resume and --dataset keep the local default. */
export function pinningFlag(flags: RolloutChoiceFlags): string | undefined {
  return (["backend", "images", "resume", "dataset"] as const).find((k) => flags[k] !== undefined);
}

/** The facts the default is chosen from. */
export interface NixAppFacts {
  /** The Nix here: needed to build missing images, not to run recorded ones. */
  readonly nix: NixBuildCapability;
  /** `podman --version`'s line, or undefined when podman is missing or broken. */
  readonly podman: string | undefined;
  /** Tasks without a recorded image that podman has (empty: every task has one). */
  readonly missing: readonly MissingImage[];
}

/** Where the app's workers run: the flake's images on podman, or the local backend and why. */
export type NixAppChoice =
  | { readonly kind: "nix"; readonly backend: "podman"; readonly images: "nix" }
  | { readonly kind: "local"; readonly reason: string };

/** Chooses from {@link NixAppFacts}: podman plus an image for every task, else local (and why). */
export function chooseNixAppDefault(f: NixAppFacts): NixAppChoice {
  if (f.podman === undefined) {
    return { kind: "local", reason: "podman is not usable here (apt-get install podman runc)" };
  }
  if (f.missing.length === 0) return { kind: "nix", backend: "podman", images: "nix" };
  const first = f.missing[0]!;
  const more = f.missing.length > 1 ? ` (and ${f.missing.length - 1} more task(s))` : "";
  const build = match(f.nix)
    .with({ kind: "ok" }, () => `run: ${first.command}`)
    .with({ kind: "unavailable" }, ({ reason }) => `and this machine cannot build it: ${reason}`)
    .exhaustive();
  return {
    kind: "local",
    reason: `task ${first.taskId}${more}: ${first.what}; ${build}`,
  };
}

/** The line the app prints when it falls back to the local backend. */
export function nixAppFallbackMessage(reason: string, storeToolchains = false): string {
  const on = storeToolchains
    ? "the local backend with the flake's toolchains and snapshots from the Nix store"
    : "the local backend (this machine's /usr)";
  return `nix run .#rollout: workers run on ${on}, not the flake's images: ${reason}. Pass --backend/--images to choose.`;
}

/** What the doctor knows about `rollout --images nix` here. */
export interface NixRolloutFacts {
  readonly nix: NixBuildCapability;
  readonly podman: string | undefined;
  /** How many images `flakegym images load` recorded (profile and snapshot). */
  readonly recorded: number;
  readonly recordsFile: string;
}

/** The doctor's row: can `rollout --images nix` run here (and so `nix run .#rollout` default to it)? */
export function nixRolloutRow(f: NixRolloutFacts): DoctorRow {
  const check = "rollout --images nix";
  const buildable = f.nix.kind === "ok";
  if (f.podman !== undefined && f.recorded > 0) {
    return {
      check,
      status: "ok",
      value: `${f.recorded} image(s) recorded in ${f.recordsFile}; podman present`,
      ...(buildable ? {} : { detail: `new images cannot be built here: ${reasonOf(f.nix)}` }),
    };
  }
  const why = [
    ...(f.podman === undefined ? ["podman is not usable (apt-get install podman runc)"] : []),
    ...(f.recorded === 0 ? [`no images recorded in ${f.recordsFile}`] : []),
    ...(f.recorded === 0
      ? [
          buildable
            ? "run: flakegym images load --profile <profile> (or --task <id>)"
            : `and none can be built here: ${reasonOf(f.nix)} (build them elsewhere with \`flakegym images load\`)`,
        ]
      : []),
  ];
  return {
    check,
    status: "info",
    value: "not here: rollouts (and `nix run .#rollout`) use the local backend",
    detail: why.join("\n"),
  };
}

function reasonOf(nix: NixBuildCapability): string {
  return nix.kind === "ok" ? "" : nix.reason;
}
