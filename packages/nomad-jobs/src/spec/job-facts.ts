import { assertNoSecrets } from "./guards.js";
import type { Job, Task, TaskGroup } from "./job.js";
import { networkModeProblem } from "./network-mode.js";
import { CLEAR_ENV } from "./worker-env.js";
import { META } from "./worker-names.js";
import { CLINE_CORE_MEMORY_MB, MIN_AGENT_HEADROOM_MB } from "./worker-resources.js";

/**
 * Checks a rendered job (ours or anyone's) against what Nomad does with it on a shared cluster:
 * the facts issue 33 found, each from Nomad's source (docs/reference/nomad.md). Independent of the builders,
 * so a builder change that loses one fails here. Pure: a job in, its problems out (each naming
 * the field), `[]` when it holds.
 */
export interface JobFactOptions {
  /**
   * The scheduler's memory oversubscription. Off (Nomad's default) `MemoryMB` is the hard limit and
   * `MemoryMaxMB` is ignored; on, `MemoryMaxMB` (when set) is. Default false.
   */
  readonly memoryOversubscription?: boolean;
}

export function workerJobFactProblems(job: Job, opts: JobFactOptions = {}): string[] {
  const agent = job.Meta?.[META.kind] === "agent";
  return job.TaskGroups.flatMap((g, gi) => [
    ...groupProblems(g, `TaskGroups[${gi}]`),
    ...(g.Tasks ?? []).flatMap((t, ti) =>
      taskProblems(t, g, `TaskGroups[${gi}].Tasks[${ti}]`, { agent, ...opts }),
    ),
  ]);
}

function groupProblems(g: TaskGroup, at: string): string[] {
  const out: string[] = [];
  // nomad/structs/structs.go TaskGroup.Disconnect; the reconciler replaces lost allocations unless Replace is false.
  if (g.Disconnect?.Replace !== false) {
    out.push(
      `${at}.Disconnect.Replace must be false: Nomad places a second worker for a lost allocation otherwise`,
    );
  }
  if (g.ReschedulePolicy && (g.ReschedulePolicy.Attempts !== 0 || g.ReschedulePolicy.Unlimited)) {
    out.push(
      `${at}.ReschedulePolicy must be Attempts 0, Unlimited false: a failed worker is the runner's to retry`,
    );
  }
  return out;
}

/**
 * The task `config` keys nomad-driver-podman accepts (its `taskConfigSpec`, config.go at e4a6006);
 * Nomad refuses a job whose task config names any other. (docker's `security_opt` is not one.)
 */
export const PODMAN_TASK_CONFIG_KEYS: ReadonlySet<string> = new Set(
  (
    "apparmor_profile args auth auth_soft_fail command cap_add cap_drop selinux_opts cpu_hard_limit " +
    "cpu_cfs_period devices entrypoint working_dir hostname image image_pull_timeout init init_path " +
    "labels logging memory_reservation memory_swap memory_swappiness network_mode extra_hosts " +
    "pids_limit port_map ports privileged socket sysctl tmpfs tty ulimit volumes force_pull " +
    "readonly_rootfs userns shm_size"
  ).split(" "),
);

function taskProblems(
  t: Task,
  g: TaskGroup,
  at: string,
  o: { agent: boolean; memoryOversubscription?: boolean },
): string[] {
  const out: string[] = [];
  const cfg = (t.Config ?? {}) as Record<string, unknown>;
  if (t.Driver === "podman")
    for (const k of Object.keys(cfg).filter((k) => !PODMAN_TASK_CONFIG_KEYS.has(k)))
      out.push(`${at}.Config.${k}: the podman driver has no such task option; Nomad refuses the job`);
  const memoryMb = t.Resources?.MemoryMB ?? 300;
  const maxMb = t.Resources?.MemoryMaxMB ?? 0;
  const hard = o.memoryOversubscription && maxMb > 0 ? maxMb : memoryMb;
  const floor = CLINE_CORE_MEMORY_MB + MIN_AGENT_HEADROOM_MB;
  if (o.agent && hard < floor) {
    out.push(
      `${at}.Resources: the hard memory limit is ${hard} MB (${o.memoryOversubscription ? "MemoryMaxMB" : "MemoryMB; MemoryMaxMB counts only with oversubscription"}), below the Cline core's ${CLINE_CORE_MEMORY_MB} MB + ${MIN_AGENT_HEADROOM_MB} MB`,
    );
  }
  try {
    assertNoSecrets(literalEnv(t.Env ?? {}), `${at}.Env`);
  } catch (err) {
    out.push((err as Error).message);
  }
  if (t.Driver === "docker" || t.Driver === "podman") {
    const mode = typeof cfg.network_mode === "string" ? cfg.network_mode : "";
    const problem = networkModeProblem(mode);
    if (problem) out.push(`${at}.Config.network_mode: ${problem}`);
  }
  if (t.Driver === "docker" || t.Driver === "podman") out.push(...hostMountProblems(cfg, at));
  if (t.Driver === "docker") {
    const disk = g.EphemeralDisk?.SizeMB ?? 300;
    const size = (cfg.storage_opt as { size?: unknown } | undefined)?.size;
    if (size !== `${disk}M`) {
      out.push(
        `${at}.Config.storage_opt.size is ${JSON.stringify(size)}, not "${disk}M": the container's writable layer (where /workspace lives) is not capped at the job's disk`,
      );
    }
  }
  if (t.Driver === "raw_exec" || t.Driver === "exec" || t.Driver === "nix") {
    const args = Array.isArray(cfg.args) ? cfg.args : [];
    if (args[0] !== "-c" || args[1] !== CLEAR_ENV) {
      out.push(
        `${at}.Config.args: not run under '${CLEAR_ENV}': the task inherits the Nomad client's environment`,
      );
    }
  }
  if (t.Driver === "raw_exec") {
    out.push(
      `${at}.Driver raw_exec isolates nothing (user, filesystem, network, processes): trusted workloads only`,
    );
  }
  return out;
}

/** A dispatch meta reference (`${NOMAD_META_x}`, e.g. the per-worker core token) is not a literal in the job. */
const META_REF = /^\$\{NOMAD_META_[A-Za-z0-9_]+\}$/;

function literalEnv(env: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter(([, v]) => !META_REF.test(v)));
}

/**
 * A container's ways to the host's files: `volumes` (host paths, both drivers) and docker `mount`
 * blocks other than tmpfs (bind, volume). Any of them reaches other trajectories' files or the
 * catalog's hidden tests on the client.
 */
function hostMountProblems(cfg: Record<string, unknown>, at: string): string[] {
  const out: string[] = [];
  if (Array.isArray(cfg.volumes) && cfg.volumes.length > 0) {
    out.push(`${at}.Config.volumes mounts host paths into the container: ${JSON.stringify(cfg.volumes)}`);
  }
  for (const key of ["mount", "mounts"]) {
    const mounts = Array.isArray(cfg[key]) ? (cfg[key] as { type?: string; target?: string }[]) : [];
    for (const m of mounts) {
      if ((m.type ?? "volume") !== "tmpfs")
        out.push(
          `${at}.Config.${key}: a ${m.type ?? "volume"} mount at ${m.target ?? "?"} reaches the host's files`,
        );
    }
  }
  return out;
}
