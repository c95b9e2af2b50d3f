import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { execa } from "execa";
import { afterAll, describe, expect, it } from "vitest";
import { flakegymCacheRoot } from "../../packages/runner/src/cache-root.mjs";
import { debianBaseOf, hostAptSources } from "../../packages/runner/src/tasks/debian-base.js";
import { buildRootfs, chrootArgs } from "../../packages/runner/src/tasks/dockerfile-build.js";
import {
  type BuildPlan,
  planDockerfile,
  refusalText,
} from "../../packages/runner/src/tasks/dockerfile-plan.js";

/**
 * The Harbor cookbook's Dockerfiles built here as Harbor would build them, without an image
 * registry: each FROM served by a Debian base made with mmdebstrap (cached by content under the
 * flakegym cache), the RUN/COPY/ENV/WORKDIR lines executed on it (network at build time only), then
 * checked offline in a chroot of the result. Heavy (the first base takes minutes): runs only with
 * FLAKEGYM_HARBOR_ROOTFS=1 (`npm run test:harbor-rootfs`), as root with mmdebstrap and bwrap, and a
 * copy of the cookbook (FLAKEGYM_HARBOR_COOKBOOK, or a fetched mirror in a parent directory).
 */

const MIRROR = join(".mirror", "harbor-framework+harbor-cookbook", "repo");
let scratch: string | undefined;

function recipes(): string | undefined {
  const env = process.env.FLAKEGYM_HARBOR_COOKBOOK;
  if (env && existsSync(join(env, "simple-task"))) return env;
  for (let d = dirname(fileURLToPath(import.meta.url)); d !== dirname(d); d = dirname(d)) {
    const git = join(d, MIRROR);
    if (!existsSync(git)) continue;
    scratch = mkdtempSync(join(tmpdir(), "flakegym-cookbook-"));
    const tar = execFileSync("git", ["--git-dir", git, "archive", "HEAD", "harbor_cookbook/recipes"], {
      maxBuffer: 64 << 20,
    });
    execFileSync("tar", ["-x", "-C", scratch], { input: tar });
    return join(scratch, "harbor_cookbook", "recipes");
  }
  return undefined;
}

const has = (cmd: string) => {
  try {
    execFileSync("sh", ["-c", `command -v ${cmd}`]);
    return true;
  } catch {
    return false;
  }
};
const dir = process.env.FLAKEGYM_HARBOR_ROOTFS === "1" ? recipes() : undefined;
const why =
  process.env.FLAKEGYM_HARBOR_ROOTFS !== "1"
    ? "set FLAKEGYM_HARBOR_ROOTFS=1 (npm run test:harbor-rootfs): it builds Debian root filesystems (minutes)"
    : process.getuid?.() !== 0
      ? "needs root (mmdebstrap --mode=root, the build's chroot)"
      : !has("mmdebstrap") || !has("bwrap")
        ? "mmdebstrap or bwrap is missing: run scripts/ensure-system-deps"
        : dir === undefined
          ? "no Harbor cookbook copy: set FLAKEGYM_HARBOR_COOKBOOK or fetch github:harbor-framework/harbor-cookbook"
          : undefined;
if (why) console.log(`skipped the Harbor rootfs builds: ${why}`);
afterAll(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

/** Builds `<recipe>/<sub>Dockerfile` and runs `check` offline in it; returns what happened. */
async function buildAndCheck(recipe: string, sub: string, check: string): Promise<string> {
  const context = join(dir!, recipe, "environment", sub);
  const plan = planDockerfile(readFileSync(join(context, "Dockerfile"), "utf8"));
  if ("refusals" in plan) return `refused: ${plan.refusals.map(refusalText).join("; ")}`;
  const { suite } = await hostAptSources();
  const base = debianBaseOf(plan.image, suite);
  if ("refused" in base) return `refused: ${base.refused}`;
  const t0 = Date.now();
  const built = await buildRootfs(plan as BuildPlan, base, {
    context,
    cacheRoot: flakegymCacheRoot(process.env),
    timeoutMs: 20 * 60_000,
    log: (l) => console.log(`[${recipe}${sub ? `/${sub}` : ""}] ${l}`),
  });
  const args = chrootArgs({
    rootfs: built.dir,
    cwd: built.workdir,
    env: built.env,
    user: "root",
    shell: check,
  });
  const r = await execa("bwrap", ["--unshare-net", ...args], {
    reject: false,
    stdin: "ignore",
    all: true,
    timeout: 60_000,
  });
  expect(r.exitCode, `${recipe}: ${check}\n${r.all}`).toBe(0);
  return `${built.servedBy}; built in ${Math.round((Date.now() - t0) / 1000)} s; check ok`;
}

describe("the Harbor cookbook's Dockerfiles built from Debian's packages", () => {
  const cases: [string, string, string][] = [
    ["simple-task", "", 'test -d /app && test "$(pwd)" = /app'],
    [
      "dns-blacklisting",
      "",
      "test -x /entrypoint.sh && test -s /etc/blacklist-patterns.txt && command -v curl && python3 -c 'import http.server'",
    ],
    ["multi-container", "", "command -v curl && command -v python3"],
    ["multi-container", "api-server", "python -c 'import flask' && test -f /app/server.py"],
    ["mcp-tools", "", "command -v pip3"],
    ["mcp-tools", "mcp-server", "true"],
    ["simulated-user", "user-server", "python -c 'import fastmcp, anthropic' && test -f /app/persona.md"],
    ["skills", "", "test -f /skills/generate-greeting/SKILL.md"],
  ];
  it.skipIf(why !== undefined)(
    "builds each, checks it offline, and refuses by line what it cannot honour",
    async () => {
      const rows: string[] = [];
      for (const [recipe, sub, check] of cases) {
        const out = await buildAndCheck(recipe, sub, check).catch((e: Error) => `failed: ${e.message}`);
        rows.push(`${recipe}${sub ? `/${sub}` : ""}: ${out}`);
        console.log(rows.at(-1));
      }
      // COPY --from=<uv image> cannot be honoured without a registry: refused naming the line
      expect(rows.find((r) => r.startsWith("mcp-tools/mcp-server"))).toMatch(/refused: line 3: COPY --from=/);
      expect(rows.filter((r) => r.includes("check ok")).length).toBe(cases.length - 1);
    },
    60 * 60_000,
  );

  it.skipIf(why !== undefined)(
    "a RUN line, root in the host's network namespace, cannot make a device node, mount, or change the network",
    async () => {
      const context = join(dir!, "simple-task", "environment");
      const plan = planDockerfile(readFileSync(join(context, "Dockerfile"), "utf8")) as BuildPlan;
      const base = debianBaseOf(plan.image, (await hostAptSources()).suite);
      if ("refused" in base) throw new Error(base.refused);
      const built = await buildRootfs(plan, base, {
        context,
        cacheRoot: flakegymCacheRoot(process.env),
        timeoutMs: 20 * 60_000,
      });
      const attempt = async (shell: string) =>
        (
          await execa("bwrap", chrootArgs({ rootfs: built.dir, cwd: "/", env: {}, user: "root", shell }), {
            reject: false,
            stdin: "ignore",
            all: true,
            timeout: 60_000,
          })
        ).exitCode;
      // each would succeed with root's full capability set (CAP_MKNOD, CAP_SYS_ADMIN, CAP_NET_ADMIN)
      expect(await attempt("mknod /tmp/disk b 8 0")).not.toBe(0);
      expect(await attempt("mount -t tmpfs none /mnt")).not.toBe(0);
      expect(
        await attempt(
          // writes the value it read: harmless even where it would win
          'v=$(cat /proc/sys/net/ipv4/ip_forward) && echo "$v" > /proc/sys/net/ipv4/ip_forward',
        ),
      ).not.toBe(0);
      // what package installs need still works
      expect(
        await attempt(
          "chown 1:1 /tmp && chown 0:0 /tmp && setpriv --reuid=65534 --regid=65534 --clear-groups true",
        ),
      ).toBe(0);
    },
    30 * 60_000,
  );
});
