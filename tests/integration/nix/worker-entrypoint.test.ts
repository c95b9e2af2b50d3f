import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { chmod, mkdir, readFile, symlink, writeFile } from "node:fs/promises";
import { connect } from "node:net";
import { dirname, join } from "node:path";
import { findProcesses, freePort, makeTempDir, REPO_ROOT, type TempDir, waitFor } from "@flakegym/test-utils";
import { execa, type ResultPromise } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createStubFlake, NIX_MISSING_REASON, nixAvailable } from "./stub-flake.js";

// The image entrypoint (nix/worker-entrypoint.nix) is a writeShellApplication. Its text comes out
// of the flake here and runs the way writeShellApplication would run it (bash, errexit/nounset/
// pipefail, runtimeInputs first on PATH) with the real Cline core from node_modules standing in
// for the Nix-built one: same package, same binaries, same flags.

const HAVE_NIX = nixAvailable();
if (!HAVE_NIX) console.warn(NIX_MISSING_REASON);
const has = (bin: string) => {
  try {
    execFileSync("sh", ["-c", `command -v ${bin}`], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
};
const HAVE_SHELLCHECK = has("shellcheck");
if (!HAVE_SHELLCHECK)
  console.warn("skipping the shellcheck of the flake's shell scripts: shellcheck is not installed");
const CLINE_DIR = join(REPO_ROOT, "node_modules/cline");
const HOST_BIN = join(CLINE_DIR, `bin/cline-host-linux-${process.arch === "arm64" ? "arm64" : "amd64"}`);
const SUPERVISOR = join(REPO_ROOT, "packages/cline-vendor/supervisor/cline-supervisor.mjs");
const HAVE_CLINE = existsSync(join(CLINE_DIR, "cline-core.js")) && existsSync(HOST_BIN);
if (!HAVE_CLINE)
  console.warn(`skipping the entrypoint boot test: no Cline core at ${CLINE_DIR} (run npm ci)`);

const tcpOpen = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = connect({ host: "127.0.0.1", port }, () => {
      s.destroy();
      resolve(true);
    });
    s.on("error", () => resolve(false));
  });

describe.skipIf(!HAVE_NIX)("the worker entrypoint (flakegym-worker)", () => {
  let tmp: TempDir;
  let script: string;
  let rolloutText: string;
  let bin: string;

  let supervised = false;

  beforeAll(async () => {
    const flake = await createStubFlake();
    let text: string;
    let clineOut: string;
    try {
      text = await flake.evalRaw("packages.x86_64-linux.flakegym-worker.stub.args.text");
      rolloutText = await flake.evalRaw("packages.x86_64-linux.flakegym-rollout.stub.args.text");
      clineOut = await flake.evalRaw("packages.x86_64-linux.cline-core", "c: c.outPath");
    } finally {
      await flake.cleanup();
    }
    tmp = await makeTempDir("flakegym-entrypoint-");
    supervised = text.includes("exec cline-supervisor");
    // Stand-ins for the Nix store paths the script names: the cline-core output (lib/cline is the
    // npm package) and nodejs (bin/node).
    const fakeCline = join(tmp.path, "cline-core");
    await mkdir(join(fakeCline, "lib"), { recursive: true });
    await symlink(CLINE_DIR, join(fakeCline, "lib/cline"));
    const nodeOut = text.match(/--node (\S+)\/bin\/node/)?.[1];
    text = text.replaceAll(clineOut, fakeCline);
    if (nodeOut) text = text.replaceAll(nodeOut, dirname(dirname(process.execPath)));
    // What the Nix-built bin/ holds: cline-core (node + cline-core.js with NODE_PATH), cline-host,
    // cline-supervisor (node + cline-vendor's supervisor script).
    bin = join(tmp.path, "bin");
    await mkdir(bin);
    const tools: Record<string, string> = {
      "cline-core": `NODE_PATH=${CLINE_DIR}/node_modules:${CLINE_DIR}/fake_node_modules exec ${process.execPath} ${CLINE_DIR}/cline-core.js "$@"`,
      "cline-host": `exec ${HOST_BIN} "$@"`,
      "cline-supervisor": `exec ${process.execPath} ${SUPERVISOR} "$@"`,
    };
    for (const [name, body] of Object.entries(tools)) {
      await writeFile(join(bin, name), `#!/bin/sh\n${body}\n`);
      await chmod(join(bin, name), 0o755);
    }
    script = join(tmp.path, "flakegym-worker");
    await writeFile(
      script,
      `#!/usr/bin/env bash\nset -o errexit\nset -o nounset\nset -o pipefail\n\nexport PATH="${bin}:$PATH"\n\n${text}\n`,
    );
    await chmod(script, 0o755);
    console.log(
      `entrypoint mode: ${supervised ? "cline-supervisor" : "own process management (no supervisor in this checkout)"}`,
    );
  });
  afterAll(async () => tmp?.cleanup());

  it.skipIf(!HAVE_SHELLCHECK)("passes shellcheck, as writeShellApplication requires", async () => {
    const rollout = join(tmp.path, "flakegym-rollout");
    await writeFile(
      rollout,
      `#!/usr/bin/env bash\nset -o errexit\nset -o nounset\nset -o pipefail\n${rolloutText}\n`,
    );
    const r = await execa("shellcheck", [script, rollout], { reject: false });
    expect(r.stdout + r.stderr).toBe("");
    expect(r.exitCode).toBe(0);
  });

  it("runs a given command instead of the agent (scoring workers)", async () => {
    const r = await execa(script, ["sh", "-c", "echo scored; exit 3"], { reject: false });
    expect(r.stdout).toBe("scored");
    expect(r.exitCode).toBe(3);
  });

  it("refuses to start an agent without its ports, naming the variable", async () => {
    const r = await execa(script, [], { reject: false, env: { FLAKEGYM_CORE_PORT: "" }, extendEnv: false });
    expect(r.exitCode).not.toBe(0);
    expect(r.stderr).toContain("set FLAKEGYM_CORE_PORT to the port cline-core serves gRPC on");
  });

  it.skipIf(!HAVE_CLINE)(
    "starts cline-host and cline-core, serves gRPC on the core port, and stops both on SIGTERM",
    async () => {
      const [corePort, hostPort] = [await freePort(), await freePort()];
      const home = join(tmp.path, "home");
      const config = join(tmp.path, "config");
      const workspace = join(tmp.path, "workspace");
      await mkdir(workspace);
      const env = {
        PATH: process.env["PATH"] ?? "/usr/bin:/bin",
        FLAKEGYM_CORE_PORT: String(corePort),
        FLAKEGYM_HOST_PORT: String(hostPort),
        FLAKEGYM_WORKSPACE: workspace,
        FLAKEGYM_CONFIG_DIR: config,
        FLAKEGYM_HOME: home,
      };
      const child: ResultPromise = execa(script, [], {
        env,
        extendEnv: false,
        reject: false,
        detached: true,
      });
      let output = "";
      child.stdout?.on("data", (d: Buffer) => {
        output += d.toString();
      });
      child.stderr?.on("data", (d: Buffer) => {
        output += d.toString();
      });
      try {
        const up = await waitFor(
          async () => (await tcpOpen(corePort)) && (await tcpOpen(hostPort)),
          60_000,
          200,
        );
        expect(up, `core :${corePort} and host :${hostPort} listening; output:\n${output}`).toBe(true);
        expect(output).toContain(
          `flakegym-worker: cline 1.0.10, host :${hostPort}, core 0.0.0.0:${corePort}`,
        );

        // the core runs with the worker's own HOME and config, listening on all interfaces
        const core = (await findProcesses(config)).find(
          (p) => p.cmdline.includes("cline-core.js") && !p.cmdline.includes("cline-supervisor"),
        );
        expect(core, `cline-core process; output:\n${output}`).toBeDefined();
        const environ = (await readFile(`/proc/${core!.pid}/environ`, "utf8")).split("\0");
        expect(environ).toEqual(
          expect.arrayContaining([`HOME=${home}`, `PROTOBUS_ADDRESS=0.0.0.0:${corePort}`]),
        );
        expect((await findProcesses(`--port ${hostPort} --workspace ${workspace}`)).length).toBeGreaterThan(
          0,
        );

        process.kill(child.pid!, "SIGTERM");
        await child;
        const gone = await waitFor(
          async () =>
            (await findProcesses(config)).length === 0 &&
            (await findProcesses(`--port ${hostPort} --workspace`)).length === 0,
          15_000,
        );
        expect(gone, "no cline process left behind").toBe(true);
      } finally {
        try {
          process.kill(-child.pid!, "SIGKILL");
        } catch {
          // already gone
        }
      }
    },
    90_000,
  );
});
