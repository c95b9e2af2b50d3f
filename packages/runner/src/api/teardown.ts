import { rm, stat } from "node:fs/promises";
import { join } from "node:path";
import { acquireRunLock } from "../rollout/run-lock.js";
import { type CallOptions, callContext } from "./call.js";
import { EnvSession, type SessionRef } from "./session.js";

export interface TeardownOptions extends Pick<CallOptions, "sessionsDir"> {
  readonly session: SessionRef;
}

/**
 * Removes everything a session made (its workspace, call outputs, session.json). Nothing of a
 * session runs between calls (each call's sandboxes and gateway end with it), so this is all there
 * is to stop. Idempotent: an unknown or removed session is a no-op.
 */
export async function teardown(opts: TeardownOptions): Promise<{ removed: boolean }> {
  const { sessionsDir } = callContext(opts);
  const dir =
    typeof opts.session === "string"
      ? /^[A-Za-z0-9_-]{1,64}$/.test(opts.session)
        ? join(sessionsDir, opts.session)
        : opts.session
      : EnvSession.parse(opts.session).dir;
  const exists = (await stat(dir).catch(() => undefined)) !== undefined;
  if (!exists) return { removed: false };
  // a call running in the session holds its lock: teardown waits for no one, it refuses
  await acquireRunLock(dir, "env");
  await rm(dir, { recursive: true, force: true });
  return { removed: exists };
}
