/**
 * `npm run bench -- boot [flags]`: the Cline core's boot CPU and idle memory, per lever, side by
 * side with today's bare core in one run (issue 32).
 *
 * Each rep boots `--workers` cores at once per variant (variants alternate within a rep), then
 * lets them sit idle-ready for `--settle-ms` (the kernel's same-page merging works in the
 * background) and stops them.
 * - boot CPU per worker: user+system CPU seconds of the worker's processes (supervisor, cline-host,
 *   cline-core) from spawn to the core's first gRPC answer, read from /proc/<pid>/stat.
 * - PSS per worker: /proc/<pid>/smaps_rollup of the same processes once settled (idle-ready).
 * - ksmd CPU per worker: the merging daemon's CPU seconds during the variant's window, split over
 *   its workers: the price of the memory it saves.
 * - heap per worker: the core's own process.memoryUsage().heapUsed once settled (a preload,
 *   bench/boot/heap-probe.cjs, writes it to a file every second).
 * Variants: bare (Node 20, no merging: the core as it ran before issue 32), merge (same-page
 * merging on), one-byte (the bundle rewritten as a one-byte string, built into the cache by
 * `npm run core:one-byte`; docs/design/cline.md), one-byte+merge (the default launch), node24-cache (the core on a pinned Node 24 reading a compile cache
 * filled by a trusted warm-up; not the default), node24-cache+merge.
 *
 * Flags: --reps 2  --workers 4  --settle-ms 60000  --variants bare,merge,one-byte,one-byte+merge,node24-cache,node24-cache+merge
 *   --runtime-dir <dir> (Node 24 runtime, default <tmpdir>/flakegym-bench-node24-<version>)
 *   --pages-to-scan N (the kernel's ksm pages_to_scan for this run, restored after; default: as set).
 * Quick: `npm run bench -- boot --reps 1 --workers 2 --settle-ms 5000 --variants bare,merge`.
 */
import { readdir, readFile, rm } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  type ClineCore,
  type ClinePackage,
  type OneByteDecision,
  probeOneByteCore,
  resolveClinePackage,
} from "@flakegym/cline-vendor";
import { flakegymCacheRoot } from "../packages/runner/src/cache-root.mjs";
import {
  CORE_NODE,
  cacheFingerprint,
  launchCoreIn,
  type Node24Runtime,
  prepareNode24Runtime,
  probeStartupSnapshot,
} from "./boot/node24-runtime.js";
import { ksmSettings, withPagesToScan } from "./concurrency/ksm.js";
import { treeMemory } from "./concurrency/memory.js";
import { type BenchContext, benchFlags, median, printTable } from "./lib.js";

const VARIANTS = [
  "bare",
  "merge",
  "one-byte",
  "one-byte+merge",
  "node24-cache",
  "node24-cache+merge",
] as const;
type Variant = (typeof VARIANTS)[number];

function variantsOf(text: string): Variant[] {
  const out = text.split(",").map((v) => v.trim());
  for (const v of out)
    if (!(VARIANTS as readonly string[]).includes(v))
      throw new Error(`bench boot: --variants '${v}' is not one of ${VARIANTS.join(", ")}`);
  if (!out.includes("bare")) throw new Error("bench boot: --variants must include bare (the baseline)");
  return out as Variant[];
}

const load = () => loadavg()[0]!.toFixed(1);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** user+system CPU seconds of a live process (0 when it is gone). */
async function cpuSeconds(pid: number): Promise<number> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(f[11]) + Number(f[12])) / 100;
  } catch {
    return 0;
  }
}

async function ksmdPid(): Promise<number | undefined> {
  for (const name of await readdir("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const comm = await readFile(`/proc/${name}/comm`, "utf8").catch(() => "");
    if (comm.trim() === "ksmd") return Number(name);
  }
  return undefined;
}

interface Sample {
  bootCpuS: number[];
  bootMs: number[];
  pssMb: number[];
  corePssMb: number[];
  heapMb: number[];
  ksmdCpuPerWorkerS: number[];
  merge: string;
}

const HEAP_PROBE = fileURLToPath(new URL("./boot/heap-probe.cjs", import.meta.url));

function launchFor(
  v: Variant,
  dir: string,
  rt: Node24Runtime | undefined,
  oneByte: OneByteDecision | undefined,
) {
  const node24 = v.startsWith("node24");
  if (node24 && !rt) throw new Error("bench boot: the Node 24 runtime is missing");
  if (v.startsWith("one-byte") && !oneByte?.on)
    throw new Error(
      `bench boot: the one-byte bundle is not usable: ${oneByte && !oneByte.on ? oneByte.reason : "not probed"}`,
    );
  return {
    memoryMerge: v.endsWith("merge"),
    env: { NODE_OPTIONS: `--require ${HEAP_PROBE}`, FLAKEGYM_BENCH_HEAP_FILE: join(dir, "heap.json") },
    ...(v.startsWith("one-byte") ? { oneByte: oneByte! } : {}),
    ...(node24 ? { clinePackage: rt!.clinePackage, supervisorArgs: ["--node", rt!.nodeWithCache] } : {}),
  };
}

/** The core's heapUsed in MiB, as its preload last wrote it (0 when it wrote nothing). */
async function heapMb(dir: string): Promise<number> {
  try {
    return (
      (JSON.parse(await readFile(join(dir, "heap.json"), "utf8")) as { heapUsed: number }).heapUsed / 2 ** 20
    );
  } catch {
    return 0;
  }
}

async function oneVariant(
  root: string,
  v: Variant,
  workers: number,
  settleMs: number,
  rt?: Node24Runtime,
  oneByte?: OneByteDecision,
) {
  const ksmd = await ksmdPid();
  const ksmd0 = ksmd ? await cpuSeconds(ksmd) : 0;
  const dirs = Array.from({ length: workers }, (_, i) => join(root, `${v}-${i}`));
  const cores: ClineCore[] = [];
  try {
    const booted = await Promise.all(
      dirs.map(async (d) => {
        const core = await launchCoreIn(d, launchFor(v, d, rt, oneByte));
        cores.push(core);
        const p = core.childPids;
        const cpu = (await Promise.all([p.supervisor, p.host, p.core].map(cpuSeconds))).reduce(
          (a, b) => a + b,
        );
        return { core, cpu };
      }),
    );
    await sleep(Math.max(settleMs, 1500));
    const heap = await Promise.all(dirs.map(heapMb));
    const mem = await Promise.all(
      booted.map(({ core: c }) => treeMemory([c.childPids.supervisor, c.childPids.host, c.childPids.core])),
    );
    const ksmdCpu = ksmd ? (await cpuSeconds(ksmd)) - ksmd0 : 0;
    const m = booted[0]!.core.memoryMerge;
    return {
      bootCpuS: booted.map((b) => b.cpu),
      bootMs: booted.map((b) => b.core.timings.bootMs),
      pssMb: mem.map((x) => x.pssMb),
      corePssMb: mem.map((x) => x.pssByKindMb["cline-core"] ?? 0),
      heapMb: heap,
      ksmdCpuPerWorkerS: ksmdCpu / workers,
      merge: m.on ? "on" : `off (${m.reason})`,
    };
  } finally {
    await Promise.all(cores.map((c) => c.stop()));
    await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
  }
}

function rows(samples: Map<Variant, Sample>) {
  const bare = samples.get("bare")!;
  const bareCpu = median(bare.bootCpuS);
  const barePss = median(bare.pssMb);
  return [...samples].map(([v, s]) => ({
    variant: v,
    "boot CPU s": median(s.bootCpuS),
    "× bare": median(s.bootCpuS) / bareCpu,
    "boot wall s": median(s.bootMs) / 1000,
    "PSS MiB/worker": median(s.pssMb),
    "PSS × bare": median(s.pssMb) / barePss,
    "core PSS MiB": median(s.corePssMb),
    "core heap MiB": median(s.heapMb),
    "heap × bare": median(s.heapMb) / median(bare.heapMb),
    "ksmd CPU s/worker": median(s.ksmdCpuPerWorkerS),
  }));
}

export async function main(ctx: BenchContext, args: string[]): Promise<void> {
  const { flag, num } = benchFlags("boot", args);
  const root = join(tmpdir(), `flakegym-bench-boot-${process.pid}`);
  const pkg = resolveClinePackage();
  const scan = flag("pages-to-scan", "") === "" ? undefined : num("pages-to-scan", 100);
  await withPagesToScan(scan, () => measure(ctx, args, pkg, root));
}

async function measure(ctx: BenchContext, args: string[], pkg: ClinePackage, root: string): Promise<void> {
  const { flag, num } = benchFlags("boot", args);
  const reps = num("reps", 2);
  const workers = Math.max(1, num("workers", 4));
  const settleMs = num("settle-ms", 60_000);
  const variants = variantsOf(flag("variants", VARIANTS.join(",")));
  const ksm = await ksmSettings();
  console.log(`== boot and memory levers: ${reps} reps × ${workers} workers at once, settle ${settleMs} ms`);
  console.log(`   kernel same-page merging: ${ksm}; load ${load()}`);
  let rt: Node24Runtime | undefined;
  let fingerprint: string | undefined;
  if (variants.some((v) => v.startsWith("node24"))) {
    const dir = flag("runtime-dir", join(tmpdir(), `flakegym-bench-node24-${CORE_NODE.version}`));
    rt = await prepareNode24Runtime(dir, pkg);
    fingerprint = await cacheFingerprint(rt.cacheDir);
  }
  const oneByte = variants.some((v) => v.startsWith("one-byte"))
    ? probeOneByteCore(pkg, flakegymCacheRoot(process.env), true)
    : undefined;
  if (oneByte)
    console.log(`   one-byte bundle: ${oneByte.on ? oneByte.coreJs : `NOT USABLE: ${oneByte.reason}`}`);
  const samples = new Map<Variant, Sample>();
  try {
    for (let r = 0; r < reps; r++) {
      // alternate the order so that each variant sees the same load on average
      const order = r % 2 === 0 ? variants : [...variants].reverse();
      for (const v of order) {
        const before = load();
        const s = await oneVariant(root, v, workers, settleMs, rt, oneByte);
        const acc = samples.get(v) ?? {
          bootCpuS: [],
          bootMs: [],
          pssMb: [],
          corePssMb: [],
          heapMb: [],
          ksmdCpuPerWorkerS: [],
          merge: s.merge,
        };
        acc.bootCpuS.push(...s.bootCpuS);
        acc.bootMs.push(...s.bootMs);
        acc.pssMb.push(median(s.pssMb));
        acc.corePssMb.push(median(s.corePssMb));
        acc.heapMb.push(median(s.heapMb));
        acc.ksmdCpuPerWorkerS.push(s.ksmdCpuPerWorkerS);
        samples.set(v, acc);
        console.log(
          `  rep ${r + 1}/${reps} ${v}: boot CPU ${median(s.bootCpuS).toFixed(2)} s/worker, PSS ${Math.round(median(s.pssMb))} MiB/worker, core heap ${Math.round(median(s.heapMb))} MiB, ksmd ${s.ksmdCpuPerWorkerS.toFixed(2)} s/worker, merging ${s.merge}; load ${before} → ${load()}`,
        );
      }
    }
  } finally {
    await rm(root, { recursive: true, force: true });
  }
  const ordered = new Map(variants.map((v) => [v, samples.get(v)!]));
  const table = rows(ordered);
  printTable(table);
  let cacheUnchanged: boolean | undefined;
  let snapshot: string | undefined;
  if (rt && fingerprint) {
    cacheUnchanged = (await cacheFingerprint(rt.cacheDir)) === fingerprint;
    console.log(`  Node 24 compile cache unchanged by the measured cores: ${cacheUnchanged ? "yes" : "NO"}`);
    snapshot = await probeStartupSnapshot(rt, root);
    console.log(`  V8 startup snapshot of the core's bundle (--build-snapshot): ${snapshot}`);
    await rm(root, { recursive: true, force: true });
  }
  for (const name of ["merge", "one-byte", "one-byte+merge"]) {
    const t = table.find((x) => x.variant === name);
    if (t)
      console.log(
        `boot: ${name} boot-cpu ${t["× bare"].toFixed(2)}x pss ${Math.round(t["PSS MiB/worker"])} MiB (${t["PSS × bare"].toFixed(2)}x bare) core heap ${Math.round(t["core heap MiB"])} MiB (${t["heap × bare"].toFixed(2)}x bare); load ${load()}`,
      );
  }
  ctx.writeResult("boot", {
    reps,
    workers,
    settleMs,
    ksm,
    table,
    cacheUnchanged,
    snapshot,
    samples: Object.fromEntries(ordered),
  });
}
