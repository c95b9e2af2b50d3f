import { readFileSync } from "node:fs";
import { execa } from "execa";
import { FlakegymError } from "../errors.js";
import { runningNixStoreBin } from "./running-nix.js";
import type { StoreOutput } from "./store-outputs.js";
import { nixStorePathOf } from "./store-path.js";

/**
 * A store output made present (`nix-store --realise <drv>`, by the Nix the run is under) with its
 * runtime closure (`nix-store --query --requisites`), each wait bounded. Realised once per process.
 */
export interface RealisedOutput {
  readonly path: string;
  readonly closure: readonly string[];
}

const realised = new Map<string, Promise<RealisedOutput>>();

/**
 * Inside the user namespace `nix run` makes for a store that is not at /nix/store (a private
 * `--store local?root=…`, as scripts/nix-standin's), setgroups is denied, and a build there fails
 * ("setgroups failed") unless Nix is told the supplementary groups cannot be dropped: the namespace
 * maps no other group, so there are none to drop.
 */
export const DENIED_SETGROUPS_ARGS = ["--option", "require-drop-supplementary-groups", "false"] as const;

/** Whether /proc/self/setgroups' text says setgroups is denied in this user namespace. Pure. */
export function setgroupsDenied(text: string | undefined): boolean {
  return text?.trim() === "deny";
}

function readSetgroups(): string | undefined {
  try {
    return readFileSync("/proc/self/setgroups", "utf8");
  } catch {
    return undefined;
  }
}

export interface RealiseOptions {
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly signal?: AbortSignal | undefined;
  /** For building it (a toolchain the first time can take minutes). */
  readonly timeoutMs?: number;
  /** Said before a build starts. */
  readonly onProgress?: (line: string) => void;
}

export function realiseStoreOutput(o: StoreOutput, opts: RealiseOptions): Promise<RealisedOutput> {
  let p = realised.get(o.drv);
  if (!p) {
    p = realise(o, opts);
    realised.set(o.drv, p);
    p.catch(() => realised.delete(o.drv));
  }
  return p;
}

async function realise(o: StoreOutput, opts: RealiseOptions): Promise<RealisedOutput> {
  const bin = runningNixStoreBin(opts.env);
  opts.onProgress?.(`nix-store --realise ${o.drv}`);
  const extra = setgroupsDenied(readSetgroups()) ? DENIED_SETGROUPS_ARGS : [];
  const built = await nixStore(bin, [...extra, "--realise", o.drv], opts.timeoutMs ?? 3_600_000, opts);
  const path = built
    .split("\n")
    .map((l) => l.trim())
    .find((l) => l === o.out);
  if (!path) {
    throw new FlakegymError(
      "E_NIX_REALISE",
      `nix-store --realise ${o.drv} did not produce ${o.out} (printed: ${built.trim().slice(0, 400)})`,
      {
        hint: "the flake's rollout app and the store disagree: rebuild the app (`nix run .#rollout` again)",
      },
    );
  }
  const listed = await nixStore(bin, ["--query", "--requisites", path], 120_000, opts);
  const closure = listed
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "" && nixStorePathOf(l) === l);
  return { path, closure };
}

async function nixStore(
  bin: string,
  args: readonly string[],
  timeoutMs: number,
  opts: RealiseOptions,
): Promise<string> {
  const r = await execa(bin, args, {
    reject: false,
    stdin: "ignore",
    timeout: timeoutMs,
    env: opts.env as NodeJS.ProcessEnv,
    ...(opts.signal ? { cancelSignal: opts.signal } : {}),
  });
  if (r.exitCode === 0) return r.stdout;
  const why = r.timedOut ? `timed out after ${timeoutMs} ms` : `exit ${r.exitCode ?? r.signal}`;
  throw new FlakegymError(
    "E_NIX_REALISE",
    `${bin} ${args.join(" ")} failed (${why}): ${r.stderr.trim().slice(-2000)}`,
    {
      hint: "a missing .drv means the app was copied without its derivations: run `nix run .#rollout` from the flake; set FLAKEGYM_NIX_BIN to the nix that runs it",
    },
  );
}
