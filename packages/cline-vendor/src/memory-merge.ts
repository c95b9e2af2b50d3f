import { existsSync, readFileSync } from "node:fs";
import { release } from "node:os";
import { fileURLToPath } from "node:url";
import { ClineVendorError, ErrorCode } from "./errors.js";

/**
 * Same-page merging for the Cline core (issue 32). Identical cores hold identical pages (the 45 MB
 * bundle's source is a 91 MB two-byte string in every core's heap); the kernel's same-page merging
 * (KSM) can keep one copy of each, copy-on-write, once a process opts in with
 * `prctl(PR_SET_MEMORY_MERGE, 1)` (Linux ≥ 6.4; inherited across fork and exec). Node has no prctl,
 * so the core is started through a two-line Python helper that sets it and execs Node.
 */

/** The helper: `python3 merge-memory-exec.py <program> [args…]` sets PR_SET_MEMORY_MERGE, then execs. */
export const MERGE_MEMORY_EXEC_PATH = fileURLToPath(
  new URL("../supervisor/merge-memory-exec.py", import.meta.url),
);
/** The interpreter the helper runs with: the system's, which a sandbox sees under its read-only /usr. */
export const SYSTEM_PYTHON = "/usr/bin/python3";
/** The opt-out: `FLAKEGYM_CORE_MEMORY_MERGE=0` starts cores as before (no merging). */
export const MEMORY_MERGE_ENV = "FLAKEGYM_CORE_MEMORY_MERGE";
const KSM_RUN = "/sys/kernel/mm/ksm/run";

export type MemoryMergeDecision =
  | { readonly on: true; readonly prefix: readonly string[] }
  | { readonly on: false; readonly reason: string };

/** What the decision depends on, read from the machine by {@link probeMemoryMerge}. */
export interface MemoryMergeFacts {
  /** The caller's explicit choice (LaunchOptions.memoryMerge); wins over the environment. */
  readonly requested?: boolean;
  /** The value of FLAKEGYM_CORE_MEMORY_MERGE, if set. */
  readonly envValue?: string;
  readonly platform: string;
  /** `uname -r`, e.g. "6.18.44-fc". */
  readonly kernelRelease: string;
  readonly pythonPresent: boolean;
  /** Contents of /sys/kernel/mm/ksm/run ("0", "1", "2"), undefined when absent. */
  readonly ksmRun?: string;
}

/** "on"/"1"/"true" → true, "off"/"0"/"false" → false; throws naming the variable otherwise. */
export function parseSwitch(name: string, value: string): boolean {
  const v = value.trim().toLowerCase();
  if (["1", "on", "true", "yes"].includes(v)) return true;
  if (["0", "off", "false", "no"].includes(v)) return false;
  throw new ClineVendorError(
    ErrorCode.InvalidArgument,
    `${name}='${value}' is not a switch (expected 1/on/true or 0/off/false)`,
    { hint: `unset ${name} for the default, or set it to 0 to turn it off` },
  );
}

/** {@link parseSwitch} for FLAKEGYM_CORE_MEMORY_MERGE. */
export function parseMemoryMergeEnv(value: string): boolean {
  return parseSwitch(MEMORY_MERGE_ENV, value);
}

/**
 * Why a core feature switched by the caller (`requested`) or by env `name` (`value`) is off, or
 * undefined when it is wanted (default on). Pure; throws on a value that is not a switch.
 */
export function switchedOffReason(
  requested: boolean | undefined,
  name: string,
  value: string | undefined,
): string | undefined {
  const wanted = requested ?? (value !== undefined ? parseSwitch(name, value) : true);
  if (wanted) return undefined;
  return requested === false ? "turned off by the caller" : `turned off by ${name}=${value}`;
}

/** Kernel release "6.18.44-x" → [6, 18]; [0, 0] when it cannot be read. */
function kernelVersion(release: string): [number, number] {
  const m = /^(\d+)\.(\d+)/.exec(release);
  return m ? [Number(m[1]), Number(m[2])] : [0, 0];
}

/** Pure: whether a core starts with same-page merging, and if not, why (for logs and the doctor). */
export function decideMemoryMerge(f: MemoryMergeFacts): MemoryMergeDecision {
  const off = switchedOffReason(f.requested, MEMORY_MERGE_ENV, f.envValue);
  if (off) return { on: false, reason: off };
  if (f.platform !== "linux") return { on: false, reason: `same-page merging is Linux only (${f.platform})` };
  const [major, minor] = kernelVersion(f.kernelRelease);
  if (major < 6 || (major === 6 && minor < 4))
    return { on: false, reason: `kernel ${f.kernelRelease} has no PR_SET_MEMORY_MERGE (needs ≥ 6.4)` };
  if (f.ksmRun !== "1")
    return {
      on: false,
      reason: `the kernel's same-page merging is not running (${KSM_RUN} is ${f.ksmRun ?? "absent"}; as root: echo 1 > ${KSM_RUN}, which scripts/ensure-system-deps does)`,
    };
  if (!f.pythonPresent)
    return { on: false, reason: `${SYSTEM_PYTHON} is absent (the helper that sets prctl)` };
  return { on: true, prefix: [SYSTEM_PYTHON, MERGE_MEMORY_EXEC_PATH] };
}

/** Reads the facts from this machine and decides. */
export function probeMemoryMerge(
  requested?: boolean,
  env: NodeJS.ProcessEnv = process.env,
): MemoryMergeDecision {
  let ksmRun: string | undefined;
  try {
    ksmRun = readFileSync(KSM_RUN, "utf8").trim();
  } catch {
    ksmRun = undefined;
  }
  const envValue = env[MEMORY_MERGE_ENV];
  return decideMemoryMerge({
    ...(requested !== undefined ? { requested } : {}),
    ...(envValue !== undefined && envValue !== "" ? { envValue } : {}),
    platform: process.platform,
    kernelRelease: release(),
    pythonPresent: existsSync(SYSTEM_PYTHON),
    ...(ksmRun !== undefined ? { ksmRun } : {}),
  });
}
