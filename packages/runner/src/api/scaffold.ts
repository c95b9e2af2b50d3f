import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClineClient, runClineTask } from "@flakegym/cline-vendor";
import { createDeadline } from "@flakegym/nomad-jobs";
import type { ProfileId } from "@flakegym/profiles";
import {
  type Contract,
  type ContractIssue,
  formatContractIssue,
  loadContract,
  STAGES_DIR,
} from "../contract/contract.js";
import type { Hint } from "../contract/hints.js";
import { FlakegymError } from "../errors.js";
import { startGatewayThread } from "../gateway/thread.js";
import { createUpstream } from "../policy/create-upstream.js";
import type { PolicySpec } from "../policy/spec.js";
import { type BackendChoice, resolveBackend } from "../workers/backend.js";

/** Repair rounds after the first attempt (each: one Cline task told what was wrong). */
export const SCAFFOLD_REPAIR_ROUNDS = 2;
const SCRIPTED_MODEL_ID = "flakegym-scripted";

/** The task Cline gets to write a contract (pure). */
export function scaffoldPrompt(
  profile: ProfileId,
  hints: readonly Hint[],
  issues: readonly ContractIssue[],
): string {
  const found = hints.slice(0, 10).map((h) => `- \`${h.command}\` (${h.anchor})`);
  const base = `Write a flakegym contract for this repository: a file flakegym.yml at the root with
version: 1, profile (this looks like '${profile}'), stages rollout and evaluation (each a shell script
directly under ${STAGES_DIR}/), and the scripts themselves. The evaluation script must run the project's
tests and write $FLAKEGYM_OUT/metrics.json ({"ok": true, "score": null}) and
$FLAKEGYM_OUT/hints_used.json ({"ok", "used_anchors", "commands", "reason"}). The rollout script must
write $FLAKEGYM_OUT/rollout.json ({"ok": true, "paths": {"samples_jsonl": "samples.jsonl"}}) and that
JSONL of {"prompt", "completion", "reward"} lines. Commands this repository documents:
${found.length ? found.join("\n") : "- (none found)"}`;
  if (issues.length === 0) return base;
  return `${base}

The previous flakegym.yml was rejected; fix exactly these problems:
${issues.map((i) => `- ${formatContractIssue(i)}`).join("\n")}`;
}

/** The issues of an E_CONTRACT error, or undefined for any other error. */
function issuesOf(err: unknown): ContractIssue[] | undefined {
  if (!(err instanceof FlakegymError) || err.code !== "E_CONTRACT") return undefined;
  return err.message
    .split("\n")
    .slice(1)
    .map((l) => l.trim())
    .filter(Boolean)
    .map((l) => ({ file: "flakegym.yml", field: "", message: l }));
}

/**
 * Asks Cline — the real core, in a local sandbox over the session workspace, driven by the
 * session's policy through a policy gateway — to write the contract, validates it, and feeds the
 * problems back for up to {@link SCAFFOLD_REPAIR_ROUNDS} more rounds.
 */
export async function scaffoldContract(o: {
  readonly workspace: string;
  readonly sessionId: string;
  readonly policy: PolicySpec;
  readonly profile: ProfileId;
  readonly hints: readonly Hint[];
  readonly logDir: string;
  readonly signal: AbortSignal;
  readonly timeoutMs?: number;
  /** Where Cline's worker runs (the call's backend; default local). See workers/backend.ts `resolveBackend`. */
  readonly backend?: BackendChoice;
}): Promise<{ contract: Contract; rounds: number }> {
  const sockDir = await mkdtemp(join(tmpdir(), "fg-scaffold-"));
  // the rollout pipeline's arrangement: the gateway in a thread of its own (docs/reference/gateway.md)
  const gateway = await startGatewayThread({
    listen: { socketPath: join(sockDir, "gw.sock") },
    signal: o.signal,
  });
  const upstream = await createUpstream(o.policy, { signal: o.signal });
  const { backend, owned } = resolveBackend(o.backend, { env: process.env });
  const modelId =
    o.policy.kind === "openai" || o.policy.kind === "anthropic" ? o.policy.model : SCRIPTED_MODEL_ID;
  let issues: ContractIssue[] = [];
  try {
    for (let round = 1; round <= 1 + SCAFFOLD_REPAIR_ROUNDS; round++) {
      // one trajectory id for every round: a scripted plan continues where the last round stopped
      await gateway.unregister("scaffold");
      const route = gateway.register("scaffold", {
        upstream,
        limits: { maxRequests: 40 },
        turnLogPath: join(o.logDir, `scaffold-${round}.turns.jsonl`),
      });
      const worker = await backend.start(
        {
          runId: o.sessionId,
          taskId: o.sessionId,
          trajectoryId: `scaffold-${round}`,
          profile: o.profile,
          workspace: o.workspace,
          gateway: { socketPath: gateway.socketPath!, url: route.baseUrlsFor("http://gateway").openai },
          limits: { memoryMb: 4096, pids: 1024, wallClockMs: (o.timeoutMs ?? 600_000) + 30_000 },
          agent: true,
        },
        o.signal,
      );
      try {
        if (!worker.agentAddress || !worker.policyBaseUrl) {
          throw new FlakegymError("E_WORKER", `worker ${worker.id} started without an agent address`);
        }
        const client = createClineClient({
          address: worker.agentAddress,
          ...(worker.agentToken ? { token: worker.agentToken } : {}),
        });
        using linked = createDeadline({ signals: [o.signal, route.signal] });
        try {
          await runClineTask({
            client,
            prompt: scaffoldPrompt(o.profile, o.hints, issues),
            provider: { kind: "openai", baseUrl: worker.policyBaseUrl, apiKey: route.token, modelId },
            limits: { wallClockMs: o.timeoutMs ?? 600_000, maxModelRequests: 40 },
            signal: linked.signal,
          });
        } finally {
          client.close();
        }
      } finally {
        await worker.stop();
      }
      o.signal.throwIfAborted();
      try {
        const contract = await loadContract(o.workspace);
        if (contract) return { contract, rounds: round };
        issues = [{ file: "flakegym.yml", field: "", message: "missing; write it at the repository root" }];
      } catch (err) {
        const found = issuesOf(err);
        if (!found) throw err;
        issues = found;
      }
    }
    throw new FlakegymError(
      "E_SCAFFOLD",
      `Cline did not write a valid flakegym.yml in ${1 + SCAFFOLD_REPAIR_ROUNDS} rounds; last problems:\n${issues.map((i) => `  ${i.message}`).join("\n")}`,
      {
        hint: "write the contract yourself (docs/reference/api.md), or pass noScaffold: true (--no-scaffold)",
      },
    );
  } finally {
    await gateway.close();
    await rm(sockDir, { recursive: true, force: true });
    if (owned) await backend.close?.();
  }
}
