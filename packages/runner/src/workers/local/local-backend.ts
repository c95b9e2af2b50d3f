import { mkdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execa } from "execa";
import { FlakegymError } from "../../errors.js";
import type { PoolableBackend } from "../pool/types.js";
import type { BackendCapabilities } from "../types.js";
import type { AgentLauncher } from "./agent.js";
import { probeCgroups } from "./cgroup.js";
import { clineAgentLauncher } from "./cline-agent.js";
import { openWorker } from "./open-worker.js";
import { probeMountPropagation } from "./pool-slot.js";
import { findBwrap } from "./shape.js";
import type { LocalBackendState } from "./worker-state.js";

export interface LocalBackendOptions {
  /** Parent of per-worker state dirs (home, config, sockets). Default `<tmpdir>/flakegym-workers`. */
  readonly stateDir?: string;
  /** Run without bubblewrap when it is missing (explicit user choice: no isolation at all). */
  readonly unsafeNoSandbox?: boolean;
  /** Starts Cline inside the sandbox for `agent: true` workers. Default: {@link clineAgentLauncher}. */
  readonly agent?: AgentLauncher;
  /** How often CPU time, memory and disk use are checked, ms (default 1000). */
  readonly watchdogIntervalMs?: number;
  /** Size of the worker's own state (HOME, /tmp, Cline config, sockets: one tmpfs), MiB. Default 512. */
  readonly stateSizeMb?: number;
  /** Why a worker cannot be reset (printed by the caller; the worker then serves one trajectory). */
  readonly onNote?: (message: string) => void;
}

/** The sandbox, cgroups and state dir, as `flakegym doctor` and run.json describe them. */
async function describe(bs: LocalBackendState): Promise<Record<string, string>> {
  const bwrap = findBwrap();
  const version = bwrap
    ? (await execa(bwrap, ["--version"], { reject: false, timeout: 5000 })).stdout.trim()
    : "missing";
  return {
    sandbox: bwrap
      ? `bubblewrap (${version})`
      : bs.options.unsafeNoSandbox
        ? "NONE (--unsafe-no-sandbox)"
        : "missing",
    cgroups: await probeCgroups(),
    stateDir: bs.root,
  };
}

/** Why pooled workers cannot adopt a workspace here (probed once), or undefined when they can. */
function poolUnavailable(bs: LocalBackendState): Promise<string | undefined> {
  bs.poolProbe ??= (async () => {
    if (bs.options.unsafeNoSandbox || !findBwrap())
      return "no bubblewrap sandbox (a pooled worker adopts its workspace through the sandbox's mounts)";
    await mkdir(bs.root, { recursive: true });
    return await probeMountPropagation(bs.root);
  })();
  return bs.poolProbe;
}

/**
 * The embedded default backend: one bubblewrap sandbox per worker on this machine. A module of
 * named functions over explicit state (worker-state.ts): open-worker.ts makes and assigns a
 * worker, watchdog.ts and exec.ts run it, pool-slot.ts mounts a pooled worker's fork, and
 * decisions.ts holds the pure decisions.
 */
/** The local bubblewrap backend's capabilities: sandboxes on this host, bound from its work trees. */
export const LOCAL_CAPABILITIES: BackendCapabilities = {
  bindsHiddenReadOnly: true,
  hostHasSnapshotTree: true,
  needsRoutableGateway: false,
  runsHostImages: false,
  usesOneByteCore: true,
  hostForks: true,
};

export function createLocalBackend(options: LocalBackendOptions = {}): PoolableBackend {
  const bs: LocalBackendState = {
    options,
    root: options.stateDir ?? join(tmpdir(), "flakegym-workers"),
    agentLauncher: options.agent ?? clineAgentLauncher(),
    poolProbe: undefined,
  };
  return {
    kind: "local",
    capabilities: LOCAL_CAPABILITIES,
    describe: () => describe(bs),
    async start(spec, signal) {
      const w = await openWorker(bs, spec, signal, false);
      return await w.assign(spec);
    },
    poolUnavailable: () => poolUnavailable(bs),
    async boot(template, signal) {
      const reason = await poolUnavailable(bs);
      if (reason) throw new FlakegymError("E_POOL_UNAVAILABLE", `cannot pre-boot a worker: ${reason}`);
      const w = await openWorker(bs, template, signal, true);
      return { id: w.id, exited: w.exited, adopt: (spec) => w.assign(spec), reset: w.reset, stop: w.stop };
    },
  };
}
