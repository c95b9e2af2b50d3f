import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { loadHarbor } from "../../src/tasks/harbor-dir.js";
import { findBwrap } from "../../src/workers/local/shape.js";

/**
 * Real Harbor task directories: the Harbor cookbook's recipes (github harbor-framework/harbor-cookbook),
 * read from a local copy that is never committed here — `FLAKEGYM_HARBOR_COOKBOOK` (a recipes
 * directory, or a git dir whose HEAD holds harbor_cookbook/recipes), else a fetched mirror
 * `.mirror/harbor-framework+harbor-cookbook/repo` found in a parent directory of this checkout.
 */

const MIRROR = join(".mirror", "harbor-framework+harbor-cookbook", "repo");

function findCookbook(): string | undefined {
  const env = process.env.FLAKEGYM_HARBOR_COOKBOOK;
  if (env) return env;
  for (let d = dirname(fileURLToPath(import.meta.url)); d !== dirname(d); d = dirname(d))
    if (existsSync(join(d, MIRROR))) return join(d, MIRROR);
  return undefined;
}

let scratch: string | undefined;
/** The recipes directory: as given, or extracted from the git dir's HEAD. */
function recipesDir(src: string): string | undefined {
  if (existsSync(join(src, "simple-task", "task.toml"))) return src;
  try {
    scratch = mkdtempSync(join(tmpdir(), "flakegym-cookbook-"));
    const tar = execFileSync("git", ["--git-dir", src, "archive", "HEAD", "harbor_cookbook/recipes"], {
      maxBuffer: 64 << 20,
    });
    execFileSync("tar", ["-x", "-C", scratch], { input: tar });
    return join(scratch, "harbor_cookbook", "recipes");
  } catch {
    return undefined;
  }
}

const src = findCookbook();
const recipes = src ? recipesDir(src) : undefined;
const why =
  src === undefined
    ? "no Harbor cookbook copy: set FLAKEGYM_HARBOR_COOKBOOK to its recipes dir (or fetch github:harbor-framework/harbor-cookbook)"
    : recipes === undefined
      ? `cannot read harbor_cookbook/recipes from ${src}`
      : findBwrap() === undefined
        ? "bubblewrap is not installed (solve.sh runs only in a sandbox)"
        : undefined;
if (why) console.log(`skipped the real Harbor cookbook import: ${why}`);
afterAll(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

describe("the Harbor cookbook's recipes (real task dirs)", () => {
  it.skipIf(why !== undefined)(
    "imports the single-container ones, with solve.sh as the oracle, and refuses the rest by name",
    async () => {
      const h = await loadHarbor(recipes!);
      const byId = Object.fromEntries(h.tasks.map((t) => [t.spec.id, t]));
      expect(Object.keys(byId).sort()).toEqual(["multi-reward", "simple-task", "skills"]);
      expect(String(byId["simple-task"]!.files["solution.patch"])).toMatch(
        /\+\+\+ b\/hello\.txt\n@@ -0,0 \+1 @@\n\+Hello, world!/,
      );
      expect(byId["simple-task"]!.spec).toMatchObject({ profile: "dev-base", workdir: "/app" });
      expect(byId.skills!.spec.mounts).toEqual([{ dir: "container/skills", at: "/skills" }]);
      expect(Object.keys(byId.skills!.files)).toContain("container/skills/generate-greeting/SKILL.md");
      expect(byId["multi-reward"]!.spec.metadata?.harbor_environment).toMatch(
        /^FROM ubuntu:24\.04 served by .*apt-get install python3 served by the Debian packages/,
      );
      const rejected = Object.fromEntries(h.rejected.map((e) => [e.id, `${e.field}: ${e.reason}`]));
      expect(rejected).toEqual({
        "computer-use-ubuntu": expect.stringMatching(/^environment\/docker-compose\.yaml: service 'desktop'/),
        "computer-use-windows": expect.stringMatching(
          /^environment\/docker-compose\.yaml: service 'desktop'/,
        ),
        "dns-blacklisting": expect.stringMatching(
          /^environment\/Dockerfile: ENTRYPOINT \["\/entrypoint\.sh"\]/,
        ),
        "mcp-tools": expect.stringMatching(
          /service 'mcp-server' \(build \.\/mcp-server\) could not be started/,
        ),
        "multi-container": expect.stringMatching(
          /service 'api-server' \(build \.\/api-server\) could not be started/,
        ),
        "multi-step": expect.stringMatching(/^task\.toml: steps: uses Harbor's multi-step layout/),
        "simulated-user": expect.stringMatching(
          /service 'user-server' \(build \.\/user-server\) could not be started/,
        ),
      });
    },
    120_000,
  );
});
