import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { ProfileId } from "@flakegym/profiles";
import { execa } from "execa";
import { z } from "zod";
import { FlakegymError } from "../errors.js";
import { runningNixBin } from "./running-nix.js";

/**
 * Facts the runner reads from the flake when Nix is present: for each profile its devShell and
 * image (name and tag, the tag being the image's Nix output hash), for each snapshot image its
 * snapshot key and key inputs, and the vendored Cline version. The flake exposes them at
 * `lib.flakegym.<system>` (nix/facts.nix); this module runs `nix eval --json` on that attribute and
 * parses the answer. Keep the schema and nix/facts.nix in step. A snapshot image's key is not an
 * evaluation-time fact (it includes the built toolchain's `--version` output): the image carries it
 * in `keyFile`, computed the way packages/runner/src/snapshots computes keys.
 */

export const FLAKE_FACTS_SCHEMA_VERSION = 1;

export const FlakeImageFacts = z
  .object({
    package: z.string().min(1).describe("flake package that builds the image: `nix build .#<package>`"),
    name: z.string().min(1).describe("image name the stream loads as (`./result | podman load`)"),
    tag: z.string().min(1).describe("image tag: the image's Nix output hash"),
  })
  .strict();
export type FlakeImageFacts = z.infer<typeof FlakeImageFacts>;

export const FlakeProfileFacts = z
  .object({
    nixName: z.string().min(1).describe("the profile's name in the flake"),
    devShell: z.string().min(1).describe("devShells.<system>.<devShell> for `nix develop .#<devShell>`"),
    smoke: z.array(z.string().min(1)).describe("profiles.json smoke commands, as the flake read them"),
    image: FlakeImageFacts.describe("the profile's worker image"),
  })
  .strict();
export type FlakeProfileFacts = z.infer<typeof FlakeProfileFacts>;

export const FlakeSnapshotFacts = z
  .object({
    format: z.number().int().describe("snapshot key format (the runner's SNAPSHOT_FORMAT)"),
    repo: z.string().min(1).describe("the repository as the runner's snapshot key names it (clone URL)"),
    commit: z
      .string()
      .regex(/^[0-9a-f]{40}$/)
      .describe("pinned commit of the source"),
    profile: ProfileId.describe("profile whose toolchain built the snapshot"),
    install: z.array(z.string()).describe("commands that built the snapshot (its `target/` etc.)"),
    smoke: z.array(z.string()).describe("smoke commands of the snapshot spec"),
    network: z.enum(["none", "required"]).describe("whether building the snapshot needed the network"),
    toolchainCommands: z
      .array(z.string())
      .describe("commands whose first output line makes the key's toolchain identity (profiles.json smoke)"),
    keyFile: z
      .string()
      .startsWith("/")
      .describe(
        "file in the image holding {key, ...inputs}: the key needs the built toolchain's --version output",
      ),
    image: FlakeImageFacts.describe("the snapshot image (profile image + prebuilt work tree)"),
  })
  .strict();
export type FlakeSnapshotFacts = z.infer<typeof FlakeSnapshotFacts>;

export const FlakeFacts = z
  .object({
    schemaVersion: z.literal(FLAKE_FACTS_SCHEMA_VERSION).describe("version of this shape"),
    system: z.string().min(1).describe("Nix system the facts were evaluated for"),
    cline: z
      .object({
        version: z.string().min(1).describe("vendored Cline core version (npm `cline`)"),
        integrity: z.string().startsWith("sha512-").describe("npm integrity of the Cline tarball"),
        package: z.string().min(1).describe("flake package of the built Cline core"),
      })
      .strict(),
    runner: z
      .object({
        package: z.string().min(1).describe("flake package of the runner"),
        app: z.string().min(1).describe("flake app that runs `flakegym rollout`"),
      })
      .strict(),
    // An enum-keyed record: zod requires every profile id, so a profile the flake lacks fails here.
    profiles: z.record(ProfileId, FlakeProfileFacts).describe("profile id -> facts (every profile)"),
    snapshots: z
      .record(z.string().min(1), FlakeSnapshotFacts)
      .describe("catalog task id -> snapshot image facts"),
  })
  .strict();
export type FlakeFacts = z.infer<typeof FlakeFacts>;

/** What reading the facts gave: the facts, or why there are none (not an error: Nix is optional). */
export type FlakeFactsResult =
  | {
      readonly kind: "facts";
      readonly facts: FlakeFacts;
      readonly flakeRef: string;
      readonly attribute: string;
    }
  | { readonly kind: "nix-missing"; readonly reason: string }
  | { readonly kind: "no-flake"; readonly reason: string };

export interface ReadFlakeFactsOptions {
  /** Flake reference; default `$FLAKEGYM_FLAKE`, else the checkout holding this module's flake.nix. */
  readonly flakeRef?: string;
  /** Nix system to read; default the one this process runs on. */
  readonly system?: string;
  /** The `nix` binary; default `nix` on PATH. */
  readonly nixBin?: string;
  /** Extra arguments for `nix eval` (e.g. `--override-input nixpkgs path:...`). */
  readonly extraArgs?: readonly string[];
  readonly env?: NodeJS.ProcessEnv;
  readonly signal?: AbortSignal;
  /** Deadline for the evaluation (images are evaluated for their tags); default 5 minutes. */
  readonly timeoutMs?: number;
}

const NIX_SYSTEMS: Readonly<Record<string, string>> = {
  "linux/x64": "x86_64-linux",
  "linux/arm64": "aarch64-linux",
  "darwin/x64": "x86_64-darwin",
  "darwin/arm64": "aarch64-darwin",
};

/** The Nix system name for a Node platform/arch pair, or undefined when Nix has none. */
export function nixSystem(
  platform: string = process.platform,
  arch: string = process.arch,
): string | undefined {
  return NIX_SYSTEMS[`${platform}/${arch}`];
}

/** The flake attribute holding the facts for one system. */
export function flakeFactsAttribute(system: string): string {
  return `lib.flakegym.${system}`;
}

/** Finds the checkout's flake: the nearest directory above this module holding flake.nix. */
export function findFlakeDir(start: string = dirname(fileURLToPath(import.meta.url))): string | undefined {
  let dir = resolve(start);
  for (;;) {
    if (existsSync(join(dir, "flake.nix"))) return dir;
    const parent = dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}

/** Parses the JSON `nix eval` printed for `attribute`; throws naming the field that is wrong. */
export function parseFlakeFacts(json: unknown, attribute: string): FlakeFacts {
  const r = FlakeFacts.safeParse(json);
  if (!r.success) {
    const issue = r.error.issues[0]!;
    const field = issue.path.map(String).join(".") || "(root)";
    throw new FlakegymError(
      "E_NIX_FACTS",
      `flake attribute ${attribute}: field '${field}': ${issue.message}`,
      {
        hint: "the flake's nix/facts.nix and packages/runner/src/nix/flake-facts.ts disagree; update them together",
      },
    );
  }
  return r.data;
}

/**
 * Evaluates `lib.flakegym.<system>` of the flake with `nix eval --json` and parses it. When `nix`
 * is not installed, or there is no flake to read, returns that as a result instead of throwing.
 * Throws FlakegymError E_NIX_EVAL (naming the attribute and nix's error) when evaluation fails,
 * E_NIX_TIMEOUT past the deadline, E_NIX_FACTS when the answer does not match the schema.
 */
export async function readFlakeFacts(options: ReadFlakeFactsOptions = {}): Promise<FlakeFactsResult> {
  const env = options.env ?? process.env;
  const system = options.system ?? nixSystem();
  if (system === undefined) {
    return { kind: "no-flake", reason: `no Nix system for ${process.platform}/${process.arch}` };
  }
  let flakeRef = options.flakeRef ?? env["FLAKEGYM_FLAKE"];
  if (flakeRef === undefined) {
    const dir = findFlakeDir();
    if (dir === undefined) {
      return {
        kind: "no-flake",
        reason: "no flake.nix above the runner's sources and FLAKEGYM_FLAKE is not set",
      };
    }
    flakeRef = dir;
  }
  const attribute = flakeFactsAttribute(system);
  const installable = `${flakeRef}#${attribute}`;
  const nixBin = options.nixBin ?? runningNixBin(env);
  const timeoutMs = options.timeoutMs ?? 300_000;

  const r = await execa(
    nixBin,
    [
      "--extra-experimental-features",
      "nix-command flakes",
      "eval",
      "--json",
      ...(options.extraArgs ?? []),
      installable,
    ],
    {
      env,
      extendEnv: options.env === undefined,
      reject: false,
      stdin: "ignore",
      timeout: timeoutMs,
      ...(options.signal ? { cancelSignal: options.signal } : {}),
    },
  );

  if ((r.cause as NodeJS.ErrnoException | undefined)?.code === "ENOENT" || r.exitCode === 127) {
    return { kind: "nix-missing", reason: `'${nixBin}' is not installed (not found on PATH)` };
  }
  if (r.isCanceled) {
    throw options.signal?.reason ?? new FlakegymError("E_ABORTED", `nix eval ${installable} was cancelled`);
  }
  if (r.timedOut) {
    throw new FlakegymError(
      "E_NIX_TIMEOUT",
      `nix eval ${installable} did not finish within ${timeoutMs} ms`,
      {
        hint: "the first evaluation of nixpkgs can be slow; raise the deadline or run it once by hand",
      },
    );
  }
  if (r.exitCode !== 0) {
    const stderr = r.stderr.trim();
    const missingAttr = /does not provide attribute|attribute '[^']*' missing/.test(stderr);
    throw new FlakegymError(
      "E_NIX_EVAL",
      `nix eval of flake attribute ${attribute} (${installable}) failed with exit ${r.exitCode}: ${lastLines(stderr, 12)}`,
      {
        hint: missingAttr
          ? `the flake has no ${attribute}: is ${system} one of its systems, and is ${flakeRef} flakegym's flake?`
          : "run the same `nix eval` by hand to see the full trace (add --show-trace)",
      },
    );
  }

  let json: unknown;
  try {
    json = JSON.parse(r.stdout);
  } catch (cause) {
    throw new FlakegymError(
      "E_NIX_FACTS",
      `nix eval ${installable} printed no JSON: ${lastLines(r.stdout, 3)}`,
      {
        cause,
      },
    );
  }
  return { kind: "facts", facts: parseFlakeFacts(json, attribute), flakeRef, attribute };
}

function lastLines(text: string, n: number): string {
  const lines = text.split("\n").filter((l) => l.trim() !== "");
  return lines.slice(-n).join("\n") || "(no output)";
}
