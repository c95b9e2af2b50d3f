import { spawn } from "node:child_process";
import { closeSync, openSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import {
  createServer as createHttp2Server,
  type Http2Server,
  type IncomingHttpHeaders,
  type ServerHttp2Stream,
} from "node:http2";
import type { Socket } from "node:net";
import { join } from "node:path";

/**
 * How the Nomad double "runs" a task. There is no container engine here, so a task is one of:
 * a real host process (raw_exec semantics, also used for container tasks that name a command),
 * a gRPC-speaking HTTP/2 listener on the allocated ports (a container whose image entrypoint
 * serves the core's port), a scripted exit, a driver failure, or a task that runs and does nothing.
 */
export type TaskBehavior =
  | { readonly kind: "exec"; readonly argv: readonly string[] }
  | {
      readonly kind: "listen";
      /**
       * Serves each HTTP/2 stream of the task's ports (default: gRPC UNIMPLEMENTED): an in-process
       * stand-in for what the image would run (e.g. the scale bench's simulated worker).
       */
      readonly onStream?: (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => void;
      /** Called once as the task is killed. */
      readonly onKill?: () => void;
    }
  | {
      readonly kind: "exit";
      readonly exitCode: number;
      readonly stdout?: string;
      readonly stderr?: string;
      readonly afterMs?: number;
    }
  | { readonly kind: "driver-failure"; readonly message: string }
  | { readonly kind: "hang" };

export interface AllocatedPort {
  readonly Label: string;
  readonly Value: number;
  readonly To: number;
  readonly HostIP: string;
}

export interface TaskRunContext {
  readonly allocId: string;
  readonly jobId: string;
  readonly taskName: string;
  readonly driver: string;
  readonly config: Readonly<Record<string, unknown>>;
  /** The task's environment after interpolation (NOMAD_* included). */
  readonly env: Readonly<Record<string, string>>;
  readonly meta: Readonly<Record<string, string>>;
  readonly ports: readonly AllocatedPort[];
  readonly taskDir: string;
  readonly logDir: string;
}

export interface TaskCallbacks {
  started(): void;
  exited(exitCode: number, signal: number): void;
  driverFailure(message: string): void;
}

export interface TaskHandle {
  /** Sends `signal`, then SIGKILL after `graceMs`; resolves when the task is gone. */
  kill(signal: NodeJS.Signals, graceMs: number): Promise<void>;
  /** Sends `signal` to the task's main process (the alloc signal API); false when it cannot. */
  signal?(signal: NodeJS.Signals): boolean;
  /** Resident memory of the task's processes (its main process and descendants), MB. */
  rssMb?(): number;
  readonly alive: () => boolean;
}

/** Nomad's interpolation of `${NAME}` in env values and driver config strings; unknown names stay. */
export function interpolate(s: string, env: Readonly<Record<string, string>>): string {
  return s.replace(/\$\{([A-Za-z0-9_.-]+)\}/g, (whole, name: string) => env[name] ?? whole);
}

export function interpolateDeep(v: unknown, env: Readonly<Record<string, string>>): unknown {
  if (typeof v === "string") return interpolate(v, env);
  if (Array.isArray(v)) return v.map((x) => interpolateDeep(x, env));
  if (v && typeof v === "object")
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, interpolateDeep(x, env)]));
  return v;
}

const SIGNALS: Partial<Record<NodeJS.Signals, number>> = { SIGHUP: 1, SIGINT: 2, SIGKILL: 9, SIGTERM: 15 };

/** The argv a driver would run, or undefined when the image's own entrypoint runs. */
/** What the client's container runtimes have: networks that exist, and whether layers take a size quota. */
export interface ContainerHost {
  /** User-defined networks (`docker network create` / `podman network create`). */
  readonly networks: ReadonlySet<string>;
  /** The storage driver enforces `storage_opt size` (docker: overlay2 on xfs with pquota, btrfs, zfs). */
  readonly storageQuota: boolean;
}

/** Built-in network modes each runtime knows without creating anything. */
const BUILTIN_NETWORKS: Readonly<Record<string, readonly string[]>> = {
  docker: ["host", "bridge", "none", "default"],
  podman: ["host", "bridge", "none", "private", "slirp4netns", "pasta"],
};

/**
 * How a container task's creation fails, as the runtime says it (undefined: it starts). Docker
 * answers a network that does not exist with 404 "network X not found" and a `storage_opt size`
 * its storage driver cannot enforce with "--storage-opt is supported only for overlay over xfs with
 * 'pquota' mount option" (moby daemon/graphdriver/overlay2); podman "unable to find network".
 */
export function containerCreateFailure(
  driver: string,
  config: Readonly<Record<string, unknown>>,
  host: ContainerHost,
): string | undefined {
  const builtin = BUILTIN_NETWORKS[driver];
  if (!builtin) return undefined;
  const mode = typeof config.network_mode === "string" ? config.network_mode : "";
  const shared = /^(container|ns|task):/.test(mode);
  if (mode !== "" && !shared && !builtin.includes(mode) && !host.networks.has(mode)) {
    return driver === "docker"
      ? `failed to create container: API error (404): network ${mode} not found`
      : `failed to start task: unable to find network with name or ID ${mode}: network not found`;
  }
  if (driver === "docker" && config.storage_opt !== undefined && !host.storageQuota) {
    return "failed to create container: API error (500): --storage-opt is supported only for overlay over xfs with 'pquota' mount option";
  }
  return undefined;
}

export function argvOf(driver: string, config: Readonly<Record<string, unknown>>): string[] | undefined {
  const strs = (v: unknown) => (Array.isArray(v) ? v.map(String) : typeof v === "string" ? [v] : []);
  const args = strs(config.args);
  if (driver === "raw_exec" || driver === "exec" || driver === "nix") {
    return typeof config.command === "string" ? [config.command, ...args] : undefined;
  }
  const argv = [...strs(config.entrypoint), ...strs(config.command), ...args];
  return argv.length > 0 ? argv : undefined;
}

export function startTask(ctx: TaskRunContext, behavior: TaskBehavior, cb: TaskCallbacks): TaskHandle {
  const stdoutFile = join(ctx.logDir, `${ctx.taskName}.stdout.0`);
  const stderrFile = join(ctx.logDir, `${ctx.taskName}.stderr.0`);
  writeFileSync(stdoutFile, "");
  writeFileSync(stderrFile, "");
  switch (behavior.kind) {
    case "exec":
      return startProcess(ctx, behavior.argv, stdoutFile, stderrFile, cb);
    case "listen":
      return startListeners(ctx, cb, behavior);
    case "exit": {
      let alive = true;
      setImmediate(() => {
        writeFileSync(stdoutFile, behavior.stdout ?? "");
        writeFileSync(stderrFile, behavior.stderr ?? "");
        cb.started();
        setTimeout(() => {
          if (!alive) return;
          alive = false;
          cb.exited(behavior.exitCode, 0);
        }, behavior.afterMs ?? 0);
      });
      return {
        alive: () => alive,
        async kill(signal) {
          if (!alive) return;
          alive = false;
          cb.exited(128 + (SIGNALS[signal] ?? 9), SIGNALS[signal] ?? 9);
        },
      };
    }
    case "driver-failure":
      setImmediate(() => cb.driverFailure(behavior.message));
      return { alive: () => false, async kill() {} };
    case "hang": {
      let alive = true;
      setImmediate(() => cb.started());
      return {
        alive: () => alive,
        async kill(signal) {
          if (!alive) return;
          alive = false;
          cb.exited(0, SIGNALS[signal] ?? 9);
        },
      };
    }
  }
}

function startProcess(
  ctx: TaskRunContext,
  argv: readonly string[],
  stdoutFile: string,
  stderrFile: string,
  cb: TaskCallbacks,
): TaskHandle {
  const out = openSync(stdoutFile, "a");
  const err = openSync(stderrFile, "a");
  let alive = false;
  let exited: (() => void) | undefined;
  const gone = new Promise<void>((r) => {
    exited = r;
  });
  const child = spawn(argv[0]!, argv.slice(1), {
    cwd: ctx.taskDir,
    env: { ...ctx.env },
    detached: true,
    stdio: ["ignore", out, err],
  });
  child.once("spawn", () => {
    alive = true;
    cb.started();
  });
  child.once("error", (e) => {
    closeSync(out);
    closeSync(err);
    exited?.();
    if (!alive) cb.driverFailure(`failed to launch command with executor: ${e.message}`);
  });
  child.once("exit", (code, sig) => {
    alive = false;
    closeSync(out);
    closeSync(err);
    exited?.();
    const signal = sig ? (SIGNALS[sig] ?? 9) : 0;
    cb.exited(code ?? 128 + signal, signal);
  });
  return {
    alive: () => alive,
    rssMb: () => (alive && child.pid !== undefined ? treeRssMb(child.pid) : 0),
    signal(signal) {
      if (!alive || child.pid === undefined) return false;
      try {
        return process.kill(child.pid, signal);
      } catch {
        return false;
      }
    },
    async kill(signal, graceMs) {
      if (!alive || child.pid === undefined) return;
      const pid = child.pid;
      const send = (s: NodeJS.Signals) => {
        try {
          process.kill(-pid, s);
        } catch {
          // already gone
        }
      };
      send(signal);
      const timer = setTimeout(() => send("SIGKILL"), graceMs);
      await gone;
      clearTimeout(timer);
      send("SIGKILL"); // stragglers of the group
    },
  };
}

/** VmRSS of `pid` and its descendants (through /proc/<pid>/task/<tid>/children), MB. */
export function treeRssMb(pid: number): number {
  let kb = 0;
  const seen = new Set<number>();
  const walk = (p: number) => {
    if (seen.has(p)) return;
    seen.add(p);
    try {
      const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${p}/status`, "utf8"));
      if (m) kb += Number(m[1]);
      for (const tid of readdirSync(`/proc/${p}/task`)) {
        const kids = readFileSync(`/proc/${p}/task/${tid}/children`, "utf8").trim();
        for (const k of kids ? kids.split(/\s+/) : []) walk(Number(k));
      }
    } catch {
      // gone meanwhile
    }
  };
  walk(pid);
  return kb / 1024;
}

/**
 * The default for a container task that runs its image's entrypoint: an HTTP/2 server on every
 * allocated port answering each call with gRPC status UNIMPLEMENTED — like a gRPC server (the
 * Cline core) with none of the services asked for.
 */
function startListeners(
  ctx: TaskRunContext,
  cb: TaskCallbacks,
  serve: Extract<TaskBehavior, { kind: "listen" }>,
): TaskHandle {
  const servers: Http2Server[] = [];
  const sockets = new Set<Socket>();
  let alive = true;
  let pending = ctx.ports.length;
  const ready = () => {
    if (--pending <= 0 && alive) cb.started();
  };
  if (pending === 0) setImmediate(() => cb.started());
  for (const p of ctx.ports) {
    const s = createHttp2Server();
    s.on("connection", (sock: Socket) => {
      sockets.add(sock);
      sock.on("close", () => sockets.delete(sock));
    });
    s.on("stream", (stream, headers) => {
      stream.on("error", () => {});
      if (serve.onStream) return serve.onStream(stream, headers);
      stream.respond(
        { ":status": 200, "content-type": "application/grpc", "grpc-status": "12" },
        { endStream: true },
      );
    });
    s.on("error", (e) => {
      if (!alive) return;
      alive = false;
      for (const x of servers) x.close();
      cb.driverFailure(`failed to bind ${p.HostIP}:${p.Value} for port "${p.Label}": ${e.message}`);
    });
    s.listen(p.Value, p.HostIP, ready);
    servers.push(s);
  }
  return {
    alive: () => alive,
    async kill(signal) {
      if (!alive) return;
      alive = false;
      serve.onKill?.();
      for (const sock of sockets) sock.destroy();
      await Promise.all(servers.map((s) => new Promise<void>((r) => s.close(() => r()))));
      cb.exited(128 + (SIGNALS[signal] ?? 9), SIGNALS[signal] ?? 9);
    },
  };
}
