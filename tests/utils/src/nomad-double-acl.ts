/**
 * Nomad's ACL for the routes the double serves, each capability as Nomad checks it:
 * namespace capabilities from acl/policy.go (`NamespaceCapabilityListJobs` "list-jobs", ReadJob
 * "read-job", SubmitJob "submit-job", DispatchJob "dispatch-job", ReadLogs "read-logs", ReadFS
 * "read-fs", AllocLifecycle "alloc-lifecycle"), checked by the job, alloc, eval and client-fs
 * endpoints (`aclObj.AllowNsOp(ns, …)` in nomad/job_endpoint.go, alloc_endpoint.go,
 * eval_endpoint.go, client/fs_endpoint.go, client/alloc_endpoint.go); `GET /v1/agent/self` needs
 * `agent:read` (command/agent/agent_endpoint.go `AgentSelfRequest`: `aclObj.AllowAgentRead()`);
 * `/v1/status/*` needs no token at all (command/agent/status_endpoint.go checks none). A denied
 * call is 403 "Permission denied" (`structs.ErrPermissionDenied`). Pure.
 */

/** What one token may do. `management` may do everything (a bootstrap/management token). */
export interface DoubleAclGrant {
  readonly management?: boolean;
  /** Namespace → its capabilities (fine-grained names as in a Nomad policy's `capabilities`). */
  readonly namespaces?: Readonly<Record<string, readonly string[]>>;
  /** The policy's `agent { policy = … }`. */
  readonly agent?: "read" | "write" | "deny";
}

/** The token flakegym's docs tell operators to create (docs/reference/nomad.md): no agent:read. */
export const DOCUMENTED_CAPABILITIES = [
  "submit-job",
  "dispatch-job",
  "read-job",
  "list-jobs",
  "read-logs",
  "read-fs",
] as const;

export type Requirement =
  | { readonly kind: "none" }
  | { readonly kind: "namespace"; readonly capability: string }
  | { readonly kind: "agent"; readonly level: "read" | "write" }
  | { readonly kind: "management" };

/** The capability a request needs, by method and path. */
export function requirementOf(method: string, path: string): Requirement {
  const ns = (capability: string): Requirement => ({ kind: "namespace", capability });
  if (path.startsWith("/v1/status/")) return { kind: "none" };
  if (path === "/v1/agent/self") return { kind: "agent", level: "read" };
  if (path === "/v1/jobs") return method === "GET" ? ns("list-jobs") : ns("submit-job");
  if (path.startsWith("/v1/job/")) {
    if (path.endsWith("/dispatch")) return ns("dispatch-job");
    return method === "GET" ? ns("read-job") : ns("submit-job");
  }
  if (/^\/v1\/(allocations|allocation\/|evaluations|evaluation\/)/.test(path)) return ns("read-job");
  if (path === "/v1/event/stream") return ns("read-job");
  if (path.startsWith("/v1/client/fs/logs/")) return ns("read-logs");
  if (path.startsWith("/v1/client/fs/")) return ns("read-fs");
  if (path.startsWith("/v1/client/allocation/") && path.endsWith("/signal")) return ns("alloc-lifecycle");
  return { kind: "management" };
}

/** Whether `grant` allows `req` in namespace `namespace`. */
export function allows(grant: DoubleAclGrant | undefined, req: Requirement, namespace: string): boolean {
  if (req.kind === "none") return true;
  if (!grant) return false;
  if (grant.management) return true;
  if (req.kind === "management") return false;
  if (req.kind === "agent") {
    return grant.agent === "write" || (grant.agent === "read" && req.level === "read");
  }
  const caps = grant.namespaces?.[namespace] ?? grant.namespaces?.["*"] ?? [];
  return !caps.includes("deny") && caps.includes(req.capability);
}
