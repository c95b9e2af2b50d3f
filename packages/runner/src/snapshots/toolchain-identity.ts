import { randomBytes } from "node:crypto";
import { mkdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { loadProfiles, type ProfileId } from "@flakegym/profiles";
import { FlakegymError } from "../errors.js";
import { runSandboxed } from "../workers/local/sandbox.js";
import { prepareShape } from "../workers/local/shape.js";

/** A profile's toolchain identity (part of every snapshot key): its tools' `--version` lines in the sandbox. */

const identities = new Map<string, Promise<string[]>>();

/** `--version` outputs of the profile's tools inside the sandbox (profiles.json `smoke`), once per process. */
export function toolchainIdentity(profile: ProfileId, scratch: string, unsafe?: boolean): Promise<string[]> {
  let p = identities.get(profile);
  if (!p) {
    p = (async () => {
      const dir = join(scratch, `identity-${process.pid}-${randomBytes(4).toString("hex")}`);
      await mkdir(join(dir, "ws"), { recursive: true });
      const prepared = await prepareShape({
        id: `identity-${process.pid}-${randomBytes(4).toString("hex")}`,
        profile,
        workspace: join(dir, "ws"),
        stateDir: join(dir, "state"),
        limits: { memoryMb: 1024, pids: 128, cpuSeconds: 60, diskMb: 64 },
        network: "none",
        ...(unsafe ? { unsafeNoSandbox: true } : {}),
      });
      try {
        const out: string[] = [];
        for (const cmd of loadProfiles().profiles[profile].smoke) {
          const r = await runSandboxed(
            prepared.shape,
            ["/bin/sh", "-c", cmd],
            { timeoutMs: 30_000, hostCwd: join(dir, "ws") },
            prepared.env,
          );
          if (r.exitCode !== 0) {
            throw new FlakegymError(
              "E_TOOLCHAIN",
              `profile '${profile}': \`${cmd}\` failed in the sandbox (exit ${r.exitCode}): ${(r.stderr || r.stdout).trim().slice(-500)}`,
              {
                hint: `install the ${profile} toolchain (sh scripts/ensure-system-deps), or run this task where its profile's tools exist`,
              },
            );
          }
          out.push(`${cmd}: ${r.stdout.trim().split("\n")[0]}`);
        }
        return out;
      } finally {
        await prepared.dispose();
        await rm(dir, { recursive: true, force: true });
      }
    })();
    p.catch(() => identities.delete(profile));
    identities.set(profile, p);
  }
  return p;
}
