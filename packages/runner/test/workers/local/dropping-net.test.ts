import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DROPPING_NET_PREFIX } from "../../../src/workers/local/bwrap-args.js";
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
  it("gives scoring workers the dropping namespace when the runner is root, agents never", () => {
    expect(sandboxNetworkOf({ agent: false }, true)).toBe("dropping");
    expect(sandboxNetworkOf({ agent: false }, false)).toBe("none");
    expect(sandboxNetworkOf({ agent: true }, true)).toBe("none");
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
});
