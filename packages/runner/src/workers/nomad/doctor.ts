import { agentVersion, createNomadClient, NomadError, nomadConfigFromEnv } from "@flakegym/nomad-jobs";

/** One row of `flakegym doctor`. */
export interface DoctorRow {
  readonly check: string;
  readonly status: "ok" | "warn" | "fail" | "skip";
  readonly detail: string;
  readonly hint?: string;
}

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
      { check: "nomad", status: "skip", detail: "NOMAD_ADDR is not set (only the nomad backend needs it)" },
    ];
  }
  let client: ReturnType<typeof createNomadClient>;
  try {
    client = createNomadClient(
      nomadConfigFromEnv(env, { timeoutMs: opts.timeoutMs ?? 5_000, retry: { attempts: 1 } }),
    );
  } catch (err) {
    return [
      {
        check: "nomad config",
        status: "fail",
        detail: (err as Error).message,
        ...(err instanceof NomadError && err.hint ? { hint: err.hint } : {}),
      },
    ];
  }
  const call = opts.signal ? { signal: opts.signal } : {};
  const rows: DoctorRow[] = [];
  try {
    const leader = (await client.status.leader(call)).data;
    rows.push(
      leader
        ? { check: "nomad reachable", status: "ok", detail: `${client.config.address} (leader ${leader})` }
        : {
            check: "nomad reachable",
            status: "fail",
            detail: `${client.config.address} answers but has no leader`,
            hint: "the Nomad servers have no quorum: check `nomad server members`",
          },
    );
    const version = agentVersion((await client.agent.self(call)).data);
    if (!version)
      rows.push({ check: "nomad version", status: "warn", detail: "the agent does not report a version" });
    else if (versionAtLeast(version, MIN_NOMAD_VERSION))
      rows.push({ check: "nomad version", status: "ok", detail: version });
    else {
      rows.push({
        check: "nomad version",
        status: "warn",
        detail: `${version} is older than ${MIN_NOMAD_VERSION}`,
        hint: `upgrade Nomad to ${MIN_NOMAD_VERSION} or later (max_run_duration, which bounds worker lifetimes, needs it)`,
      });
    }
  } catch (err) {
    rows.push({
      check: "nomad reachable",
      status: "fail",
      detail: (err as Error).message,
      ...(err instanceof NomadError && err.hint ? { hint: err.hint } : {}),
    });
  } finally {
    client.close();
  }
  return rows;
}
