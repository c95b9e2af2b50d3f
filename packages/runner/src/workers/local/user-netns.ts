import { execa } from "execa";
import { droppingNetPrefix } from "./bwrap-args.js";

/**
 * Whether this host lets the runner (without root) make the scoring sandbox's dropping network
 * namespace inside a user namespace of its own: the real prefix runs `true` (user namespaces
 * allowed, `ip` can route the namespace's loopback). Asked once per process, bounded; a host that
 * says no keeps scoring loopback-only.
 */
let answer: Promise<boolean> | undefined;

export function userNetnsWorks(): Promise<boolean> {
  answer ??= execa(droppingNetPrefix(true)[0]!, [...droppingNetPrefix(true).slice(1), "true"], {
    reject: false,
    timeout: 15_000,
    stdin: "ignore",
  }).then(
    (r) => r.exitCode === 0,
    () => false,
  );
  return answer;
}
