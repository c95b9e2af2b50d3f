import { existsSync } from "node:fs";

/**
 * Why a suite that boots warm-pool workers (real bubblewrap, overlay mounts) cannot run here, or ""
 * when it can; a reason is printed once, naming the suite.
 */
export function warmPoolSkip(suite: string): string {
  const reason = !existsSync("/usr/bin/bwrap")
    ? "bubblewrap (bwrap) is not installed"
    : process.getuid?.() !== 0
      ? "the warm pool needs root (mounts)"
      : "";
  if (reason) console.warn(`${suite} skipped: ${reason}`);
  return reason;
}
