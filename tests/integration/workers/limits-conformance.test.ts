/**
 * One table of limits, run against every backend: each row starts a fresh worker with small
 * limits on a fresh fork (overlay, 64 MiB tmpfs upper = the disk limit), runs one abusive command
 * with `exec` (no Cline: the limits are the worker's), and expects the abuse contained, the
 * exec result to name the limit that stopped it, and nothing left (mounts, worker dirs) once the
 * worker stopped. One line is printed per row and backend.
 */
import { existsSync } from "node:fs";
import { mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import {
  createLocalBackend,
  createNomadBackend,
  createNomadClient,
  createPodmanBackend,
  forkTree,
  hostToolchainPodmanOptions,
  type ResourceLimits,
  type WorkerBackend,
  type WorkerLimit,
} from "@flakegym/runner";
import { makeTempDir, type NomadDouble, startNomadDouble, type TempDir } from "@flakegym/test-utils";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

interface Row {
  readonly limit: WorkerLimit;
  readonly what: string;
  readonly abuse: string;
  readonly limits?: Partial<ResourceLimits>;
  /** The exec's own timeout (default: the worker's wall clock). */
  readonly execTimeoutMs?: number;
}

const BASE = { memoryMb: 256, pids: 64, cpuSeconds: 30, diskMb: 64, wallClockMs: 90_000 } as const;

const ROWS: readonly Row[] = [
  {
    limit: "memory",
    what: "allocates 1 GiB against 256 MiB",
    abuse: 'python3 -c "b = bytearray(1 << 30); print(len(b))"',
  },
  {
    limit: "pids",
    what: "starts 200 processes against 64",
    abuse: "for i in $(seq 200); do sleep 3 & done; wait",
  },
  {
    limit: "cpu_time",
    what: "spins past 2 s of CPU",
    abuse: "while :; do :; done",
    limits: { cpuSeconds: 2 },
  },
  {
    limit: "disk",
    what: "writes 200 MiB into the workspace against 64 MiB",
    abuse: "dd if=/dev/zero of=big bs=1M count=200",
  },
  {
    limit: "disk",
    what: "writes 200 MiB into /tmp against the worker's 32 MiB state",
    abuse: "dd if=/dev/zero of=/tmp/big bs=1M count=200",
  },
  {
    limit: "disk",
    what: "writes 200 MiB into HOME against the worker's 32 MiB state",
    abuse: 'dd if=/dev/zero of="$HOME/big" bs=1M count=200',
  },
  {
    limit: "wall_clock",
    what: "sleeps past a 3 s wall clock",
    abuse: "sleep 60",
    limits: { wallClockMs: 3000 },
    execTimeoutMs: 3000,
  },
];

/** The size of the worker's own state (HOME, /tmp, config) in every backend here. */
const STATE_MB = 32;

interface Target {
  readonly name: string;
  /** Why this backend cannot run here, or "" */
  readonly unavailable: string;
  /** Why this backend cannot show this limit, or "" */
  readonly cannot: (row: Row) => string;
  backend(): WorkerBackend;
}

const root = process.getuid?.() === 0;
const bwrap = existsSync("/usr/bin/bwrap");
const podman = existsSync("/usr/bin/podman") && existsSync("/usr/sbin/runc");
let tmp: TempDir;
let double: NomadDouble | undefined;

const TARGETS: readonly Target[] = [
  {
    name: "local",
    unavailable: !bwrap ? "bubblewrap missing" : "",
    cannot: () => "",
    backend: () =>
      createLocalBackend({
        stateDir: join(tmp.path, "local"),
        stateSizeMb: STATE_MB,
        watchdogIntervalMs: 250,
      }),
  },
  {
    name: "podman",
    unavailable: !podman ? "podman or runc missing (apt-get install podman runc)" : "",
    cannot: () => "",
    backend: () =>
      createPodmanBackend({
        ...hostToolchainPodmanOptions(),
        stateDir: join(tmp.path, "podman"),
        tmpSizeMb: STATE_MB,
        watchdogIntervalMs: 250,
      }),
  },
  {
    name: "nomad double",
    unavailable: "",
    // The double runs each task as a plain host process in a copy of the workspace: it emulates
    // Nomad's API and max_run_duration, not the client's cgroups or ephemeral-disk quota.
    cannot: (row) =>
      row.limit === "wall_clock"
        ? ""
        : `the Nomad double runs tasks as plain host processes; ${row.limit} is enforced by a real Nomad client (cgroups, ephemeral_disk), which this machine does not have`,
    backend: () =>
      createNomadBackend(
        { driver: { driver: "raw_exec", command: "/bin/sh", allowUnisolated: true }, pollMs: 1_000 },
        { client: createNomadClient({ address: double!.url }) },
      ),
  },
];

const needsRoot = root ? "" : "not root: forks are not overlays with a tmpfs quota";
for (const t of TARGETS) {
  const why = needsRoot || t.unavailable;
  if (why) console.warn(`limits conformance on ${t.name} skipped: ${why}`);
}

beforeAll(async () => {
  tmp = await makeTempDir("flakegym-limits-");
  double = await startNomadDouble();
});
afterAll(async () => {
  await double?.close();
  await tmp?.cleanup();
});

let seq = 0;
async function runRow(t: Target, row: Row) {
  const n = ++seq;
  const lower = join(tmp.path, `snap-${n}`);
  await mkdir(join(lower, "workspace"), { recursive: true });
  await writeFile(join(lower, "workspace", "f.txt"), "file\n");
  const limits = { ...BASE, ...row.limits };
  const fork = await forkTree(lower, { dest: join(tmp.path, `fork-${n}`), quotaMb: limits.diskMb });
  const worker = await t.backend().start({
    runId: "limits",
    taskId: "conformance",
    trajectoryId: `${t.name.replace(/\W/g, "-")}-${row.limit}-${n}`,
    profile: "c",
    workspace: join(fork.tree, "workspace"),
    gateway: {},
    limits,
    agent: false,
  });
  try {
    const r = await worker.exec(row.abuse, row.execTimeoutMs ? { timeoutMs: row.execTimeoutMs } : {});
    const big = await readFile(join(fork.tree, "workspace", "big")).catch(() => Buffer.alloc(0));
    return { r, workspaceBytes: big.length, quota: fork.quota };
  } finally {
    await worker.stop();
    await fork.release();
  }
}

/** What a stopped worker and a released fork left: mounts under the test dir, worker dirs. */
async function leftBehind(t: Target): Promise<string[]> {
  const mounts = (await readFile("/proc/self/mountinfo", "utf8"))
    .split("\n")
    .map((l) => l.split(" ")[4] ?? "")
    .filter((m) => m.startsWith(`${tmp.path}/`));
  const state = join(tmp.path, t.name === "local" ? "local" : "podman");
  const dirs = t.name === "nomad double" ? [] : await readdir(state).catch(() => [] as string[]);
  return [...mounts, ...dirs.filter((d) => d !== "containers.conf").map((d) => join(state, d))];
}

describe.each(TARGETS)("limits conformance: $name", (t) => {
  for (const row of ROWS) {
    const skip = needsRoot || t.unavailable || t.cannot(row);
    it.skipIf(skip !== "")(`${row.limit}: ${row.what}${skip ? ` (skipped: ${skip})` : ""}`, async () => {
      const { r, workspaceBytes, quota } = await runRow(t, row);
      console.log(
        `[${t.name}] ${row.limit.padEnd(10)} ${row.what} → exit ${r.exitCode}, limit ${r.limit ?? "none"}, ${r.durationMs} ms`,
      );
      expect(quota).toBe("tmpfs");
      expect(r.exitCode, r.stderr).not.toBe(0);
      expect(r.limit, `stdout: ${r.stdout.slice(-300)}\nstderr: ${r.stderr.slice(-300)}`).toBe(row.limit);
      // contained: nothing past the disk limit reached the workspace
      expect(workspaceBytes).toBeLessThanOrEqual(BASE.diskMb * 1024 * 1024);
      // and nothing is left once the worker stopped and the fork was released
      expect(await leftBehind(t)).toEqual([]);
    });
  }
});
