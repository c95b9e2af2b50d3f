import { emittedStep, MAX_EMISSION_BYTES, type ParsedScoring } from "../script.js";
import type { ExternalSite } from "./canon.js";
import { type ExternalVerdict, externalVerdict } from "./verdict.js";

/**
 * The externalized verdict of run `run` of a suite from the script's `emitted.<run>.0` step (see
 * externalize/verdict.ts): a missing step, or one cut for length, fails every externalized test
 * of the run. Pure.
 */
export function externalRunVerdict(
  parsed: ParsedScoring,
  run: number,
  ids: readonly string[],
  sites: readonly ExternalSite[],
): ExternalVerdict {
  if (!sites.length) return new Map();
  const step = parsed.steps.get(emittedStep(run, 0));
  if (step?.cut)
    return externalVerdict(ids, sites, {
      anomaly: `the run emitted ${step.outputBytes} bytes, more than the ${MAX_EMISSION_BYTES} kept`,
    });
  return externalVerdict(ids, sites, step?.output);
}
