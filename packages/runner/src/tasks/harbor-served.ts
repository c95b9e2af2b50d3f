import { readFile } from "node:fs/promises";
import { execa } from "execa";
import { type Environment, type HarborProblem, PYTEST_DEBIAN_PACKAGE } from "./harbor.js";

/**
 * What serves a Harbor task's environment here. The sandbox binds this machine's system (/usr,
 * read-only) in place of the Dockerfile's FROM image (no image registry is reachable, and no root
 * filesystem is built from the Dockerfile yet), so the packages its RUN lines `apt-get install` must
 * already be installed in that system: each is checked with dpkg, and a missing one is refused by
 * name. The substitution is recorded (task metadata `harbor_environment` and an intake note).
 */

/** The Debian release of this machine's system, for the record. */
async function systemName(): Promise<string> {
  const v = await readFile("/etc/debian_version", "utf8").catch(() => undefined);
  return v === undefined ? "this machine's system" : `this machine's Debian ${v.trim()} system`;
}

/** The packages of `names` that dpkg does not report installed on this machine. */
export async function missingPackages(names: readonly string[]): Promise<string[]> {
  if (names.length === 0) return [];
  // biome-ignore lint/suspicious/noTemplateCurlyInString: dpkg-query's format syntax
  const r = await execa("dpkg-query", ["-W", "-f", "${Package} ${db:Status-Status}\\n", ...names], {
    reject: false,
    timeout: 30_000,
    stdin: "ignore",
  });
  const installed = new Set(
    r.stdout
      .split("\n")
      .map((l) => l.trim().split(" "))
      .filter(([, st]) => st === "installed")
      .map(([p]) => p!.split(":")[0]!),
  );
  return names.filter((n) => !installed.has(n));
}

/** The record of the substitution, or the packages the system lacks. */
export async function servedEnvironment(env: Environment): Promise<{ note: string } | HarborProblem> {
  const needed = [...env.aptPackages, ...(env.pipPytest.length > 0 ? [PYTEST_DEBIAN_PACKAGE] : [])];
  const missing = await missingPackages([...new Set(needed)]);
  const system = await systemName();
  if (missing.length > 0)
    return {
      field: "environment/Dockerfile",
      reason: `RUN apt-get install ${missing.join(" ")}: not installed in ${system}, which serves FROM ${env.image} here (no image registry; packages come from Debian's archive, not Ubuntu's): install them on this machine (apt-get install ${missing.join(" ")}) or build the image on a machine with a registry`,
    };
  return { note: substitutionNote(env, system) };
}

/** The manifest line of the substitution. Pure. */
export function substitutionNote(
  env: Pick<Environment, "image" | "aptPackages"> &
    Partial<Pick<Environment, "pipPytest" | "profile" | "envDropped">>,
  system: string,
): string {
  const apt =
    env.aptPackages.length > 0
      ? `; apt-get install ${env.aptPackages.join(" ")} served by the Debian packages installed there (Ubuntu's archive is unreachable)`
      : "";
  const pip =
    (env.pipPytest ?? []).length > 0
      ? `; pip install ${env.pipPytest!.join(" ")} served by Debian's ${PYTEST_DEBIAN_PACKAGE} (its own version; no ctrf plugin)`
      : "";
  const envs =
    (env.envDropped ?? []).length > 0
      ? `; ENV ${env.envDropped!.join(" ")} dropped (installer prompts and output buffering only)`
      : "";
  return `FROM ${env.image} served by ${system} (the ${env.profile ?? "dev-base"} profile: /usr bound read-only, no image registry)${apt}${pip}${envs}`;
}
