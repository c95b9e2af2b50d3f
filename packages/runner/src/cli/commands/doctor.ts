import { mkdir, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  CLINE_CORE_REPORTED_VERSION,
  type ClineCore,
  launchClineCore,
  probeOneByteCore,
  resolveClinePackage,
  runClineTask,
  startScriptedOpenAiServer,
  xmlTool,
} from "@flakegym/cline-vendor";
import { execa } from "execa";
import { z } from "zod";
import { flakegymCacheRoot } from "../../cache-root.mjs";
import type { DoctorContext, DoctorProbe, DoctorRow } from "../../doctor/probe.js";
import { describeError } from "../../errors.js";
import { nixRolloutRow } from "../../images/nix-app.js";
import { nixVersionLine, readImageRecords } from "../../images/nix-images.js";
import { defaultImageRecordFile, nixBuildCapability } from "../../images/targets.js";
import { runningNixBin } from "../../nix/running-nix.js";
import { nomadDoctorProbe } from "../../workers/nomad/doctor.js";
import { defineCommand } from "../command.js";
import { podmanVersionLine } from "./rollout-images.js";

export { type DoctorContext, type DoctorProbe, DoctorRow } from "../../doctor/probe.js";

const mb = (bytes: number | undefined) =>
  bytes === undefined ? "n/a" : `${Math.round(bytes / 1024 / 1024)} MB`;

/** The core's reported version against the one this cline package ships. Pure. */
export function coreVersionRow(reported: string, pkgVersion: string): DoctorRow {
  const ok = reported === CLINE_CORE_REPORTED_VERSION;
  return {
    check: "cline core",
    status: ok ? "ok" : "warn",
    value: `reports itself as Cline ${reported}`,
    ...(ok ? {} : { detail: `expected ${CLINE_CORE_REPORTED_VERSION} for cline@${pkgVersion}` }),
  };
}

/** A running core's memory, page merging and one-byte bundle as rows. Pure. */
export function coreResourceRows(
  core: Pick<ClineCore, "memoryMerge" | "oneByte">,
  mem: { coreRssBytes?: number | undefined; hostRssBytes?: number | undefined },
): DoctorRow[] {
  return [
    {
      check: "core memory",
      status: "info",
      value: `core RSS ${mb(mem.coreRssBytes)}, host RSS ${mb(mem.hostRssBytes)}`,
    },
    {
      check: "same-page merging",
      status: "info",
      value: core.memoryMerge.on
        ? "on (idle cores share identical pages)"
        : `off: ${core.memoryMerge.reason}`,
    },
    {
      check: "one-byte bundle",
      status: core.oneByte.on ? "info" : "warn",
      value: core.oneByte.on
        ? `on (${core.oneByte.coreJs}: the core's source held one byte a character)`
        : `off: ${core.oneByte.reason}`,
    },
  ];
}

/** The Cline core end to end: package, boot, a scripted two-turn task (write a file, complete). */
export const clineProbe: DoctorProbe = {
  name: "cline",
  async run(ctx) {
    const rows: DoctorRow[] = [];
    let pkg: ReturnType<typeof resolveClinePackage>;
    try {
      pkg = resolveClinePackage();
      rows.push({
        check: "cline package",
        status: "ok",
        value: `cline@${pkg.version} (${pkg.integrity.slice(0, 19)}…)`,
      });
    } catch (err) {
      return [{ check: "cline package", status: "fail", value: "not usable", detail: describeError(err) }];
    }
    const dir = await mkdtemp(join(tmpdir(), "flakegym-doctor-"));
    const workspace = join(dir, "workspace");
    await mkdir(workspace);
    const policy = await startScriptedOpenAiServer({
      turns: [
        { text: `I'll write the file.\n${xmlTool.writeToFile("doctor.txt", "flakegym doctor")}` },
        { text: xmlTool.attemptCompletion("wrote doctor.txt") },
      ],
    });
    let core: ClineCore | undefined;
    try {
      ctx.progress("starting the Cline core (cline-host + cline-core)…");
      core = await launchClineCore({
        workspace,
        configDir: join(dir, "config"),
        home: join(dir, "home"),
        signal: ctx.signal,
        startTimeoutMs: ctx.timeoutMs,
        oneByte: probeOneByteCore(pkg, flakegymCacheRoot(process.env)),
      });
      const info = await core.client.state.getProcessInfo({ signal: ctx.signal });
      rows.push(coreVersionRow(info.version, pkg.version));
      rows.push({
        check: "core boot",
        status: "info",
        value: `${core.timings.bootMs} ms (spawn → first gRPC answer)`,
      });
      ctx.progress("running a scripted two-turn task…");
      const run = await runClineTask({
        client: core.client,
        prompt: "Create doctor.txt containing 'flakegym doctor', then finish.",
        provider: { kind: "openai", baseUrl: policy.baseUrl, modelId: "flakegym-doctor" },
        limits: { wallClockMs: ctx.timeoutMs, idleMs: Math.min(ctx.timeoutMs, 60_000) },
        signal: ctx.signal,
      });
      const written = await readFile(join(workspace, "doctor.txt"), "utf8").catch(() => "");
      const ok = run.outcome.kind === "completed" && written === "flakegym doctor";
      rows.push({
        check: "scripted task",
        status: ok ? "ok" : "fail",
        value: `${run.outcome.kind} in ${run.timings.totalMs} ms (${run.counts.modelRequests} model requests, ${run.counts.toolCalls} tool call)`,
        ...(ok
          ? {}
          : {
              detail: `${run.outcome.detail}${written === "flakegym doctor" ? "" : "; doctor.txt was not written"}; see ${core.logFile}`,
            }),
      });
      rows.push(...coreResourceRows(core, await core.memory()));
    } catch (err) {
      rows.push({
        check: "cline core",
        status: "fail",
        value: "did not start or run",
        detail: describeError(err),
      });
    } finally {
      await core?.stop();
      await policy.close();
      await rm(dir, { recursive: true, force: true, maxRetries: 3 });
    }
    return rows;
  },
};

/** `<bin> --version` as a row: present with its version, or missing (warn). */
export function toolProbe(check: string, bin: string, why: string): DoctorProbe {
  return {
    name: check,
    async run(ctx) {
      const r = await execa(bin, ["--version"], {
        reject: false,
        timeout: Math.min(ctx.timeoutMs, 15_000),
        cancelSignal: ctx.signal,
        stdin: "ignore",
      });
      if (r.exitCode === 0) {
        const line = `${r.stdout}\n${r.stderr}`.split("\n").find((l) => l.trim()) ?? "";
        return [{ check, status: "ok", value: line.trim() }];
      }
      const missing =
        (r as { code?: string }).code === "ENOENT" || r.exitCode === 127 || r.exitCode === undefined;
      return [
        {
          check,
          status: "warn",
          value: missing ? "not installed" : `\`${bin} --version\` exited ${r.exitCode}`,
          detail: `${why}${missing ? "" : `: ${(r.stderr || r.stdout).split("\n")[0]}`}`,
        },
      ];
    },
  };
}

/** The oldest Nix that can evaluate nixpkgs (its `lib/minver.nix`), so `nix build .#…` of this flake. */
export const NIXPKGS_MIN_NIX: readonly [number, number] = [2, 18];

/** What a Nix of this version can do with this flake: ok from 2.18, else a warning saying what works. */
export function nixVersionRow(versionLine: string): DoctorRow {
  const m = /(\d+)\.(\d+)/.exec(versionLine);
  const [major, minor] = NIXPKGS_MIN_NIX;
  if (!m) {
    return {
      check: "nix",
      status: "warn",
      value: versionLine || "(no version)",
      detail: "cannot read the version from `nix --version`",
    };
  }
  const [have, min] = [Number(m[1]) * 1000 + Number(m[2]), major * 1000 + minor];
  if (have >= min) return { check: "nix", status: "ok", value: versionLine };
  return {
    check: "nix",
    status: "warn",
    value: `${versionLine} (older than ${major}.${minor})`,
    detail: [
      `can: evaluate the flake against the stub nixpkgs (tests/integration/nix) and build builtins-only derivations`,
      `cannot: evaluate nixpkgs (its lib/minver.nix needs Nix >= ${major}.${minor}), so no \`nix build .#…\` or \`nix flake check\``,
      "newer Nix: Debian trixie's nix-bin (2.26) in a private root with its own store: `sh scripts/ensure-modern-nix` (what `npm test` runs the offline flake checks with)",
    ].join("\n"),
  };
}

/** `nix --version`, judged by {@link nixVersionRow}; missing is a warning like the other tools. */
export const nixProbe: DoctorProbe = {
  name: "nix",
  async run(ctx) {
    const rows = await toolProbe(
      "nix",
      "nix",
      "needed to build profiles and images from the flake (apt-get install nix-bin)",
    ).run(ctx);
    return rows.flatMap((r) => [
      r.status === "ok" ? nixVersionRow(r.value) : r,
      nixImagesRow(r.status === "ok" ? r.value : undefined),
    ]);
  },
};

/** Whether `flakegym images build|load` (and so `--images nix`) can work with this Nix. */
export function nixImagesRow(versionLine: string | undefined): DoctorRow {
  const cap = nixBuildCapability(versionLine);
  return cap.kind === "ok"
    ? {
        check: "nix images",
        status: "ok",
        value: "`flakegym images load` can build the flake's images (needs nixpkgs and its cache reachable)",
      }
    : {
        check: "nix images",
        status: "info",
        value: "not here: workers run on this machine's toolchains",
        detail: `${cap.reason}\n${cap.whatToRun}`,
      };
}

/** Whether `rollout --images nix` can run here (so what `nix run .#rollout` defaults to): {@link nixRolloutRow}. */
export const nixRolloutProbe: DoctorProbe = {
  name: "rollout --images nix",
  async run() {
    const recordsFile = defaultImageRecordFile(process.env);
    const [nix, podman] = await Promise.all([
      nixVersionLine(runningNixBin(process.env)),
      podmanVersionLine(),
    ]);
    return [
      nixRolloutRow({
        nix: nixBuildCapability(nix),
        podman,
        recorded: readImageRecords(recordsFile).images.length,
        recordsFile,
      }),
    ];
  },
};

/** Every probe `flakegym doctor` runs, in table order. Append to add rows. */
export const doctorProbes: DoctorProbe[] = [
  clineProbe,
  toolProbe("bubblewrap", "bwrap", "needed by the local sandbox backend (apt-get install bubblewrap)"),
  toolProbe("podman", "podman", "needed by the podman backend (apt-get install podman runc)"),
  nixProbe,
  nixRolloutProbe,
  nomadDoctorProbe,
];

/** Renders rows as an aligned table. */
export function renderDoctorTable(rows: readonly DoctorRow[]): string {
  const w = (k: "check" | "status") => Math.max(k.length, ...rows.map((r) => r[k].length)) + 2;
  const [wc, ws] = [w("check"), w("status")];
  const lines = [`${"CHECK".padEnd(wc)}${"STATUS".padEnd(ws)}VALUE`];
  for (const r of rows) {
    lines.push(`${r.check.padEnd(wc)}${r.status.padEnd(ws)}${r.value}`);
    if (r.detail) for (const d of r.detail.split("\n")) lines.push(`${"".padEnd(wc + ws)}${d}`);
  }
  return `${lines.join("\n")}\n`;
}

export const doctorCommand = defineCommand({
  path: ["doctor"],
  summary: "check this machine: the Cline core end to end, sandbox and build tools",
  details:
    "Starts a Cline core on a temporary workspace, drives a scripted two-turn task (write a file, then complete) through a local scripted policy, and probes bubblewrap, podman and nix. Exits 1 when a check fails.",
  options: z.object({
    json: z.boolean().default(false).describe("print the rows as JSON"),
    timeoutMs: z.number().int().positive().default(120_000).describe("bound on each check, in milliseconds"),
  }),
  examples: ["flakegym doctor", "flakegym doctor --json"],
  async run(opts, ctx) {
    const dctx: DoctorContext = {
      signal: ctx.signal,
      timeoutMs: opts.timeoutMs,
      progress: (m) => {
        if (!opts.json) ctx.stderr.write(`doctor: ${m}\n`);
      },
    };
    const rows: DoctorRow[] = [];
    for (const probe of doctorProbes) {
      ctx.signal.throwIfAborted();
      try {
        rows.push(...(await probe.run(dctx)));
      } catch (err) {
        rows.push({ check: probe.name, status: "fail", value: "probe failed", detail: describeError(err) });
      }
    }
    ctx.stdout.write(opts.json ? `${JSON.stringify(rows, null, 2)}\n` : renderDoctorTable(rows));
    return rows.some((r) => r.status === "fail") ? 1 : 0;
  },
});
