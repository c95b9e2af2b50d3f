/**
 * The kernel's same-page merging settings for a bench run: `--pages-to-scan N` sets
 * /sys/kernel/mm/ksm/pages_to_scan for the run and puts the old value back after, whatever happens.
 */
import { readFile, writeFile } from "node:fs/promises";

const KSM = "/sys/kernel/mm/ksm";

/** A ksm setting's text, "?" when the kernel has none. */
export const ksmFile = (f: string) =>
  readFile(`${KSM}/${f}`, "utf8").then(
    (t) => t.trim(),
    () => "?",
  );

/** One line: run, pages_to_scan, sleep_millisecs. */
export async function ksmSettings(): Promise<string> {
  return `run ${await ksmFile("run")}, pages_to_scan ${await ksmFile("pages_to_scan")}, sleep_millisecs ${await ksmFile("sleep_millisecs")}`;
}

/** Runs `fn` with pages_to_scan set to `pages` (undefined: as set), restoring the old value after. */
export async function withPagesToScan<T>(pages: number | undefined, fn: () => Promise<T>): Promise<T> {
  if (pages === undefined) return await fn();
  const before = await ksmFile("pages_to_scan");
  await writeFile(`${KSM}/pages_to_scan`, String(pages));
  try {
    return await fn();
  } finally {
    if (before !== "?") await writeFile(`${KSM}/pages_to_scan`, before);
  }
}
