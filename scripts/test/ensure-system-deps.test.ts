import { chmodSync, existsSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { makeTempDir, REPO_ROOT } from "@flakegym/test-utils";
import { execa, execaSync } from "execa";
import { describe, expect, it } from "vitest";
import { BASE_PATH } from "../../packages/runner/src/workers/local/toolchain.js";

const script = join(REPO_ROOT, "scripts/ensure-system-deps");
// A PATH without git, bwrap, podman, nix, make, cc, cargo or apt-get.
const bare = { env: { PATH: "/nonexistent", HOME: "/tmp" }, extendEnv: false, reject: false } as const;

describe("scripts/ensure-system-deps", () => {
  it("is idempotent: a run after the test command's own run finds everything present", async () => {
    const r = await execa("sh", [script], { reject: false });
    expect(r.stderr).toBe("");
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toContain("all system packages present");
  });

  it("rejects an unknown flag naming it and the allowed ones", async () => {
    const r = await execa("sh", [script, "--bogus"], { reject: false });
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toContain("unknown flag '--bogus'");
    expect(r.stderr).toContain("--soft");
  });

  it("when packages are missing and apt-get cannot be used, exits 1 printing the exact command", async () => {
    const r = await execa("/bin/sh", [script], bare);
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toMatch(/missing system packages: git bubblewrap podman/);
    expect(r.stderr).toContain("apt-get install -y --no-install-recommends git bubblewrap");
  });

  it("--soft reports the same but never fails", async () => {
    const r = await execa("/bin/sh", [script, "--soft"], bare);
    expect(r.exitCode).toBe(0);
    expect(r.stderr).toContain("missing system packages");
  });

  it("checks tools the sandbox runs with the sandbox's PATH (the runner's BASE_PATH), not the caller's", async () => {
    const text = readFileSync(script, "utf8");
    expect(/^SANDBOX_PATH=(.*)$/m.exec(text)?.[1]).toBe(BASE_PATH.join(":"));
    // The caller's python3 says the opposite of the sandbox's: the verdict must follow the sandbox.
    const sandboxHasPytest =
      execaSync("python3", ["-c", "import pytest"], {
        env: { PATH: BASE_PATH.join(":") },
        extendEnv: false,
        reject: false,
      }).exitCode === 0;
    await using bin = await makeTempDir("flakegym-deps-bin-");
    writeFileSync(join(bin.path, "python3"), `#!/bin/sh\nexit ${sandboxHasPytest ? 1 : 0}\n`);
    chmodSync(join(bin.path, "python3"), 0o755);
    const r = await execa("/bin/sh", [script], { ...bare, env: { ...bare.env, PATH: bin.path } });
    expect(r.exitCode).toBe(1);
    const missing = /missing system packages:(.*)/.exec(r.stderr)?.[1]?.trim().split(" ") ?? [];
    expect(missing.includes("python3-pytest")).toBe(!sandboxHasPytest);
  });
});

/** A bin directory with a fake `id` (root) and `apt-get` (200 lines of output; `install` creates the commands it was asked for), and the few tools the script needs. */
async function fakeApt(failInstall = false) {
  const bin = await makeTempDir("flakegym-fake-apt-");
  for (const tool of ["mktemp", "tail", "sed", "chmod", "dirname"]) {
    const path = execaSync("sh", ["-c", `command -v ${tool}`]).stdout.trim();
    symlinkSync(path, join(bin.path, tool));
  }
  const write = (name: string, body: string) => {
    writeFileSync(join(bin.path, name), `#!/bin/sh\n${body}`);
    chmodSync(join(bin.path, name), 0o755);
  };
  write("id", "echo 0\n");
  write(
    "apt-get",
    `i=0; while [ $i -lt 200 ]; do echo "Get:$i bookworm/main fake-package-$i [1 kB]"; i=$((i+1)); done
[ "$1" = update ] && exit 0
${failInstall ? 'echo "E: Unable to locate package nix-bin" >&2; exit 100' : ""}
dir=$(dirname "$0")
for p in "$@"; do
  case "$p" in git) c=git ;; bubblewrap) c=bwrap ;; podman) c=podman ;; mmdebstrap) c=mmdebstrap ;; nix-bin) c=nix ;; patchelf) c=patchelf ;; ripgrep) c=rg ;; cmake) c=cmake ;; ninja-build) c=ninja ;; pkg-config) c=pkg-config ;; gdb) c=gdb ;; g++) c=g++ ;; cargo) c=cargo ;; shellcheck) c=shellcheck ;; *) c= ;; esac
  if [ -n "$c" ]; then printf '#!/bin/sh\\n' > "$dir/$c"; chmod +x "$dir/$c"; fi
done
`,
  );
  return bin;
}

/**
 * The packages checked by a command on PATH (the fake PATH has none of them). clang-14 and valgrind
 * are checked at their absolute paths, which `npm ci`'s prepare step installed on this machine.
 */
const PATH_CHECKED =
  "git bubblewrap podman mmdebstrap nix-bin patchelf ripgrep cmake ninja-build pkg-config gdb g++ cargo shellcheck";

describe("scripts/ensure-system-deps installing (fake apt-get)", () => {
  it("prints one line per step and keeps apt-get's output in the log it names", async () => {
    await using bin = await fakeApt();
    await using tmp = await makeTempDir();
    const r = await execa("/bin/sh", [script], {
      ...bare,
      env: { PATH: bin.path, HOME: tmp.path, TMPDIR: tmp.path },
    });
    expect(r.stderr).toBe("");
    expect(r.exitCode).toBe(0);
    const lines = r.stdout.split("\n");
    const log = /\(log: (.+)\)$/.exec(lines[0]!)?.[1];
    expect(lines).toEqual([
      `ensure-system-deps: apt-get update (log: ${log})`,
      `ensure-system-deps: installing ${PATH_CHECKED} (log: ${log})`,
      `ensure-system-deps: installed ${PATH_CHECKED}`,
    ]);
    expect(readFileSync(log!, "utf8")).toContain("Get:199 bookworm/main fake-package-199");
    expect(readFileSync(log!, "utf8").split("\n").length).toBeGreaterThan(400);
  });

  it("on failure names the log, shows its last lines and the command to run; --soft still exits 0", async () => {
    await using bin = await fakeApt(true);
    await using tmp = await makeTempDir();
    const env = { PATH: bin.path, HOME: tmp.path, TMPDIR: tmp.path };
    const r = await execa("/bin/sh", [script], { ...bare, env });
    expect(r.exitCode).toBe(1);
    const log = /full log: (\S+)\)/.exec(r.stderr)?.[1];
    expect(log && existsSync(log)).toBe(true);
    expect(r.stderr).toContain("E: Unable to locate package nix-bin");
    expect(r.stderr).toContain("apt-get install -y --no-install-recommends git bubblewrap");
    expect(r.stderr.split("\n").length).toBeLessThan(25);
    expect(r.stdout.split("\n")).toHaveLength(2);
    const soft = await execa("/bin/sh", [script, "--soft"], { ...bare, env });
    expect(soft.exitCode).toBe(0);
    expect(soft.stderr).toContain("full log:");
  });
});
