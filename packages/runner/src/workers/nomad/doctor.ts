import {
  agentVersion,
  createNomadClient,
  JOB_ID_PREFIX,
  type NomadClient,
  NomadError,
  nomadConfigFromEnv,
} from "@flakegym/nomad-jobs";
import type { DoctorProbe, DoctorRow } from "../../doctor/probe.js";

/** The oldest Nomad flakegym is tested against (MaxRunDuration, idempotent dispatch, event stream). */
export const MIN_NOMAD_VERSION = "2.0.4";

function versionAtLeast(v: string, min: string): boolean {
  const parse = (s: string) =>
    s
      .split(/[.-]/)
      .slice(0, 3)
      .map((x) => Number.parseInt(x, 10) || 0);
  const a = parse(v);
  const b = parse(min);
  for (let i = 0; i < 3; i++) if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) > (b[i] ?? 0);
  return true;
}

/**
 * Nomad reachability and version, for `doctor`. Skips when NOMAD_ADDR is unset (the backend is
 * optional); never throws.
 */
export async function nomadDoctorRows(
  env: Readonly<Record<string, string | undefined>>,
  opts: { signal?: AbortSignal; timeoutMs?: number } = {},
): Promise<DoctorRow[]> {
  if (!env.NOMAD_ADDR) {
    return [
      { check: "nomad", status: "info", value: "NOMAD_ADDR is not set (only the nomad backend needs it)" },
    ];
  }
  let client: NomadClient;
  try {
    client = createNomadClient(
      nomadConfigFromEnv(env, { timeoutMs: opts.timeoutMs ?? 5_000, retry: { attempts: 1 } }),
    );
  } catch (err) {
    return [
      {
        check: "nomad config",
        status: "fail",
        value: "invalid",
        detail: detailOf(err),
      },
    ];
  }
  const call = opts.signal ? { signal: opts.signal } : {};
  const rows: DoctorRow[] = [];
  try {
    // /v1/status/leader needs no token (Nomad checks no ACL there): it says whether Nomad answers
    const leader = (await client.status.leader(call)).data;
    rows.push(
      leader
        ? { check: "nomad reachable", status: "ok", value: `${client.config.address} (leader ${leader})` }
        : {
            check: "nomad reachable",
            status: "fail",
            value: `${client.config.address} answers but has no leader`,
            detail: "the Nomad servers have no quorum: check `nomad server members`",
          },
    );
  } catch (err) {
    rows.push({
      check: "nomad reachable",
      status: "fail",
      value: client.config.address,
      detail: detailOf(err),
    });
    client.close();
    return rows;
  }
  try {
    rows.push(await tokenRow(client, call));
    rows.push(await versionRow(client, call));
  } finally {
    client.close();
  }
  return rows;
}

/** An error's message and, for Nomad's, its hint. */
function detailOf(err: unknown): string {
  return [(err as Error).message, ...(err instanceof NomadError && err.hint ? [err.hint] : [])].join("\n");
}

/** Whether the token can do what the backend does first (list its jobs in the namespace). */
async function tokenRow(client: NomadClient, call: { signal?: AbortSignal }): Promise<DoctorRow> {
  const ns = client.config.namespace ?? "default";
  try {
    await client.jobs.list({ prefix: JOB_ID_PREFIX }, call);
    return { check: "nomad token", status: "ok", value: `lists jobs in namespace ${ns}` };
  } catch (err) {
    return {
      check: "nomad token",
      status: "fail",
      value: `cannot list jobs in namespace ${ns}`,
      detail: detailOf(err),
    };
  }
}

/**
 * The agent's version. `GET /v1/agent/self` needs `agent:read`, which the token docs/reference/nomad.md
 * describes does not have (workers need none): a refusal there is a warning, not an outage.
 */
async function versionRow(client: NomadClient, call: { signal?: AbortSignal }): Promise<DoctorRow> {
  let version: string | undefined;
  try {
    version = agentVersion((await client.agent.self(call)).data);
  } catch (err) {
    if (err instanceof NomadError && err.status === 403) {
      return {
        check: "nomad version",
        status: "warn",
        value: "not checked: the token may not read the agent (agent:read)",
        detail: `flakegym needs Nomad ${MIN_NOMAD_VERSION} or later; grant agent { policy = "read" } to let doctor check it, or check \`nomad version\` yourself`,
      };
    }
    return { check: "nomad version", status: "warn", value: `not checked: ${(err as Error).message}` };
  }
  if (!version)
    return { check: "nomad version", status: "warn", value: "the agent does not report a version" };
  if (versionAtLeast(version, MIN_NOMAD_VERSION))
    return { check: "nomad version", status: "ok", value: version };
  return {
    check: "nomad version",
    status: "warn",
    value: `${version} is older than ${MIN_NOMAD_VERSION}`,
    detail: `upgrade Nomad to ${MIN_NOMAD_VERSION} or later (max_run_duration, which bounds worker lifetimes, needs it)`,
  };
}

/** The doctor probe: append it to `doctorProbes` (cli/commands/doctor.ts) to show these rows. */
export const nomadDoctorProbe: DoctorProbe = {
  name: "nomad",
  run: (ctx) =>
    nomadDoctorRows(process.env, { signal: ctx.signal, timeoutMs: Math.min(ctx.timeoutMs, 10_000) }),
};
