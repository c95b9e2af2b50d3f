import { createHash } from "node:crypto";
import { UsageError } from "../errors.js";
import type { RunManifest } from "../run-format/schema.js";

/**
 * run.json's inputs are sealed when the run is created: `seal` holds the sha256 of each field that
 * decides what the run's trajectories are (every config field but the per-session ones, the run
 * id, its creation time, its provenance and its input files' hashes). `--resume` recomputes them:
 * an edited field (groupSize 2→3, a policy swapped) is refused, naming the field, so a resumed run
 * never mixes two configurations in one group. Pure.
 */

/** Config fields a resumed session may set anew (they change how it runs, not what it produces). */
export const SESSION_CONFIG_FIELDS: readonly string[] = ["concurrency", "maxInfraRetries", "atropos"];

/** JSON with object keys sorted and undefined members dropped (one spelling per value). Pure. */
export function canonicalJson(x: unknown): string {
  const canon = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(canon)
      : v && typeof v === "object"
        ? Object.fromEntries(
            Object.entries(v)
              .filter(([, e]) => e !== undefined)
              .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
              .map(([k, e]) => [k, canon(e)]),
          )
        : v;
  return JSON.stringify(canon(x)) ?? "null";
}

const sha = (v: unknown) => createHash("sha256").update(canonicalJson(v)).digest("hex");

/** The sealed fields of a manifest and their values, by name (`config.groupSize`, `runId`, …). Pure. */
export function sealedFields(m: Omit<RunManifest, "seal">): Record<string, unknown> {
  const out: Record<string, unknown> = {
    runId: m.runId,
    createdAt: m.createdAt,
    provenance: m.provenance,
    inputs: m.inputs ?? null,
  };
  for (const [k, v] of Object.entries(m.config))
    if (!SESSION_CONFIG_FIELDS.includes(k) && v !== undefined) out[`config.${k}`] = v;
  return out;
}

/** The seal a new manifest stores. Pure. */
export function sealOf(m: Omit<RunManifest, "seal">): Record<string, string> {
  return Object.fromEntries(
    Object.entries(sealedFields(m))
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([k, v]) => [k, sha(v)]),
  );
}

/** The sealed fields that differ from the seal, one line each (`changed: config.groupSize`). Pure. */
export function sealBreaks(m: RunManifest): string[] {
  if (!m.seal) return [];
  const now = sealOf(m);
  const lines: string[] = [];
  for (const [k, h] of Object.entries(m.seal)) {
    if (!(k in now)) lines.push(`removed: ${k}`);
    else if (now[k] !== h) lines.push(`changed: ${k}`);
  }
  for (const k of Object.keys(now)) if (!(k in m.seal)) lines.push(`added: ${k}`);
  return lines;
}

/** Refuses a run.json whose sealed fields were edited since the run was created (exit 2). */
export function checkSeal(path: string, m: RunManifest): void {
  const breaks = sealBreaks(m);
  if (breaks.length === 0) return;
  throw new UsageError(
    `${path} was edited after the run was created (${breaks.join(", ")}): a resumed run would mix two configurations in its groups`,
    "restore run.json as the run wrote it, or start a new run (another --out) with the new flags",
    "E_RUN_SEALED",
  );
}
