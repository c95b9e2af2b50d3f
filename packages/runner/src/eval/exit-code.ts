import type { EvalReport } from "./report.js";

/**
 * The exit status of a finished `flakegym eval` and why (pure; docs/reference/eval.md lists them). Usage
 * errors (bad flags, scenario.json, plans, baseline file) exit 2 before anything runs.
 *
 * - 130: interrupted (the report of what finished is still written, `complete: false`);
 * - 1: a statistically meaningful regression against `--baseline`; an item that could not run; a
 *   trial still `infra_error` after its retries; or every trial a `policy_error` (no data);
 * - 0: the eval ran — failing and flaky trials are results, not errors.
 */
export function evalExitCode(r: EvalReport, interrupted: boolean): { code: 0 | 1 | 130; why?: string } {
  if (interrupted) return { code: 130, why: "interrupted: the report covers the trials that finished" };
  if (r.baseline?.regressions.length) {
    return { code: 1, why: `regression vs ${r.baseline.file}: ${r.baseline.regressions.join(", ")}` };
  }
  if (r.itemErrors.length) {
    return {
      code: 1,
      why: `${r.itemErrors.length} item(s) could not run: ${r.itemErrors.map((e) => `${e.item} (${e.message})`).join("; ")}`,
    };
  }
  const infra = r.trials.filter((t) => t.outcome === "infra_error").length;
  if (infra)
    return {
      code: 1,
      why: `${infra} trial(s) ended in infra_error after every retry: the machinery, not the policy, failed`,
    };
  if (r.trials.length && r.trials.every((t) => t.outcome === "policy_error")) {
    return {
      code: 1,
      why: "every trial ended in policy_error: the model server failed, so the eval measured nothing",
    };
  }
  return { code: 0 };
}
