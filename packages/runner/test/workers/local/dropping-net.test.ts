import { chmod, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  buildBwrapArgs,
  DROPPING_NET_PREFIX,
  droppingNetPrefix,
} from "../../../src/workers/local/bwrap-args.js";
import { sandboxNetworkOf } from "../../../src/workers/local/decisions.js";
import { runSandboxed, wrapCommand } from "../../../src/workers/local/sandbox.js";
import { type PreparedShape, prepareShape } from "../../../src/workers/local/shape.js";
import { sandboxSkipReason } from "../../helpers/sandbox.js";

/**
 * The scoring sandbox's network shape: a connect to a non-routable address (requests'
 * `TestTimeout` uses 10.255.255.1) times out, as under a networked harness, instead of failing
 * at once with ENETUNREACH as in a loopback-only namespace; loopback works in both.
 */

const CONNECT = `
import errno, socket, time
s = socket.socket(); s.settimeout(1.5); t = time.time()
try:
    s.connect(("10.255.255.1", 80)); print("connected")
except socket.timeout:
    print("timeout")
except OSError as e:
    print(errno.errorcode.get(e.errno, e.errno))
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen(1)
c = socket.create_connection(l.getsockname(), 1); print("loopback ok")
`;

describe("sandboxNetworkOf", () => {
  it("gives scoring workers the dropping namespace as root or in a user namespace of their own, agents never", () => {
    expect(sandboxNetworkOf({ agent: false }, true)).toEqual({ network: "dropping" });
    expect(sandboxNetworkOf({ agent: false }, false, true)).toEqual({
      network: "dropping",
      droppingViaUserNamespace: true,
    });
    expect(sandboxNetworkOf({ agent: false }, false, false)).toEqual({ network: "none" });
    expect(sandboxNetworkOf({ agent: true }, true)).toEqual({ network: "none" });
    expect(sandboxNetworkOf({ agent: true }, false, true)).toEqual({ network: "none" });
  });
  it("makes the namespace itself as root, inside its own user namespace without", () => {
    expect(droppingNetPrefix(false).slice(0, 3)).toEqual(["unshare", "--net", "--"]);
    expect(droppingNetPrefix(true).slice(0, 5)).toEqual([
      "unshare",
      "--user",
      "--map-root-user",
      "--net",
      "--",
    ]);
  });
});

const noSandbox = sandboxSkipReason();
const notRoot = process.geteuid?.() !== 0 ? "the dropping namespace needs root (unshare --net)" : undefined;
const skip = noSandbox ?? notRoot;
if (skip) console.log(`skipped the dropping-net sandbox runs: ${skip}`);

describe.skipIf(skip !== undefined)("a real connect in the sandbox", () => {
  let dir: string;
  const shapes: PreparedShape[] = [];
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "flakegym-dropping-net-"));
  });
  afterAll(async () => {
    for (const s of shapes) await s.cgroup.remove().catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  });

  const run = async (network: "none" | "dropping") => {
    const prepared = await prepareShape({
      id: `dropping-net-${network}-${process.pid}`,
      profile: "python",
      workspace: dir,
      stateDir: join(dir, `state-${network}`),
      limits: { memoryMb: 512, pids: 64, cpuSeconds: 30, diskMb: 64 },
      network,
    });
    shapes.push(prepared);
    const line = wrapCommand(prepared.shape, ["python3", "-c", CONNECT]);
    expect(line.args.includes(DROPPING_NET_PREFIX[5]!) || line.command === "unshare").toBe(
      network === "dropping",
    );
    const r = await runSandboxed(prepared.shape, ["python3", "-c", CONNECT], { timeoutMs: 20_000 });
    return r.stdout.trim().split("\n");
  };

  it("loopback-only: ENETUNREACH at once", async () => {
    expect(await run("none")).toEqual(["ENETUNREACH", "loopback ok"]);
  });
  it("dropping: the connect times out, loopback still works", async () => {
    expect(await run("dropping")).toEqual(["timeout", "loopback ok"]);
  });
  it("dropping without root: the same, in a user namespace of the runner's own (run as nobody)", async (ctx) => {
    // the real prefix and bwrap arguments, run by an unprivileged uid (setpriv drops root first)
    const setpriv = await execa("setpriv", ["--version"], { reject: false, timeout: 10_000 });
    if (setpriv.exitCode !== 0) ctx.skip("setpriv (util-linux) is not installed: cannot run as another uid");
    const prepared = await prepareShape({
      id: `dropping-net-user-${process.pid}`,
      profile: "python",
      workspace: dir,
      stateDir: join(dir, "state-user"),
      limits: { memoryMb: 512, pids: 64, cpuSeconds: 30, diskMb: 64 },
      network: "dropping",
      droppingViaUserNamespace: true,
    });
    shapes.push(prepared);
    await execa("chmod", ["-R", "a+rX", dir]);
    await chmod(dir, 0o777);
    const bwrap = prepared.shape.bwrap!;
    expect(bwrap.droppingViaUserNamespace).toBe(true);
    const nobody = ["--reuid=65534", "--regid=65534", "--clear-groups", "--"];
    const r = await execa(
      "setpriv",
      [
        ...nobody,
        ...droppingNetPrefix(true),
        "bwrap",
        ...buildBwrapArgs(bwrap),
        "--",
        "python3",
        "-c",
        CONNECT,
      ],
      { reject: false, timeout: 30_000, stdin: "ignore", env: { PATH: "/usr/bin:/bin" }, extendEnv: false },
    );
    if (/Operation not permitted|cannot open|unshare failed/.test(r.stderr) && r.stdout === "")
      ctx.skip(`this host does not let an unprivileged uid make user namespaces: ${r.stderr.trim()}`);
    expect(r.stdout.trim().split("\n"), r.stderr).toEqual(["timeout", "loopback ok"]);
  });
});
