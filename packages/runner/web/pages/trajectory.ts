import { failureMessage } from "../../src/eval/failure-message.js";
import type { TrajectoryResponse } from "../../src/view/responses.js";
import { conversation, diffView } from "../conversation-view.js";
import { api } from "../data.js";
import { fmtInt, fmtMs, fmtReward, h } from "../dom.js";
import {
  enc,
  evalCrumb,
  fact,
  layout,
  link,
  outcomeChip,
  runHref,
  table,
  timingBar,
  trajHref,
} from "../shell.js";

/** `#/t/<ref>/<id>`: one trajectory — outcome, score, tests, diff and conversation. */

/** A hidden test's row: failed ones show their failing assertion and, folded, their output. */
function testRow(set: string, name: string, status: string, output: string | undefined) {
  const failed = status !== "passed";
  return h(
    "tr",
    { class: failed ? "test-failed" : "" },
    h("td", {}, set),
    h("th", { scope: "row" }, name),
    h("td", { class: `ts-${status}` }, status),
    h(
      "td",
      {},
      failed
        ? [
            h("div", { class: "assertion" }, status === "missing" ? "did not run" : failureMessage(output)),
            output
              ? h("details", {}, h("summary", {}, "test output"), h("pre", { class: "test-output" }, output))
              : null,
          ]
        : "",
    ),
  );
}

export async function trajectoryPage(ref: string, id: string, params: URLSearchParams): Promise<void> {
  const t = await api<TrajectoryResponse>("/api/trajectory", { run: ref, id });
  const r = t.result;
  const other = t.siblings.find((x) => x !== id);
  layout(
    `Trajectory ${id}`,
    [
      ["#/", "Runs"],
      ...evalCrumb(ref),
      [runHref(ref), t.provenance.runId ? String(t.provenance.runId) : ref],
      [trajHref(ref, id), id],
    ],
    h(
      "nav",
      { class: "actions", "aria-label": "Trajectory views" },
      link(`${trajHref(ref, id)}/tokens`, "Token view"),
      other ? link(`#/compare/${enc(ref || ".")}/${enc(id)}/${enc(other)}`, `Compare with ${other}`) : null,
    ),
    resultFacts(r),
    rewardSection(t.score),
    diffSection(t),
    conversationSection(t),
    provenanceSection(t),
  );
  if (params.get("at") === "tests") {
    const at =
      document.querySelector<HTMLElement>("#tests tr.test-failed") ?? document.getElementById("tests");
    at?.scrollIntoView({ block: "center" });
  }
}

/** The result's facts, or that the trajectory is still running. */
function resultFacts(r: TrajectoryResponse["result"]): HTMLElement {
  return r
    ? h(
        "dl",
        { class: "facts" },
        fact("task", r.taskId),
        fact("policy", r.policy),
        fact("outcome", [
          outcomeChip(r.outcome.kind, r.reward, "limit" in r.outcome ? r.outcome.limit : undefined),
          ` ${r.outcome.detail}`,
        ]),
        fact("reward", fmtReward(r.reward)),
        fact("turns", String(r.counts.turns)),
        fact("tokens in / out", `${fmtInt(r.counts.tokensIn)} / ${fmtInt(r.counts.tokensOut)}`),
        fact("finished", r.finishedAt),
        fact("timings", [
          timingBar({
            snapshot: r.timings.snapshotMs,
            fork: r.timings.forkMs,
            boot: r.timings.bootMs,
            agent: r.timings.agentMs,
            score: r.timings.scoreMs,
          }),
          ` agent ${fmtMs(r.timings.agentMs)}, score ${fmtMs(r.timings.scoreMs)}, boot ${fmtMs(r.timings.bootMs)}`,
        ]),
        fact(
          "infra retries",
          r.infraRetries.length
            ? r.infraRetries.map((a) => h("div", {}, `#${a.attempt} ${a.at}: ${a.detail}`))
            : "none",
        ),
      )
    : h("p", { class: "muted" }, "result.json is not written yet: the trajectory is still running.");
}

/** The hidden tests' rows, FAIL_TO_PASS then PASS_TO_PASS. */
function testRowsOf(s: NonNullable<TrajectoryResponse["score"]>): HTMLTableRowElement[] {
  return s.testResults
    ? (["failToPass", "passToPass"] as const).flatMap((k) =>
        Object.entries(s.testResults?.[k] ?? {}).map(([name, status]) =>
          testRow(k === "failToPass" ? "FAIL_TO_PASS" : "PASS_TO_PASS", name, status, s.testOutput?.[name]),
        ),
      )
    : [];
}

/** The reward: its terms, gate, tamper and decoy notes, the static screen's flags and the hidden tests. */
function rewardSection(s: TrajectoryResponse["score"]): HTMLElement {
  const tests = s ? testRowsOf(s) : [];
  return h(
    "section",
    { "aria-labelledby": "reward-h" },
    h("h2", { id: "reward-h" }, "Reward"),
    s
      ? [
          table(
            `Reward ${fmtReward(s.reward)}: terms`,
            ["term", "weight", "value", "detail"],
            s.terms.map((term) =>
              h(
                "tr",
                {},
                h("th", { scope: "row" }, term.name),
                h("td", {}, term.weight),
                h("td", {}, fmtReward(term.value)),
                h("td", {}, h("pre", {}, term.detail ?? "")),
              ),
            ),
          ),
          s.gate ? h("p", { class: "err" }, `gate: ${JSON.stringify(s.gate)}`) : null,
          h(
            "p",
            {},
            `tampered: ${s.tampered?.length ? s.tampered.join(", ") : "none"}; test files touched: ${s.touchedTestFiles.length ? s.touchedTestFiles.join(", ") : "none"}; flaky: ${s.flaky.length ? s.flaky.join(", ") : "none"}`,
          ),
          s.decoys
            ? h(
                "p",
                {},
                `decoys: ${s.decoys.guarded.length} graded test(s) twinned by a test that must fail${
                  s.decoys.unguarded.length
                    ? `; unguarded: ${s.decoys.unguarded.map((u) => `${u.id} (${u.reason})`).join(", ")}`
                    : ""
                }`,
              )
            : null,
          s.twin
            ? h(
                "p",
                s.twin.passed ? { class: "err" } : {},
                `decoy twin run (the eval command on hidden tests expecting other values; must fail): ${
                  s.twin.passed ? "passed" : "failed"
                }${s.twin.exitCode === undefined ? "" : `, exit ${s.twin.exitCode}`}${s.twin.timedOut ? ", timed out" : ""}`,
              )
            : null,
          s.ignoredTests?.length
            ? h("p", {}, `the agent's own new test files, left out of scoring: ${s.ignoredTests.join(", ")}`)
            : null,
          s.suspicious?.length
            ? table(
                "Suspicious: what the static screen flagged in the scored diff",
                ["where", "class", "why", "line"],
                s.suspicious.map((x) =>
                  h(
                    "tr",
                    { class: "suspicious" },
                    h("th", { scope: "row" }, `${x.file}:${x.line}`),
                    h("td", {}, x.class),
                    h("td", {}, x.reason),
                    h("td", {}, h("code", {}, x.text)),
                  ),
                ),
              )
            : null,
          tests.length
            ? h(
                "section",
                { id: "tests", "aria-label": "Hidden tests" },
                table(
                  "Hidden tests (failing ones first in the report)",
                  ["set", "test", "status", "why"],
                  tests,
                ),
              )
            : null,
        ]
      : h("p", { class: "muted" }, "No score.json."),
  );
}

/** The final diff (or why there is none). */
function diffSection(t: TrajectoryResponse): HTMLElement {
  return h(
    "section",
    { "aria-labelledby": "diff-h" },
    h("h2", { id: "diff-h" }, "Final diff"),
    t.diff === null
      ? h("p", { class: "muted" }, "No diff.patch.")
      : t.diff === ""
        ? h("p", {}, "Empty diff: the agent changed nothing.")
        : diffView(t.diff, "diff.patch"),
    t.diffTruncated
      ? h("p", { class: "err" }, "diff.patch is larger than the viewer's cap; truncated")
      : null,
  );
}

/** The conversation as of the last model call. */
function conversationSection(t: TrajectoryResponse): HTMLElement {
  return h(
    "section",
    { "aria-labelledby": "conv-h" },
    h("h2", { id: "conv-h" }, "Conversation"),
    t.lastTurn
      ? h(
          "p",
          { class: "muted" },
          `as of model call ${t.lastTurn.seq ?? "?"} (${t.lastTurn.status ?? "?"}, ${t.lastTurn.upstream ?? ""})`,
        )
      : null,
    conversation(t.conversation, t.conversationNote),
  );
}

/** run.json's provenance of the trajectory. */
function provenanceSection(t: TrajectoryResponse): HTMLElement {
  return h(
    "section",
    { "aria-labelledby": "prov-h" },
    h("h2", { id: "prov-h" }, "Provenance"),
    h(
      "dl",
      { class: "facts" },
      Object.entries(t.provenance).map(([k, v]) => fact(k, typeof v === "string" ? v : JSON.stringify(v))),
    ),
  );
}

// ---------- tokens ----------
