import { readFileSync } from "node:fs";

/**
 * Whether `uid` has an id in this user namespace, from /proc/self/uid_map's text (lines
 * `<inside> <outside> <count>`). A root whose namespace maps only itself (what `nix run` on a
 * private store runs its program in: Nix's chroot helper maps the caller's uid alone) cannot
 * chown to any other uid (EINVAL). Pure.
 */
export function uidMapped(uidMap: string, uid: number): boolean {
  return uidMap
    .split("\n")
    .map((l) => l.trim().split(/\s+/).map(Number))
    .some(
      ([inside, , count]) =>
        inside !== undefined && count !== undefined && uid >= inside && uid < inside + count,
    );
}

/** This process's /proc/self/uid_map (every uid mapped where there is no /proc). */
export const readUidMap = (): string => {
  try {
    return readFileSync("/proc/self/uid_map", "utf8");
  } catch {
    return "0 0 4294967295"; // no /proc: the initial namespace, every uid mapped
  }
};
