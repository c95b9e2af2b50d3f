import { spawnSync } from "node:child_process";
import { chmod, mkdir, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { join } from "node:path";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { installOf, withServices } from "../../src/tasks/swebench.js";
import {
  HTTPBIN_NOTE,
  HTTPBIN_PORT,
  httpbinInstall,
  wantsHttpbin,
  withHttpbin,
} from "../../src/tasks/swebench-httpbin.js";
import { tempDir } from "../helpers/temp-dir.js";

describe("which rows get an httpbin on loopback", () => {
  it("requests before 2.10 (tests read HTTPBIN_URL), not from 2.10 (pytest-httpbin's fixture) nor other repositories", () => {
    for (const v of ["0.14", "1.1", "2.0", "2.3", "2.4", "2.9", "v2.8"])
      expect(wantsHttpbin("psf/requests", v)).toBe(true);
    expect(wantsHttpbin("PSF/Requests.git", "2.4")).toBe(true);
    for (const v of ["2.10", "2.26", "2.27", "3.0", "", undefined, "main"])
      expect(wantsHttpbin("psf/requests", v)).toBe(false);
    expect(wantsHttpbin("pallets/flask", "2.3")).toBe(false);
  });

  it("the sandbox's port is fixed (its loopback is its own)", () => {
    expect(withHttpbin("true")).toContain(`HTTPBIN_URL=http://127.0.0.1:${HTTPBIN_PORT}/`);
  });

  it("a requests 2.4 row installs httpbin in its own venv and runs its suite with it; 2.27 gets neither", () => {
    const old = installOf({ repo: "psf/requests", version: "2.4" }, "pytest");
    const recent = installOf({ repo: "psf/requests", version: "2.27" }, "pytest");
    if (!("install" in old) || !("install" in recent)) throw new Error("requests 2.4 / 2.27 have facts");
    expect(old.install.slice(-2)).toEqual(httpbinInstall());
    expect(old.notes).toContain(HTTPBIN_NOTE);
    expect(recent.install.join("\n")).not.toContain("httpbin");
    const suite = {
      kind: "suite" as const,
      command: "pytest -rA test_requests.py",
      results: "pytest" as const,
      failToPass: ["test_requests.py::T::test_a"],
      passToPass: [],
      canary: { file: "test_requests.py", prepend: "", append: "", id: "test_requests.py::canary" },
    };
    expect(withServices(suite, { repo: "psf/requests", version: "2.4" })).toMatchObject({
      command: withHttpbin(suite.command),
    });
    expect(withServices(suite, { repo: "psf/requests", version: "2.27" })).toEqual(suite);
    expect(withServices(suite, { repo: "psf/requests", version: "2.4", install: "pip install ." })).toEqual(
      suite,
    );
  });
});

/**
 * The wrapper's shell run for real: a stand-in `httpbin/bin/python` in a deps dir serves HTTP with
 * python3's own http.server on the port (the real app is run by `npm run e2e:real`'s requests rows).
 */
/** The stand-in server and the fetch are python3's own (the Nix check's sandbox has no python3). */
const noPython3 = spawnSync("python3", ["-c", "pass"], { stdio: "ignore", timeout: 15_000 }).status !== 0;
if (noPython3)
  console.log(
    "skipped the served-httpbin run: no python3 on PATH for the stand-in server (as in the Nix build sandbox)",
  );

describe("withHttpbin, run by sh", () => {
  let tmp: Awaited<ReturnType<typeof tempDir>>;
  let deps: string;
  beforeAll(async () => {
    tmp = await tempDir("flakegym-httpbin-");
    deps = join(tmp.path, "deps");
    await mkdir(join(deps, "httpbin/bin"), { recursive: true });
    const standIn = join(deps, "httpbin/bin/python");
    // `-m httpbin.core --host H --port P` serves; `-c CODE` is python3's own
    await writeFile(
      standIn,
      `#!/bin/sh\nif [ "$1" = "-m" ]; then exec python3 -m http.server --bind "$4" "$6"; fi\nexec python3 "$@"\n`,
    );
    await chmod(standIn, 0o755);
  });
  afterAll(async () => {
    await tmp?.cleanup();
  });

  /** A loopback port free now (the host is shared; the scoring sandbox's own loopback has HTTPBIN_PORT free). */
  const freePort = () =>
    new Promise<number>((resolve, reject) => {
      const s = createServer().listen(0, "127.0.0.1", () => {
        const a = s.address();
        s.close(() => (typeof a === "object" && a ? resolve(a.port) : reject(new Error("no port"))));
      });
    });
  const run = (command: string, env: Record<string, string>, port: number) =>
    execa("sh", ["-c", withHttpbin(command, port)], { env, extendEnv: true, reject: false, timeout: 60_000 });

  it.skipIf(noPython3)(
    "serves on loopback before the command, exports HTTPBIN_URL, keeps the command's exit status, stops the server",
    async () => {
      const fetch = `python3 -c 'import os, urllib.request; print(os.environ["HTTPBIN_URL"], urllib.request.urlopen(os.environ["HTTPBIN_URL"], timeout=5).status)'; exit 3`;
      const port = await freePort();
      const r = await run(fetch, { FLAKEGYM_DEPS: deps }, port);
      expect(r.stdout.trim()).toBe(`http://127.0.0.1:${port}/ 200`);
      expect(r.exitCode).toBe(3);
      const after = await execa(
        "python3",
        ["-c", `import socket; socket.create_connection(("127.0.0.1", ${port}), 1)`],
        { reject: false, timeout: 10_000 },
      );
      expect(after.exitCode, "the server is stopped after the command").not.toBe(0);
    },
    90_000,
  );

  it("without the httpbin venv the tests still run, and stderr says why those reaching it fail", async () => {
    const r = await run("echo ran", { FLAKEGYM_DEPS: join(tmp.path, "none") }, await freePort());
    expect(r.stdout.trim()).toBe("ran");
    expect(r.exitCode).toBe(0);
    expect(r.stderr).toMatch(/httpbin: .*httpbin is not in this snapshot \(build it again\)/);
  }, 30_000);
});
