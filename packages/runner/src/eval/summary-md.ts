import type { EvalReport } from "./report.js";

/** `summary.md`: the report as GitHub-flavoured Markdown tables (fit for $GITHUB_STEP_SUMMARY). Pure. */

const pct = (x: number | null | undefined) =>
  x === null || x === undefined ? "–" : `${(x * 100).toFixed(0)} %`;
const cellText = (s: string) => s.replaceAll("|", "\\|").replaceAll("\n", " ");

/** Pooled unbiased pass@k and pass^k per policy, k = 1 … the smallest trial count. */
export function passKTable(r: EvalReport): string[] {
  const kMax = Math.max(0, ...r.policies.map((p) => p.pooled.passAtK.length));
  if (kMax === 0) return [];
  const ks = Array.from({ length: kMax }, (_, i) => i + 1);
  const out = ["", "### pass@k / pass^k (unbiased, mean over items)", ""];
  out.push(`| policy | ${ks.map((k) => `pass@${k} / pass^${k}`).join(" | ")} |`);
  out.push(`|---|${ks.map(() => "---").join("|")}|`);
  for (const p of r.policies) {
    const cells = ks.map((k) => {
      const x = p.pooled.passAtK.find((y) => y.k === k);
      return x ? `${pct(x.passAtK)} / ${pct(x.passHatK)}` : "–";
    });
    out.push(`| \`${cellText(p.policy)}\` | ${cells.join(" | ")} |`);
  }
  return out;
}

export function renderSummaryMd(r: EvalReport): string {
  const out: string[] = [];
  out.push(`## flakegym eval ${r.evalId}`, "");
  out.push(
    `${r.items.length} item(s) × ${r.policies.length} policy(ies) × ${r.provenance.trials} trial(s); ` +
      `cline ${r.provenance.cline.version}, flakegym ${r.provenance.flakegymVersion}` +
      `${r.complete ? "" : " — **interrupted: incomplete**"}`,
    "",
  );
  if (r.baseline) {
    out.push(
      r.baseline.regressions.length
        ? `**Regression vs baseline** (${cellText(r.baseline.test)}): ${r.baseline.regressions.map((s) => `\`${cellText(s)}\``).join(", ")}`
        : `No regression vs baseline (${cellText(r.baseline.test)}).`,
      "",
    );
  }
  out.push("### Policies", "");
  out.push(
    "| policy | pass@1 | 95 % CI | PASS / FLAKY / FAIL | mean reward | tokens in / out | model calls | cost |",
  );
  out.push("|---|---|---|---|---|---|---|---|");
  for (const p of r.policies) {
    const s = p.pooled.statuses;
    out.push(
      `| \`${cellText(p.policy)}\` | ${pct(p.pooled.pass1)} | ${pct(p.pooled.wilson95.low)}–${pct(p.pooled.wilson95.high)} | ` +
        `${s.PASS ?? 0} / ${s.FLAKY ?? 0} / ${s.FAIL ?? 0} | ${p.meanReward === null ? "–" : p.meanReward.toFixed(2)} | ` +
        `${p.tokensIn} / ${p.tokensOut} | ${p.modelCalls} | ${p.cost === undefined ? "–" : p.cost.toFixed(4)} |`,
    );
  }
  out.push(...passKTable(r));
  out.push("", "### Items × policies", "");
  out.push(`| item | ${r.policies.map((p) => cellText(p.label)).join(" | ")} |`);
  out.push(`|---|${r.policies.map(() => "---").join("|")}|`);
  for (const item of r.items) {
    const row = r.policies.map((p) => {
      const c = r.cells.find((x) => x.item === item.id && x.policy === p.policy);
      if (!c) return "–";
      const infra = c.infraErrors ? ` (+${c.infraErrors} infra)` : "";
      return `${c.stats.status} ${c.stats.c}/${c.stats.n}${infra}`;
    });
    out.push(`| ${cellText(item.id)} | ${row.join(" | ")} |`);
  }
  const flaky = r.testFlakes.filter((t) => t.flaky > 0);
  if (flaky.length) {
    out.push("", "### Flaky hidden tests (environment)", "");
    out.push("| item | test | flipped / scorings |", "|---|---|---|");
    for (const t of flaky)
      out.push(`| ${cellText(t.item)} | ${cellText(t.test)} | ${t.flaky} / ${t.scorings} |`);
  }
  if (r.baseline?.comparisons.length) {
    out.push("", "### Baseline comparison", "");
    out.push("| scope | baseline | now | z | regressed |", "|---|---|---|---|---|");
    for (const c of r.baseline.comparisons) {
      out.push(
        `| ${cellText(c.scope)} | ${c.baseline.c}/${c.baseline.n} | ${c.current.c}/${c.current.n} | ${c.z === null ? "–" : c.z.toFixed(2)} | ${c.regressed ? "**yes**" : "no"} |`,
      );
    }
  }
  out.push(
    "",
    `Policy labels: ${r.policies.map((p) => `${p.label} = \`${cellText(p.policy)}\``).join(", ")}.`,
  );
  return `${out.join("\n")}\n`;
}
