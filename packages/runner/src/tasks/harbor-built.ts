import { join } from "node:path";
import { type DebianBase, debianBaseOf, hostAptSources } from "./debian-base.js";
import { type BuiltRootfs, buildRootfs } from "./dockerfile-build.js";
import { type BuildPlan, containerPath, planDockerfile, refusalText } from "./dockerfile-plan.js";
import {
  type Environment,
  type HarborProblem,
  type HarborTaskToml,
  REWARD_JSON_JUDGE,
  REWARD_TXT_JUDGE,
} from "./harbor.js";
import { HARBOR_DIR } from "./harbor-test-paths.js";
import { impliedWorkdir, impliedWorkdirNote, scriptTextsOf } from "./harbor-workdir.js";
import { shellQuote } from "./task-spec.js";

/**
 * A Harbor task's environment built from its own Dockerfile (`tasks import --build-env`): the FROM
 * served by a Debian base (debian-base.ts), every RUN/COPY/ENV/WORKDIR/USER line executed on it
 * (dockerfile-build.ts), and the result — cached by content — is the system the oracle, the agent
 * and the verifier see (`metadata.harbor_rootfs`). What lands under the final WORKDIR from the
 * build context is still the workspace (the task's repository). Refused by name: a line the build
 * cannot honour, an ENTRYPOINT (it would have to run at each sandbox's start), an image no Debian
 * base serves.
 */

/**
 * The packages added to every Harbor base: the verifier's pytest (Harbor's test.sh fetches it with
 * uv at test time; the sandbox is offline then) and git (the scorer applies the agent's diff with it
 * inside the sandbox).
 */
export const VERIFIER_PACKAGES = ["git", "python3", "python3-pytest"] as const;

/** The base for `image` with the verifier's packages. Pure. */
export function harborBaseOf(image: string, suite: string): DebianBase | { readonly refused: string } {
  const b = debianBaseOf(image, suite);
  if ("refused" in b) return b;
  return {
    ...b,
    packages: [...new Set([...b.packages, ...VERIFIER_PACKAGES])].sort(),
    differences: `${b.differences}; python3-pytest added for the offline verifier, git for the scorer`,
  };
}

/** The workspace files of a plan: COPY sources whose destination lies under the final WORKDIR. Pure. */
export function workspaceCopies(plan: BuildPlan): Environment["copies"] {
  const wd = plan.workdir;
  const prefix = wd === "/" ? "/" : `${wd}/`;
  const out: { from: string; to: string; intoDir: boolean }[] = [];
  for (const s of plan.steps) {
    if (s.kind !== "copy") continue;
    const dest = containerPath(s.dest, "/");
    const to = dest === wd ? "." : dest.startsWith(prefix) ? dest.slice(prefix.length) : undefined;
    if (to === undefined) continue;
    for (const from of s.sources) out.push({ from, to, intoDir: s.intoDir || to === "." });
  }
  return out;
}

/** The plan of a Dockerfile as a built environment, or why not. Pure. */
export function builtPlanOf(
  dockerfile: string,
  workdirOverride?: string,
  implied?: string,
): BuildPlan | HarborProblem {
  const field = "environment/Dockerfile";
  const planned = planDockerfile(dockerfile);
  // task.toml's environment.workdir is where Harbor runs the agent, the oracle and the verifier
  // without WORKDIR (and no override), the workspace the task's scripts name (harbor-workdir.ts)
  const wd = workdirOverride ?? ("refusals" in planned || planned.workdir !== "/" ? undefined : implied);
  const plan = "refusals" in planned || wd === undefined ? planned : { ...planned, workdir: wd };
  if ("refusals" in plan) return { field, reason: plan.refusals.map(refusalText).join("; ") };
  if (plan.entrypoint)
    return {
      field,
      reason: `ENTRYPOINT ${JSON.stringify(plan.entrypoint)}: runs at container start (Harbor starts the task's container with it, its CMD replaced by \`sleep infinity\`, so CMD is not run but ENTRYPOINT is: services, /etc edits); flakegym starts no entrypoint in the task's sandboxes (each command is a sandbox of its own, so a service it started would not outlive it), so what it sets up would be missing: move its setup into RUN lines, or start its service from tests/test.sh and solution/solve.sh`,
    };
  if (plan.workdir === "/")
    return {
      field,
      reason: "has no WORKDIR: the workspace needs a directory of its own (e.g. WORKDIR /app)",
    };
  return plan;
}

/** Builds (or finds cached) the environment of a task's Dockerfile. */
export async function builtEnvironment(
  dir: string,
  dockerfile: string,
  toml: HarborTaskToml,
  o: { cacheRoot: string; signal?: AbortSignal; log?: (line: string) => void },
): Promise<{ env: Environment; built: BuiltRootfs } | HarborProblem> {
  const implied = impliedWorkdir(await scriptTextsOf(dir));
  const plan = builtPlanOf(dockerfile, toml.environment.workdir, implied);
  if ("field" in plan) return plan;
  const usedImplied =
    toml.environment.workdir === undefined &&
    implied !== undefined &&
    !plan.steps.some((s) => s.kind === "workdir");
  const { suite } = await hostAptSources();
  const base = harborBaseOf(plan.image, suite);
  if ("refused" in base)
    return { field: "environment/Dockerfile", reason: `FROM ${plan.image}: ${base.refused}` };
  const timeoutMs = Math.max(toml.environment.build_timeout_sec ?? 600, 600) * 1000;
  const built = await buildRootfs(plan, base, {
    context: join(dir, "environment"),
    cacheRoot: o.cacheRoot,
    timeoutMs,
    ...(o.signal ? { signal: o.signal } : {}),
    ...(o.log ? { log: o.log } : {}),
  }).catch((err: Error) => ({
    field: "environment/Dockerfile",
    reason: `could not be built here: ${err.message}`,
  }));
  if ("field" in built) return built;
  const env: Environment = {
    // the toolchain is the built tree's, so no profile toolchain or default install is added
    profile: "dev-base",
    workdir: plan.workdir,
    copies: workspaceCopies(plan),
    mounts: [],
    install: [],
    image: plan.image,
    aptPackages: [],
    pipPytest: [],
  };
  const wdNote = usedImplied ? impliedWorkdirNote(plan.workdir) : "";
  return { env, built: { ...built, servedBy: `${built.servedBy}${uvServedText(plan)}${wdNote}` } };
}

/** The record of uv's image served by its PyPI wheel, for the substitution note ("" when none). Pure. */
export function uvServedText(plan: BuildPlan): string {
  const uv = plan.steps.flatMap((s) => (s.kind === "copy" && s.uv !== undefined ? [`line ${s.line}`] : []));
  return uv.length === 0
    ? ""
    : `; COPY --from=ghcr.io/astral-sh/uv (${uv.join(", ")}) served by PyPI's uv wheel (no image registry)`;
}

/** Where a task's built environment lives: `<cache>/harbor-rootfs/<key>`. */
export const rootfsDirOf = (cacheRoot: string, key: string) => join(cacheRoot, "harbor-rootfs", key);

/**
 * The verifier of a built environment, as Harbor runs it in the task's container: the hidden tests
 * (in the workspace at .harbor/tests) copied to /tests, a fresh /logs/verifier, test.sh run from
 * the WORKDIR with /tests and /logs at their real paths, the reward read from reward.txt (= 1) or
 * every reward.json key (≥ 1). Needs the container (root, a writable /: the local backend's with a
 * root runner, podman's); elsewhere it fails saying so. Pure.
 */
export function containerEvalCommand(workdir: string, verifierTimeoutSec?: number): string {
  const limit = verifierTimeoutSec ? `timeout -k 10 ${Math.ceil(verifierTimeoutSec)} ` : "";
  const needs =
    "flakegym: this Harbor task's verifier runs in its container (root, a writable /): run flakegym as root for the local backend, or use --backend podman";
  return [
    `[ "$(id -u)" = 0 ] && [ -w / ] || { echo ${shellQuote(needs)} >&2; exit 1; }`,
    `H="$PWD/${HARBOR_DIR}"`,
    "rm -rf /tests /logs/verifier && mkdir -p /tests /logs/verifier /logs/agent",
    `cp -a "$H/tests/." /tests/`,
    `cd ${shellQuote(workdir)}`,
    `${limit}bash /tests/test.sh </dev/null`,
    "V=/logs/verifier",
    `if [ -f "$V/reward.txt" ]; then ${REWARD_TXT_JUDGE}; else [ -f "$V/reward.json" ] && python3 -c ${shellQuote(REWARD_JSON_JUDGE)} "$V/reward.json"; fi`,
  ].join("; ");
}
