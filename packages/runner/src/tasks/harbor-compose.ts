import { parse as parseYaml } from "yaml";
import { z } from "zod";
import type { HarborProblem } from "./harbor.js";

/**
 * A Harbor task's Docker Compose file (services beside the task's `main` container). flakegym runs
 * one sandbox per trajectory and starts no services beside it yet, so such a task is refused — naming
 * each service that could not be started and what it would have been built from. Pure.
 */

const ComposeService = z
  .object({
    build: z.union([z.string(), z.object({ context: z.string().optional() }).passthrough()]).optional(),
    image: z.string().optional(),
  })
  .passthrough();
const ComposeFile = z.object({ services: z.record(z.string(), ComposeService.nullable()) }).passthrough();

/** What a service is made from, for the refusal. Pure. */
function madeOf(s: z.infer<typeof ComposeService> | null): string {
  if (!s) return "no build or image";
  if (typeof s.build === "string") return `build ${s.build}`;
  if (s.build?.context) return `build ${s.build.context}`;
  return s.image ? `image ${s.image}` : "no build or image";
}

/** The refusal of a compose environment, naming its services (or why the file cannot be read). Pure. */
export function composeProblem(field: string, text: string): HarborProblem {
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch (err) {
    return { field, reason: `is not valid YAML: ${(err as Error).message.split("\n")[0]}` };
  }
  const r = ComposeFile.safeParse(raw);
  if (!r.success)
    return { field, reason: "has no `services` map (a Docker Compose file lists its services there)" };
  const sidecars = Object.entries(r.data.services).filter(([name]) => name !== "main");
  if (sidecars.length === 0)
    return {
      field,
      reason:
        "overrides Harbor's main container through Docker Compose, which flakegym does not read: move what it sets into the Dockerfile",
    };
  const named = sidecars.map(([name, s]) => `'${name}' (${madeOf(s)})`).join(", ");
  return {
    field,
    reason: `service ${named} could not be started: flakegym runs one sandbox per trajectory and starts no services beside it (a pod per trajectory is not built yet, on either backend), so the task's ${sidecars.length === 1 ? "service" : "services"} would be missing: not imported. To run it here, install ${sidecars.length === 1 ? "the service" : "the services"} in environment/Dockerfile and start ${sidecars.length === 1 ? "it" : "them"} from tests/test.sh (or drop the file if no test needs ${sidecars.length === 1 ? "it" : "them"})`,
  };
}
