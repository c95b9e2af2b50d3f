import { createServer } from "node:net";
import { dirname, join } from "node:path";
import {
  type LaunchCommand,
  launchClineCore,
  probeMappedCore,
  probeOneByteCore,
  resolveClinePackage,
  SUPERVISOR_PATH,
} from "@flakegym/cline-vendor";
import { flakegymCacheRoot } from "../../cache-root.mjs";
import { FlakegymError } from "../../errors.js";
import { unixSocketPath } from "../socket-path.js";
import type { AgentLaunchContext, AgentLauncher, RunningAgent } from "./agent.js";
import { AGENT_IDS, agentApartOf, closeCoreDirs, ownedByAgentUser } from "./agent-apart.js";
import { mayRunApart } from "./bwrap-args.js";
import { twoUserRunner } from "./exec.js";
import { wrapCommand } from "./sandbox.js";
import { sealedCopy } from "./sealed-binary.js";
import { SANDBOX_GATEWAY_PORT, SANDBOX_GATEWAY_SOCKET, SANDBOX_PATHS } from "./shape.js";
import { prepareMountPoints } from "./system-root.js";

export interface ClineAgentOptions {
  /** Bound on spawn → core answering gRPC. Default 90 s (4 cores starting at once on 2 CPUs take ~5 s each). */
  readonly startTimeoutMs?: number;
  /** The core's bundle as a one-byte string (docs/design/cline.md). Default: on when built, unless FLAKEGYM_CORE_ONE_BYTE=0. */
  readonly oneByte?: boolean;
  /** The bundle's source mapped from a file, and free pages given back (mapped-core.ts). Default: on when built, unless FLAKEGYM_CORE_MAPPED_SOURCE=0. */
  readonly mappedCore?: boolean;
}

async function freeLoopbackPort(): Promise<number> {
  return await new Promise((resolve, reject) => {
    const srv = createServer();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

/**
 * Starts cline-host + cline-core (cline-vendor's supervisor) inside the worker's bubblewrap
 * sandbox. Read-only binds: the supervisor script and the pinned cline package (at their host
 * paths, which the launcher passes as arguments); the config dir and the core's socket dir are
 * bound writable at their host paths (the runner reads artifacts and connects there). The
 * workspace is `/workspace` and HOME `/sandbox-home` inside, so prompts do not depend on host paths.
 * The policy is reached through the gateway's unix socket, bound in and forwarded by the
 * supervisor to 127.0.0.1:18080 inside the sandbox's own network namespace. The core runs the
 * one-byte bundle from flakegym's cache where it is built (its directory bound read-only too).
 */
/**
 * The wrap that runs the core's supervisor in the agent's sandbox: the launcher speaks host paths;
 * inside, the workspace is /workspace and HOME /sandbox-home, and node and cline-host are their
 * sealed copies (execute-only: non-dumpable, their heaps closed to the agent), bound at their paths.
 */
async function sandboxWrap(a: {
  readonly spec: AgentLaunchContext["spec"];
  readonly prepared: AgentLaunchContext["prepared"];
  readonly bwrap: NonNullable<AgentLaunchContext["prepared"]["shape"]["bwrap"]>;
  readonly apart: ReturnType<typeof agentApartOf>;
  readonly pkg: ReturnType<typeof resolveClinePackage>;
  readonly oneByte: ReturnType<typeof probeOneByteCore>;
  readonly mappedCore: ReturnType<typeof probeMappedCore>;
}): Promise<(cmd: LaunchCommand) => LaunchCommand> {
  const { spec, prepared, bwrap, apart, pkg, oneByte, mappedCore } = a;
  // the kept processes run from execute-only copies: non-dumpable, their heaps closed to the agent
  const cache = flakegymCacheRoot(process.env);
  const sealedNode = await sealedCopy(cache, process.execPath);
  const sealedHost = await sealedCopy(cache, pkg.hostBinary);
  const shape = {
    ...prepared.shape,
    bwrap: {
      ...bwrap,
      ...(apart ? { apart } : {}),
      binds: [
        ...bwrap.binds,
        { src: dirname(SUPERVISOR_PATH), dest: dirname(SUPERVISOR_PATH) },
        { src: pkg.root, dest: pkg.root },
        ...(oneByte.on ? [{ src: oneByte.dir, dest: oneByte.dir }] : []),
        // read-only: the core maps its bundle's source from this directory's file
        ...(mappedCore.on ? [{ src: mappedCore.dir, dest: mappedCore.dir }] : []),
        ...[sealedNode, sealedHost].map((f) => ({ src: dirname(f), dest: dirname(f) })),
      ],
    },
  };
  const root = shape.bwrap.systemRoot;
  if (root) await prepareMountPoints(root, shape.bwrap.binds);
  const wrap = (cmd: LaunchCommand): LaunchCommand => {
    // The launcher speaks host paths; inside, the workspace is /workspace and HOME /sandbox-home,
    // and node and cline-host are their sealed copies (bound at their host paths).
    const sealed = new Map([
      [spec.workspace, SANDBOX_PATHS.workspace],
      [process.execPath, sealedNode],
      [pkg.hostBinary, sealedHost],
    ]);
    const inside = (p: string) => sealed.get(p) ?? p;
    const args = cmd.args.map(inside);
    const command = inside(cmd.command);
    const env = { ...cmd.env, ...prepared.env, HOME: SANDBOX_PATHS.home };
    const line = wrapCommand({ ...shape, bwrap: { ...shape.bwrap, env } }, [command, ...args]);
    return { command: line.command, args: [...line.args], env: { ...line.env } };
  };
  return wrap;
}

export function clineAgentLauncher(options: ClineAgentOptions = {}): AgentLauncher {
  return {
    async launch(ctx) {
      const { spec, prepared } = ctx;
      const socket = spec.gateway.socketPath;
      if (!socket) {
        throw new FlakegymError(
          "E_WORKER_SPEC",
          "a local agent worker needs the policy gateway's unix socket (gateway.socketPath)",
          {
            hint: "start the gateway with a unix socket listener and pass its path; local sandboxes have no network to reach a URL",
          },
        );
      }
      const pkg = resolveClinePackage();
      const oneByte = probeOneByteCore(pkg, flakegymCacheRoot(process.env), options.oneByte);
      const mappedCore = probeMappedCore(oneByte, flakegymCacheRoot(process.env), options.mappedCore);
      const bwrap = prepared.shape.bwrap;
      const home = prepared.homeDir ?? join(ctx.configDir, "..", "home");
      const coreSocket = unixSocketPath(ctx.socketDir, "core.sock");
      let forward: string;
      let wrap: ((cmd: LaunchCommand) => LaunchCommand) | undefined;
      // two users (agent-apart.ts): the core and its helpers out of the agent's commands' reach,
      // where the shape allows it (bwrap-args.ts mayRunApart)
      const apart = bwrap && mayRunApart(bwrap) ? agentApartOf(twoUserRunner({}), process.env) : undefined;
      if (apart) await closeCoreDirs([ctx.configDir, ctx.socketDir]);
      // a Harbor container's agent.user: the agent's commands run as it (the core stays root)
      const containerUser = bwrap?.container ? spec.agentUser : undefined;
      if (containerUser) await ownedByAgentUser([spec.workspace, home], containerUser);
      if (bwrap) {
        forward = `127.0.0.1:${SANDBOX_GATEWAY_PORT}=unix:${SANDBOX_GATEWAY_SOCKET}`;
        wrap = await sandboxWrap({ spec, prepared, bwrap, apart, pkg, oneByte, mappedCore });
      } else {
        // --unsafe-no-sandbox: no network namespace, so the forwarder needs a free host port.
        forward = `127.0.0.1:${await freeLoopbackPort()}=unix:${socket}`;
      }
      const core = await launchClineCore({
        workspace: spec.workspace,
        configDir: ctx.configDir,
        home,
        ...(spec.env ? { env: spec.env } : {}),
        ...(ctx.signal ? { signal: ctx.signal } : {}),
        startTimeoutMs: options.startTimeoutMs ?? 90_000,
        listen: { kind: "unix", path: coreSocket },
        supervisorArgs: ["--forward", forward],
        oneByte,
        // the bundle's source mapped from a file (shared page cache), free pages given back at a collection
        mappedCore,
        // a reused worker's reset asks the core for a full GC (reset-worker.ts)
        gcOnSignal: true,
        // the core's `which` and documents-dir probes answered without forking it (core-probes.ts)
        answerProbes: true,
        ...(apart ? { agentUser: AGENT_IDS } : containerUser ? { agentUser: containerUser } : {}),
        ...(wrap ? { wrap } : {}),
      });
      const policyBaseUrl = bwrap
        ? ctx.policyBaseUrl
        : `http://${forward.split("=")[0]}${new URL(ctx.policyBaseUrl).pathname}`;
      const agent: RunningAgent = {
        address: core.address,
        policyBaseUrl,
        pid: core.pid,
        users: apart ? "apart" : "one",
        exited: core.exited.then((r) => ({
          code: r.code,
          ...(r.signal ? { detail: `signal ${r.signal}` } : {}),
        })),
        heartbeatAgeMs: () => core.heartbeatAgeMs(),
        stop: () => core.stop(),
      };
      return agent;
    },
  };
}
