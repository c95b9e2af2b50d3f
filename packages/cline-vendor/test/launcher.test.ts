/**
 * Launcher error paths with fixture cores (a crashing one, a silent one). Starting, driving and
 * stopping the real core is covered by tests/integration/cline.
 */
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { ClineVendorError } from "../src/errors.js";
import { launchClineCore } from "../src/launcher.js";
import { resolveClinePackage } from "../src/paths.js";
import { findProcesses, makeTempDir } from "./helpers.js";

const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));

async function dirs(root: string) {
  const d = { workspace: join(root, "ws"), configDir: join(root, "config"), home: join(root, "home") };
  await mkdir(d.workspace, { recursive: true });
  return d;
}

describe("launchClineCore error paths", () => {
  it("a core that dies at startup → E_CLINE_START with the tail of core.log, nothing left running", async () => {
    await using tmp = await makeTempDir();
    const d = await dirs(tmp.path);
    const pkg = { ...resolveClinePackage(), coreJs: fixture("crash-core.mjs") };
    const err = await launchClineCore({ ...d, clinePackage: pkg, startTimeoutMs: 20_000 }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ClineVendorError);
    expect(err).toMatchObject({ code: "E_CLINE_START" });
    expect((err as Error).message).toContain("exited while starting");
    expect((err as Error).message).toContain("boom-marker-5150");
    expect((err as ClineVendorError).hint).toContain("doctor");
    expect(await findProcesses(tmp.path)).toEqual([]);
  });

  it("a core that never answers → bounded start timeout naming the address, nothing left running", async () => {
    await using tmp = await makeTempDir();
    const d = await dirs(tmp.path);
    const pkg = { ...resolveClinePackage(), coreJs: fixture("silent-core.mjs") };
    const t0 = Date.now();
    const err = await launchClineCore({ ...d, clinePackage: pkg, startTimeoutMs: 1_500 }).catch(
      (e: unknown) => e,
    );
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect(err).toMatchObject({ code: "E_CLINE_START" });
    expect((err as Error).message).toMatch(/did not answer within 1500 ms/);
    expect((err as Error).message).toContain("silent-core-marker");
    expect(await findProcesses(tmp.path)).toEqual([]);
  });

  it("an abort during start stops everything and rejects with the reason", async () => {
    await using tmp = await makeTempDir();
    const d = await dirs(tmp.path);
    const pkg = { ...resolveClinePackage(), coreJs: fixture("silent-core.mjs") };
    const err = await launchClineCore({
      ...d,
      clinePackage: pkg,
      startTimeoutMs: 30_000,
      signal: AbortSignal.timeout(500),
    }).catch((e: unknown) => e);
    expect((err as Error).name).toBe("TimeoutError");
    expect(await findProcesses(tmp.path)).toEqual([]);
  });

  it("refuses a missing workspace", async () => {
    await using tmp = await makeTempDir();
    await expect(
      launchClineCore({
        workspace: join(tmp.path, "nope"),
        configDir: join(tmp.path, "c"),
        home: join(tmp.path, "h"),
      }),
    ).rejects.toMatchObject({ code: "E_CLINE_ARGUMENT" });
  });
});
