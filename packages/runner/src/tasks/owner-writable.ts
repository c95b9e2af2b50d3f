import { execa } from "execa";
import { FlakegymError } from "../errors.js";

/**
 * Makes every file and directory of a copied tree writable by its owner, touching only those that
 * are not (a copy from the Nix store keeps the store's 0444/0555 modes: a fork of it could not take
 * the hidden tests, nor the agent write its files). Symbolic links are neither followed nor changed.
 * Never run on the store itself: only on the runner's own copies (snapshot cache, image trees).
 */
export async function makeOwnerWritable(dir: string, signal?: AbortSignal): Promise<void> {
  const r = await execa(
    "find",
    [dir, "!", "-type", "l", "!", "-perm", "-u+w", "-exec", "chmod", "u+w", "{}", "+"],
    {
      reject: false,
      stdin: "ignore",
      timeout: 10 * 60_000,
      ...(signal ? { cancelSignal: signal } : {}),
    },
  );
  if (r.exitCode !== 0) {
    throw new FlakegymError("E_SNAPSHOT", `making ${dir} writable by its owner failed: ${r.stderr.trim()}`, {
      hint: "the runner must own the trees it copies: run it as the user that owns the flakegym cache",
    });
  }
}
