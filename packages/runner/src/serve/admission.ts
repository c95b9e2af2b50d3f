import { HttpError } from "../errors.js";

/**
 * The one admission path for every group a server runs: a group holds a place from the moment it
 * is admitted (before any await) until it ends, so a burst of requests can never pass the check
 * together. Checked and registered in one synchronous step.
 */
export interface Admission {
  /** Request ids holding a place (being set up or running). */
  readonly held: Set<string>;
  readonly maxGroups: number;
  readonly retryAfterS?: number | undefined;
}

export const newAdmission = (maxGroups: number, retryAfterS?: number): Admission => ({
  held: new Set(),
  maxGroups,
  retryAfterS,
});

/** The 429 a new group gets while `running` groups already fill the server (else undefined). Pure. */
export function busyError(running: number, maxGroups: number, retryAfterS = 5): HttpError | undefined {
  if (running < maxGroups) return undefined;
  const after = String(retryAfterS);
  return new HttpError(
    429,
    "E_BUSY",
    `${running} group(s) running, the most this server runs at once (--max-groups ${maxGroups}); retry after ${after} s`,
    { headers: { "retry-after": after } },
  );
}

/**
 * Admits `id` or throws the 429: the check and the registration happen with no await between
 * them. Returns the release (idempotent) the caller runs when the group fails to start or ends.
 */
export function admit(a: Admission, id: string): () => void {
  if (a.held.has(id))
    throw new HttpError(
      409,
      "E_CONFLICT",
      `request_id ${id} is being started; GET /v1/groups/${id} to follow it`,
    );
  const busy = busyError(a.held.size, a.maxGroups, a.retryAfterS);
  if (busy) throw busy;
  a.held.add(id);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    a.held.delete(id);
  };
}
