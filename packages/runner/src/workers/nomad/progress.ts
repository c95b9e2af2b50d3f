/** What the Nomad backend reports while it works (for a progress line or a log). */
export type NomadProgress =
  | { readonly kind: "swept"; readonly purged: readonly string[] }
  | { readonly kind: "registered"; readonly jobId: string }
  | { readonly kind: "dispatched"; readonly jobId: string; readonly trajectoryId: string }
  | { readonly kind: "waiting"; readonly jobId: string; readonly reason: string }
  | { readonly kind: "placed"; readonly jobId: string; readonly allocId: string; readonly node: string }
  | {
      readonly kind: "task-event";
      readonly jobId: string;
      readonly allocId: string;
      readonly task: string;
      readonly type: string;
      readonly message: string;
    }
  | { readonly kind: "ready"; readonly jobId: string; readonly address: string; readonly ms: number }
  | { readonly kind: "purged"; readonly jobId: string };

/** One line of text for a progress event. */
export function formatProgress(p: NomadProgress): string {
  switch (p.kind) {
    case "swept":
      return `nomad: purged ${p.purged.length} orphaned job(s) of earlier runs`;
    case "registered":
      return `nomad: registered ${p.jobId}`;
    case "dispatched":
      return `nomad: dispatched ${p.jobId} for trajectory ${p.trajectoryId}`;
    case "waiting":
      return `nomad: ${p.jobId} waiting for placement: ${p.reason}`;
    case "placed":
      return `nomad: ${p.jobId} placed as ${p.allocId.slice(0, 8)} on ${p.node}`;
    case "task-event":
      return `nomad: ${p.allocId.slice(0, 8)} ${p.task}: ${p.type}${p.message ? `: ${p.message}` : ""}`;
    case "ready":
      return `nomad: ${p.jobId} core answers at ${p.address} (${p.ms} ms)`;
    case "purged":
      return `nomad: purged ${p.jobId}`;
  }
}
