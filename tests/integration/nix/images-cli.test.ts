import { execFileSync } from "node:child_process";
import { chmod, mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { makeTempDir, runCli } from "@flakegym/test-utils";
import { execa } from "execa";
import { describe, expect, it } from "vitest";
import { podmanImageId, podmanLoadStream } from "../../../packages/runner/src/images/nix-images.js";
import { snapshotImageExpr } from "../../../packages/runner/src/images/snapshot-expr.js";
import { nixBuildCapability } from "../../../packages/runner/src/images/targets.js";
import { snapshotSpecOfTask } from "../../../packages/runner/src/snapshots/spec.js";
import { loadTask } from "../../../packages/runner/src/tasks/catalog.js";
import { keyInputsOfSpec } from "./snapshot-sources.js";
import { createStubFlake, NIX_BASE_ARGS } from "./stub-flake.js";

// `flakegym images`: on a machine whose Nix cannot evaluate nixpkgs (this one: Debian's 2.8; no
// nixpkgs reachable) it must say so and exit 3; the load step (a stream script piped into
// `podman load`) runs for real on a docker-archive podman itself wrote.

const versionOf = (bin: string) => {
  try {
    return execFileSync(bin, ["--version"], { encoding: "utf8", timeout: 30_000 }).trim();
  } catch {
    return undefined;
  }
};
const SYSTEM_NIX = versionOf("nix");
const SYSTEM_NIX_CAN_BUILD = nixBuildCapability(SYSTEM_NIX).kind === "ok";
if (SYSTEM_NIX_CAN_BUILD)
  console.warn(`skipping the 'old Nix' case: this machine's ${SYSTEM_NIX} is >= 2.18`);
const HAVE_PODMAN = versionOf("podman") !== undefined;
if (!HAVE_PODMAN)
  console.warn("skipping the podman load case: podman is not installed (scripts/ensure-system-deps)");

describe("flakegym images without a Nix that can build nixpkgs", () => {
  it("exits 3 naming the missing nix and what to run", async () => {
    const r = await runCli(["images", "build", "--profile", "rust"], { env: { PATH: "/nonexistent" } });
    expect(r.exitCode).toBe(3);
    expect(r.stderr).toContain("cannot build the flake's images here: `nix` is not installed");
    expect(r.stderr).toContain("nix build .#<package> && ./result | podman load");
  });

  it.skipIf(SYSTEM_NIX === undefined || SYSTEM_NIX_CAN_BUILD)(
    "exits 3 with this machine's Nix older than 2.18 (skipped when it is newer or absent, printed above)",
    async () => {
      const r = await runCli(["images", "load", "--task", "ratatui-2148"]);
      expect(r.exitCode).toBe(3);
      expect(r.stderr).toMatch(/Nix\) 2\.\d+\.\d+ cannot evaluate nixpkgs \(it needs Nix >= 2\.18\)/);
    },
  );
});

describe.skipIf(!HAVE_PODMAN)("the load step: a stream script piped into podman load", () => {
  it("loads the streamed docker-archive and reads its image id", async () => {
    const tmp = await makeTempDir("flakegym-images-");
    const ref = `localhost/flakegym-images-test/s${process.pid}:t${Date.now()}`;
    try {
      // a real docker-archive, as streamLayeredImage's script writes one to stdout
      const root = join(tmp.path, "root");
      await mkdir(root);
      await writeFile(join(root, "hello"), "hi\n");
      await execa("tar", ["-C", root, "-cf", join(tmp.path, "rootfs.tar"), "."]);
      await execa("podman", ["import", join(tmp.path, "rootfs.tar"), ref], { timeout: 60_000 });
      await execa("podman", ["save", "--format", "docker-archive", "-o", join(tmp.path, "img.tar"), ref], {
        timeout: 60_000,
      });
      await execa("podman", ["rmi", ref], { timeout: 60_000 });
      const script = join(tmp.path, "stream");
      await writeFile(script, `#!/bin/sh\nexec cat '${join(tmp.path, "img.tar")}'\n`);
      await chmod(script, 0o755);

      const loaded = await podmanLoadStream(script, { timeoutMs: 120_000 });
      expect(loaded).toBe(ref);
      expect(await podmanImageId(loaded, 60_000)).toMatch(/^[0-9a-f]{64}$/);

      // a stream that fails is a load failure naming both exits
      const broken = join(tmp.path, "broken");
      await writeFile(broken, "#!/bin/sh\necho 'no archive' >&2\nexit 7\n");
      await chmod(broken, 0o755);
      await expect(podmanLoadStream(broken, { timeoutMs: 60_000 })).rejects.toThrow(/stream exit 7/);
    } finally {
      await execa("podman", ["rmi", "--force", ref], { reject: false, timeout: 60_000 });
      await tmp.cleanup();
    }
  });
});

describe.skipIf(SYSTEM_NIX === undefined)(
  "the expression `images build --task` builds for a catalog task",
  () => {
    it("calls lib.mkSnapshotImage with the runner's snapshot spec, for a task of every profile (evaluated against the stub)", async () => {
      // the flake's inputs pointed at the stubs in its own file, as getFlake takes no overrides
      const flake = await createStubFlake({
        mutate: async (dir) => {
          const file = join(dir, "flake.nix");
          const text = (await readFile(file, "utf8"))
            .replace('"github:NixOS/nixpkgs/nixos-26.05"', `"path:${dir}/tests/nix/stub-nixpkgs"`)
            .replace(/"github:ratatui\/ratatui\/[0-9a-f]{40}"/, `"path:${dir}/tests/nix/stub-ratatui"`);
          await writeFile(file, text);
          await rm(join(dir, "flake.lock"));
        },
      });
      try {
        const locked = await flake.nix(["flake", "lock", flake.ref]); // getFlake does not write locks
        expect(locked.exitCode, locked.stderr).toBe(0);
        // one catalog task per profile, evaluated in one nix call
        const ids = [
          "tinygauge-vertical",
          "truncate-runes",
          "semver-lite-caret-zero",
          "tinyini-interpolation",
          "strbuf-repr-escapes",
        ];
        const specs = await Promise.all(
          ids.map(async (id) => ({ task: await loadTask(id), spec: snapshotSpecOfTask(await loadTask(id)) })),
        );
        expect(new Set(specs.map((s) => s.spec.profile))).toEqual(
          new Set(["rust", "go", "node", "python", "c"]),
        );
        const exprs = specs.map(
          ({ task, spec }) =>
            `(let i = ${snapshotImageExpr(flake.ref, "x86_64-linux", spec, { dir: task.paths.sourceDir! })}; in { inherit (i.snapshot) keyInputs; labels = i.stub.args.config.Labels; })`,
        );
        const r = await execa(
          "nix",
          [...NIX_BASE_ARGS, "eval", "--json", "--impure", "--expr", `[ ${exprs.join(" ")} ]`],
          { reject: false, timeout: 180_000, stdin: "ignore" },
        );
        expect(r.exitCode, r.stderr).toBe(0);
        const out = JSON.parse(r.stdout) as {
          keyInputs: Record<string, unknown>;
          labels: Record<string, string>;
        }[];
        specs.forEach(({ spec }, i) => {
          expect(out[i]!.keyInputs, spec.taskId).toMatchObject(keyInputsOfSpec(spec));
          expect(out[i]!.labels["org.flakegym.snapshot.profile"], spec.taskId).toBe(spec.profile);
          expect(out[i]!.labels["org.flakegym.snapshot.install"], spec.taskId).toBe(
            JSON.stringify(spec.install),
          );
        });
      } finally {
        await flake.cleanup();
      }
    });
  },
);
