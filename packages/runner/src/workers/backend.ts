import { createNomadClient, nomadConfigFromEnv } from "@flakegym/nomad-jobs";
import { match } from "ts-pattern";
import { z } from "zod";
import { UsageError } from "../errors.js";
import { zodIssueLines } from "../text/zod-issues.js";
import { createLocalBackend, LOCAL_CAPABILITIES } from "./local/local-backend.js";
import { createNomadBackend, NOMAD_CAPABILITIES } from "./nomad/backend.js";
import { formatProgress } from "./nomad/progress.js";
import { rawExecClineDriver } from "./nomad/raw-exec-cline.js";
import {
  createPodmanBackend,
  flakeImagePodmanOptions,
  hostToolchainPodmanOptions,
  PODMAN_CAPABILITIES,
} from "./podman/podman-backend.js";
import type { BackendCapabilities, BackendKind, WorkerBackend } from "./types.js";

/**
 * One backend config, one constructor: `BackendConfig` names a backend and carries that
 * backend's own fields; {@link createBackend} makes it. Callers decide on the backend's declared
 * {@link BackendCapabilities}, never on its name.
 */

const Images = z
  .enum(["host", "nix"])
  .describe("host: this machine's /usr; nix: the flake's snapshot images");

export const BackendConfig = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("local") }).strict(),
  z.object({ kind: z.literal("podman"), images: Images }).strict(),
  z
    .object({
      kind: z.literal("nomad"),
      images: Images,
      /** host:port of this machine the Nomad clients reach the policy gateway at (never loopback). */
      gatewayAdvertise: z.string().min(1),
      /** raw_exec: this machine's pinned Cline (no isolation); docker/podman: the task's image by digest. */
      driver: z.enum(["raw_exec", "docker", "podman"]),
      pollMs: z.number().int().positive().default(5_000),
    })
    .strict(),
]);
export type BackendConfig = z.infer<typeof BackendConfig>;
export type BackendConfigInput = z.input<typeof BackendConfig>;

/** `input` as a BackendConfig, or a UsageError naming each wrong field (`gatewayAdvertise: …`). Pure. */
export function parseBackendConfig(input: unknown): BackendConfig {
  const r = BackendConfig.safeParse(input);
  if (r.success) return r.data;
  throw new UsageError(
    `invalid backend config: ${zodIssueLines(r.error).join("; ")}`,
    'give kind "local", "podman" (with images) or "nomad" (with images, gatewayAdvertise and driver), each with only its own fields',
  );
}

/** The capabilities each backend declares, by name: for decisions made before a backend exists (flags). Pure. */
export function capabilitiesOf(kind: BackendKind): BackendCapabilities {
  return match(kind)
    .with("local", () => LOCAL_CAPABILITIES)
    .with("podman", () => PODMAN_CAPABILITIES)
    .with("nomad", () => NOMAD_CAPABILITIES)
    .exhaustive();
}

/** What a backend's creation reads from its surroundings (the Nomad client's environment, progress). */
export interface BackendEnv {
  /** NOMAD_ADDR, NOMAD_TOKEN, … for the Nomad client. */
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly onNote?: (line: string) => void;
}

/** A backend the caller must close when done (Nomad purges its jobs). */
export type ClosableBackend = WorkerBackend & { close?(): Promise<void> };

/** The backend `config` names (validated first; see {@link parseBackendConfig}). */
export function createBackend(config: BackendConfigInput, surroundings?: BackendEnv): ClosableBackend {
  const c = parseBackendConfig(config);
  return match(c)
    .with({ kind: "local" }, () => createLocalBackend())
    .with({ kind: "podman" }, (p) =>
      createPodmanBackend(p.images === "nix" ? flakeImagePodmanOptions() : hostToolchainPodmanOptions()),
    )
    .with({ kind: "nomad" }, (n) => createNomadFromConfig(n, surroundings))
    .exhaustive();
}

/**
 * What a caller names a backend by: one it made already (a test's double, the scale bench's
 * simulated cluster), or a {@link BackendConfig}. Every command and the API take this one shape.
 */
export type BackendChoice = WorkerBackend | BackendConfigInput;

/** Whether `choice` is a backend already made (it can start workers), not a config. Pure. */
export function isMadeBackend(choice: BackendChoice): choice is WorkerBackend {
  return typeof (choice as { start?: unknown }).start === "function";
}

/**
 * The one backend selection: the caller's own backend as it is (`owned` false: the caller closes
 * it), else the backend `choice` configures, else the local one (`owned` true: whoever resolved
 * it closes it when done — a Nomad backend purges its jobs then).
 */
export function resolveBackend(
  choice: BackendChoice | undefined,
  surroundings?: BackendEnv,
): { backend: ClosableBackend; owned: boolean } {
  if (choice !== undefined && isMadeBackend(choice)) return { backend: choice, owned: false };
  return { backend: createBackend(choice ?? { kind: "local" }, surroundings), owned: true };
}

function createNomadFromConfig(
  n: Extract<BackendConfig, { kind: "nomad" }>,
  surroundings: BackendEnv | undefined,
): ClosableBackend {
  const onNote = surroundings?.onNote;
  return createNomadBackend(
    {
      driver:
        n.driver === "raw_exec"
          ? { ...rawExecClineDriver(), allowUnisolated: true }
          : { driver: n.driver, allowMutableTag: false, args: [] },
      gatewayAdvertise: n.gatewayAdvertise,
      pollMs: n.pollMs,
    },
    {
      client: createNomadClient(nomadConfigFromEnv(surroundings?.env ?? {})),
      ...(onNote ? { onProgress: (p) => onNote(formatProgress(p)) } : {}),
    },
  );
}
