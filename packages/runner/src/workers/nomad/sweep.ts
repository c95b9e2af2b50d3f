import { JOB_ID_PREFIX, META, type NomadClient } from "@flakegym/nomad-jobs";

/**
 * Purges flakegym jobs nobody can still be using: those of this run id (left by an earlier,
 * crashed attempt of the same run) and those whose `flakegym_expires` has passed. Dispatched
 * children go first, then their parents. Returns the purged job ids.
 */
export async function sweepOrphans(
  client: NomadClient,
  o: { runId: string; now: number; namespace?: string | undefined; signal?: AbortSignal },
): Promise<string[]> {
  const opts = {
    ...(o.namespace ? { namespace: o.namespace } : {}),
    ...(o.signal ? { signal: o.signal } : {}),
  };
  const { data } = await client.jobs.list({ prefix: JOB_ID_PREFIX, meta: true }, opts);
  const doomed = data.filter((j) => {
    const run = j.Meta[META.run];
    if (run === undefined) return false;
    const expires = Number(j.Meta[META.expires]);
    return run === o.runId || (Number.isFinite(expires) && expires > 0 && expires < o.now);
  });
  doomed.sort((a, b) => Number(Boolean(b.ParentID)) - Number(Boolean(a.ParentID)));
  const purged: string[] = [];
  for (const j of doomed) {
    await client.jobs.deregister(j.ID, { purge: true }, opts);
    purged.push(j.ID);
  }
  return purged;
}
