/**
 * The supervisor's mechanics with tiny fixture children (fixtures/fake-host.mjs, fake-core.mjs) in
 * place of the 45 MB core: events, environment, log, forwarders, and every way of stopping. The
 * real core under the supervisor is covered by tests/integration/cline.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { connect as http2Connect } from "node:http2";
import { createConnection, createServer, type Server } from "node:net";
import { getPriority } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { CORE_GC_NODE_ARGS, CORE_GC_SIGNAL, lastCoreGcMarker } from "../../src/core-gc.js";
import { SUPERVISOR_PATH } from "../../src/launcher.js";
import { MERGE_MEMORY_EXEC_PATH, probeMemoryMerge, SYSTEM_PYTHON } from "../../src/memory-merge.js";
import { findProcesses, freePort, makeTempDir, processReaper, type TempDir, waitFor } from "../helpers.js";

const fixture = (name: string) => fileURLToPath(new URL(`../fixtures/${name}`, import.meta.url));

interface Started {
  child: ChildProcess;
  events: Record<string, unknown>[];
  next(event: string, timeoutMs?: number): Promise<Record<string, unknown>>;
  exit: Promise<number | null>;
  stderr(): string;
}

let tmp: TempDir;
const reaper = processReaper();

beforeEach(async () => {
  tmp = await makeTempDir("flakegym-supervisor-");
});
afterEach(async () => {
  reaper.killAll();
  await tmp.cleanup();
});

function start(extra: string[] = [], env: Record<string, string> = {}, prefix: string[] = []): Started {
  const child = spawn(
    prefix[0] ?? process.execPath,
    [
      ...(prefix.length ? [...prefix.slice(1), process.execPath] : []),
      SUPERVISOR_PATH,
      "--host-bin",
      fixture("fake-host.mjs"),
      "--core-js",
      fixture("fake-core.mjs"),
      "--node-path",
      "/nm-a:/nm-b",
      "--workspace",
      tmp.path,
      "--config",
      join(tmp.path, "config"),
      "--grace-ms",
      "1000",
      ...extra,
    ],
    {
      env: { PATH: process.env.PATH ?? "", HOME: tmp.path, ...env },
      stdio: ["pipe", "pipe", "pipe"],
      detached: true,
    },
  );
  reaper.track(child.pid);
  const events: Record<string, unknown>[] = [];
  const waiters: (() => void)[] = [];
  createInterface({ input: child.stdout! }).on("line", (line) => {
    events.push(JSON.parse(line) as Record<string, unknown>);
    for (const w of waiters.splice(0)) w();
  });
  let err = "";
  child.stderr!.on("data", (c: Buffer) => {
    err += c.toString();
  });
  const exit = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
  return {
    child,
    events,
    exit,
    stderr: () => err,
    async next(event, timeoutMs = 10_000) {
      const end = Date.now() + timeoutMs;
      for (;;) {
        const found = events.find((e) => e["event"] === event);
        if (found) return found;
        if (Date.now() > end)
          throw new Error(`no '${event}' event; got ${JSON.stringify(events)}; stderr: ${err}`);
        await new Promise<void>((r) => {
          waiters.push(r);
          setTimeout(r, 200);
        });
      }
    },
  };
}

function roundTrip(target: { path: string } | { port: number }, payload: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = "path" in target ? createConnection(target.path) : createConnection(target.port, "127.0.0.1");
    s.once("error", reject);
    s.once("data", (d) => {
      resolve(d.toString());
      s.destroy();
    });
    s.write(payload);
  });
}

/**
 * A command prefix running its command in a new network namespace whose kernel hands out only two
 * ephemeral ports, always the same one first: ports picked one after the other collide there.
 * Undefined (with why) when this machine cannot make one (needs root and `unshare`).
 */
function twoPortNetns(): { prefix?: string[]; why?: string } {
  const script =
    'ip link set lo up && echo "40000 40001" > /proc/sys/net/ipv4/ip_local_port_range && exec "$@"';
  const prefix = ["unshare", "-n", "sh", "-c", script, "sh"];
  try {
    execFileSync(prefix[0]!, [...prefix.slice(1), "true"], { stdio: "ignore", timeout: 5000 });
    return { prefix };
  } catch (err) {
    return {
      why: `cannot make a network namespace here (root + unshare + ip needed): ${(err as Error).message}`,
    };
  }
}
const netns = twoPortNetns();
if (netns.why) console.log(`skipping the port-collision test: ${netns.why}`);

/** A git workspace with one commit (a.txt = "one"): the base a --diff-dir supervisor seals. */
async function gitWorkspace() {
  const ws = join(tmp.path, "ws");
  await mkdir(ws);
  const git = (...a: string[]) =>
    execFileSync("git", ["-c", "user.email=t@t", "-c", "user.name=t", ...a], { cwd: ws, encoding: "utf8" });
  await writeFile(join(ws, "a.txt"), "one\n");
  git("init", "-q", "-b", "main");
  git("add", "-A");
  git("commit", "-qm", "base");
  return { ws, git, base: git("rev-parse", "HEAD").trim() };
}

describe("cline-supervisor", () => {
  it.skipIf(!netns.prefix)(
    "picks different ports for host and core even where the kernel would hand the same one out twice",
    async () => {
      const s = start([], {}, netns.prefix);
      const started = await s.next("started");
      await s.next("listening");
      const corePort = Number(String(started["coreAddress"]).split(":")[1]);
      expect([corePort, Number(started["hostPort"])].sort()).toEqual([40000, 40001]);
      s.child.kill("SIGTERM");
      expect(await s.exit).toBe(0);
    },
  );

  it("starts host and core with explicit ports, the core's address and NODE_PATH, and logs their output", async () => {
    const s = start();
    const started = await s.next("started");
    const listening = await s.next("listening");
    expect(started["hostPort"]).toBeGreaterThan(0);
    expect(started["coreAddress"]).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(started["coreAddress"]).not.toBe("127.0.0.1:0");
    expect(listening["coreAddress"]).toBe(started["coreAddress"]);
    expect(await roundTrip({ port: Number(String(started["coreAddress"]).split(":")[1]) }, "ping")).toBe(
      "core:ping",
    );
    // the core announced itself; the host may still be binding (a race under load): wait for it
    expect(
      await waitFor(async () =>
        (await readFile(join(tmp.path, "config", "core.log"), "utf8")).includes("fake host listening"),
      ),
    ).toBe(true);
    expect(await roundTrip({ port: Number(started["hostPort"]) }, "ping")).toBe("host:ping");
    const log = await readFile(join(tmp.path, "config", "core.log"), "utf8");
    const env = JSON.parse(/ENV (.*)/.exec(log)![1]!) as Record<string, string>;
    expect(env).toEqual({
      NODE_PATH: "/nm-a:/nm-b",
      HOST_BRIDGE_ADDRESS: `127.0.0.1:${started["hostPort"]}`,
      PROTOBUS_ADDRESS: started["coreAddress"],
      HOME: tmp.path,
    });
    expect(
      await waitFor(async () =>
        (await readFile(join(tmp.path, "config", "core.log"), "utf8")).includes("fake host listening"),
      ),
    ).toBe(true);
    s.child.kill("SIGTERM");
    expect(await s.exit).toBe(0);
  });

  it("FLAKEGYM_CORE_TOKEN: the core moves behind a gate that forwards only calls with the token", async () => {
    const port = await freePort();
    const s = start(["--core-js", fixture("h2-core.mjs"), "--core-address", `127.0.0.1:${port}`], {
      FLAKEGYM_CORE_TOKEN: "tok-123",
    });
    const started = await s.next("started");
    const listening = await s.next("listening");
    expect(started["coreAddress"]).toBe(`127.0.0.1:${port}`);
    expect(listening["coreAddress"]).toBe(`127.0.0.1:${port}`);
    const session = http2Connect(`http://127.0.0.1:${port}`);
    session.on("error", () => {});
    const call = (auth?: string) =>
      new Promise<{ headers: Record<string, unknown>; body: string; trailers: Record<string, unknown> }>(
        (resolve, reject) => {
          const req = session.request({
            ":method": "POST",
            ":path": "/cline.StateService/getLatestState",
            "content-type": "application/grpc",
            te: "trailers",
            ...(auth ? { authorization: auth } : {}),
          });
          let headers: Record<string, unknown> = {};
          let trailers: Record<string, unknown> = {};
          const chunks: Buffer[] = [];
          req.on("response", (h) => {
            headers = h;
          });
          req.on("trailers", (t) => {
            trailers = t;
          });
          req.on("data", (c: Buffer) => chunks.push(c));
          req.on("end", () => resolve({ headers, body: Buffer.concat(chunks).toString(), trailers }));
          req.on("error", reject);
          req.end("hello");
        },
      );
    try {
      for (const auth of [undefined, "Bearer wrong", "Bearer tok-1234", "tok-123"]) {
        const r = await call(auth);
        expect(r.headers["grpc-status"]).toBe("16");
        expect(r.body).toBe("");
      }
      const ok = await call("Bearer tok-123");
      expect(ok.body).toBe("hello");
      expect(ok.trailers["grpc-status"]).toBe("0");
      // neither the token nor the caller's header reaches the core or the agent below it
      expect(ok.headers["x-core-saw-token"]).toBe("no");
      expect(ok.headers["x-core-saw-authorization"]).toBe("no");
    } finally {
      session.close();
    }
    s.child.kill("SIGTERM");
    expect(await s.exit).toBe(0);
  });

  it("binds the core to a unix socket and relays with --expose (unix→tcp) and --forward (tcp→unix)", async () => {
    const corePort = await freePort();
    const exposed = join(tmp.path, "exposed.sock");
    const upstreamSock = join(tmp.path, "upstream.sock");
    const upstream: Server = createServer((c) => c.on("data", (d) => c.write(`upstream:${d}`)));
    await new Promise<void>((r) => upstream.listen(upstreamSock, r));
    const fwdPort = await freePort();
    try {
      const s = start([
        "--core-address",
        `127.0.0.1:${corePort}`,
        "--expose",
        `unix:${exposed}=127.0.0.1:${corePort}`,
        "--forward",
        `127.0.0.1:${fwdPort}=unix:${upstreamSock}`,
      ]);
      await s.next("listening");
      expect(await roundTrip({ path: exposed }, "via-unix")).toBe("core:via-unix");
      expect(await roundTrip({ port: fwdPort }, "via-tcp")).toBe("upstream:via-tcp");
      s.child.kill("SIGTERM");
      await s.exit;
    } finally {
      upstream.close();
    }
  });

  it("unix --core-address is passed through as PROTOBUS_ADDRESS", async () => {
    const sock = join(tmp.path, "core.sock");
    const s = start(["--core-address", `unix:${sock}`]);
    expect((await s.next("listening"))["coreAddress"]).toBe(`unix:${sock}`);
    expect(await roundTrip({ path: sock }, "x")).toBe("core:x");
    s.child.kill("SIGTERM");
    await s.exit;
  });

  const noPython = existsSync(SYSTEM_PYTHON) ? "" : `${SYSTEM_PYTHON} is absent`;
  if (noPython) console.warn(`--core-prefix test skipped: ${noPython}`);
  it.skipIf(noPython !== "")(
    "--core-prefix starts the core through the same-page merging helper, which keeps its pid",
    async () => {
      const merge = probeMemoryMerge(true);
      if (!merge.on)
        console.warn(
          `--core-prefix test: merging unavailable here (${merge.reason}); checking the exec only`,
        );
      const s = start(["--core-prefix", SYSTEM_PYTHON, "--core-prefix", MERGE_MEMORY_EXEC_PATH]);
      const started = await s.next("started");
      await s.next("listening");
      const corePid = Number(started["corePid"]);
      // the helper exec'd Node: the pid the supervisor reports is the fake core's, now running node
      expect(await readFile(`/proc/${corePid}/cmdline`, "utf8")).toContain("fake-core.mjs");
      if (merge.on)
        expect(await readFile(`/proc/${corePid}/ksm_stat`, "utf8")).toMatch(/^ksm_merge_any: yes$/m);
      expect(await roundTrip({ port: Number(String(started["coreAddress"]).split(":")[1]) }, "p")).toBe(
        "core:p",
      );
      s.child.kill("SIGTERM");
      expect(await s.exit).toBe(0);
    },
  );

  it("--core-node-arg loads core-gc.cjs into the core: on its signal it collects and logs a marker", async () => {
    const log = join(tmp.path, "core.log");
    const s = start([...CORE_GC_NODE_ARGS.flatMap((a) => ["--core-node-arg", a]), "--log", log]);
    const started = await s.next("started");
    await s.next("listening");
    const corePid = Number(started["corePid"]);
    const argv = (await readFile(`/proc/${corePid}/cmdline`, "utf8")).split("\0");
    // the flags sit between node and the core's script, so Node (not the core) reads them
    expect(argv.indexOf(CORE_GC_NODE_ARGS[1]!)).toBe(argv.indexOf("--require") + 1);
    expect(argv.indexOf("--require")).toBeLessThan(argv.findIndex((a) => a.endsWith("fake-core.mjs")));
    expect(lastCoreGcMarker(await readFile(log, "utf8"))).toBeUndefined();
    for (const seq of [1, 2]) {
      process.kill(corePid, CORE_GC_SIGNAL);
      expect(
        await waitFor(async () => lastCoreGcMarker(await readFile(log, "utf8"))?.seq === seq, 10_000),
      ).toBe(true);
    }
    const m = lastCoreGcMarker(await readFile(log, "utf8"))!;
    expect(m.heapUsedMib).toBeGreaterThan(0);
    expect(await roundTrip({ port: Number(String(started["coreAddress"]).split(":")[1]) }, "p")).toBe(
      "core:p",
    ); // the core lives on
    s.child.kill("SIGTERM");
    expect(await s.exit).toBe(0);
  });

  it("writes a heartbeat each second, whatever its children do; a stopped supervisor writes none", async () => {
    const s = start();
    await s.next("listening");
    const beats = () => s.events.filter((e) => e["event"] === "heartbeat").length;
    expect(await waitFor(async () => beats() >= 2, 10_000), JSON.stringify(s.events)).toBe(true);
    // stopped (as a host-side freeze stops it): no heartbeat while stopped, they resume after
    process.kill(s.child.pid!, "SIGSTOP");
    // a line written just before the stop may still be in the pipe
    await new Promise((r) => setTimeout(r, 1_000));
    const before = beats();
    await new Promise((r) => setTimeout(r, 2_500));
    expect(beats()).toBe(before);
    process.kill(s.child.pid!, "SIGCONT");
    expect(await waitFor(async () => beats() > before, 10_000)).toBe(true);
  });

  it("SIGTERM stops host, core and the core's own children", async () => {
    const marker = `flakegym-grandchild-${process.pid}-${Date.now()}`;
    const s = start([], { FAKE_CORE_GRANDCHILD: marker });
    await s.next("listening");
    expect(
      await waitFor(async () => (await findProcesses(marker)).length === 1, 5_000),
      JSON.stringify(s.events),
    ).toBe(true);
    s.child.kill("SIGTERM");
    expect(await s.exit).toBe(0);
    expect(s.events.at(-1)).toMatchObject({ event: "exit", reason: "received SIGTERM" });
    expect(await findProcesses(marker)).toEqual([]);
    expect(await findProcesses(tmp.path)).toEqual([]);
  });

  it("when one child dies it stops the other and exits 1", async () => {
    const s = start([], { FAKE_CORE_EXIT_AFTER_MS: "300" });
    expect(await s.exit).toBe(1);
    expect(s.events).toContainEqual(
      expect.objectContaining({ event: "child-exit", name: "cline-core", code: 3 }),
    );
    expect(s.events.at(-1)).toMatchObject({ event: "exit", code: 1 });
    expect(await findProcesses(tmp.path)).toEqual([]);
  });

  it("with --watch-stdin it stops when its stdin closes (the parent is gone)", async () => {
    const s = start(["--watch-stdin"]);
    await s.next("listening");
    s.child.stdin!.end();
    expect(await s.exit).toBe(1);
    expect(s.events.at(-1)).toMatchObject({ event: "exit", reason: "stdin closed (parent gone)" });
    expect(await findProcesses(tmp.path)).toEqual([]);
  });

  it("--diff-dir: on SIGUSR2 writes the workspace's changes since start (binary-safe, commits included) atomically", async () => {
    const { ws, git, base } = await gitWorkspace();
    const dir = join(tmp.path, "diff");
    const s = start(["--workspace", ws, "--diff-dir", dir]);
    await s.next("listening");
    // the agent edits, commits, and leaves an untracked binary file
    await writeFile(join(ws, "a.txt"), "one\ntwo\n");
    git("commit", "-qam", "agent commit");
    await writeFile(join(ws, "blob.bin"), Buffer.from([0, 255, 1, 254]));
    const info = async (seq: number) => {
      expect(
        await waitFor(async () => {
          const j = await readFile(join(dir, "diff.json"), "utf8").catch(() => "");
          return j !== "" && (JSON.parse(j) as { seq: number }).seq >= seq;
        }),
      ).toBe(true);
      return JSON.parse(await readFile(join(dir, "diff.json"), "utf8")) as Record<string, unknown>;
    };
    s.child.kill("SIGUSR2");
    const first = await info(1);
    const patch = await readFile(join(dir, "diff.patch"));
    expect(first).toEqual({
      seq: 1,
      baseCommit: base,
      bytes: patch.length,
      sha256: createHash("sha256").update(patch).digest("hex"),
      excluded: [],
      excludedTotal: 0,
    });
    expect(patch.toString()).toContain("+two");
    expect(patch.toString()).toContain("GIT binary patch");
    expect(git("status", "--porcelain")).toBe("?? blob.bin\n"); // the workspace's own index is untouched
    // the agent rewrites history and prunes the base's objects: the sealed base is unaffected
    git("checkout", "-q", "--orphan", "other");
    git("commit", "-qm", "orphan");
    git("branch", "-D", "main");
    git("reflog", "expire", "--expire=now", "--all");
    git("gc", "-q", "--prune=now");
    expect(() => git("cat-file", "-e", base)).toThrow();
    s.child.kill("SIGUSR2");
    expect(await info(2)).toMatchObject({ seq: 2, baseCommit: base });
    expect((await readFile(join(dir, "diff.patch"))).toString()).toContain("+two");
    s.child.kill("SIGTERM");
    expect(await s.exit).toBe(0);
  });

  it("--diff-dir behind the gate: an authorized diff request is answered by the supervisor (JSON line + patch), never from the agent's files", async () => {
    const { ws, base } = await gitWorkspace();
    const dir = join(tmp.path, "diff");
    const port = await freePort();
    const s = start(
      [
        "--workspace",
        ws,
        "--diff-dir",
        dir,
        "--core-js",
        fixture("h2-core.mjs"),
        "--core-address",
        `127.0.0.1:${port}`,
      ],
      { FLAKEGYM_CORE_TOKEN: "tok-9" },
    );
    await s.next("listening");
    await writeFile(join(ws, "a.txt"), "one\ntwo\n");
    // the agent forges the files a runner used to read
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, "diff.json"), `${JSON.stringify({ seq: 1, baseCommit: base, bytes: 7 })}\n`);
    await writeFile(join(dir, "diff.patch"), "forged\n");
    const session = http2Connect(`http://127.0.0.1:${port}`);
    session.on("error", () => {});
    const ask = (headers: Record<string, string>) =>
      new Promise<{ status: unknown; grpc: unknown; body: Buffer }>((resolve, reject) => {
        const req = session.request({ ":method": "POST", ":path": "/flakegym.Supervisor/Diff", ...headers });
        const chunks: Buffer[] = [];
        let h: Record<string, unknown> = {};
        req.on("response", (r) => {
          h = r;
        });
        req.on("data", (c: Buffer) => chunks.push(c));
        req.on("end", () =>
          resolve({ status: h[":status"], grpc: h["grpc-status"], body: Buffer.concat(chunks) }),
        );
        req.on("error", reject);
        req.end();
      });
    try {
      expect((await ask({ "flakegym-seq": "1" })).grpc).toBe("16");
      expect((await ask({ authorization: "Bearer nope", "flakegym-seq": "1" })).grpc).toBe("16");
      expect((await ask({ authorization: "Bearer tok-9", "flakegym-seq": "x" })).status).toBe(400);
      const r = await ask({ authorization: "Bearer tok-9", "flakegym-seq": "7" });
      expect(r.status).toBe(200);
      const nl = r.body.indexOf(10);
      const info = JSON.parse(r.body.subarray(0, nl).toString()) as Record<string, unknown>;
      const patch = r.body.subarray(nl + 1);
      expect(info).toMatchObject({ seq: 7, baseCommit: base, bytes: patch.length });
      expect(info["sha256"]).toBe(createHash("sha256").update(patch).digest("hex"));
      expect(patch.toString()).toContain("+two");
      expect(patch.toString()).not.toContain("forged");
    } finally {
      session.close();
    }
    s.child.kill("SIGTERM");
    expect(await s.exit).toBe(0);
  });

  it("--diff-dir outside a git repository answers with an error in diff.json", async () => {
    const dir = join(tmp.path, "diff");
    const s = start(["--diff-dir", dir]);
    await s.next("listening");
    s.child.kill("SIGUSR2");
    expect(
      await waitFor(async () => (await readFile(join(dir, "diff.json"), "utf8").catch(() => "")) !== ""),
    ).toBe(true);
    expect(JSON.parse(await readFile(join(dir, "diff.json"), "utf8"))).toMatchObject({
      seq: 1,
      error: expect.stringMatching(/not a git repository/),
    });
    s.child.kill("SIGTERM");
    expect(await s.exit).toBe(0);
  });

  it.skipIf(getPriority() > 7)(
    "--nice: host, core and the core's children run at that niceness; the caller keeps its own (skipped when this process is already nicer than 7)",
    async () => {
      const marker = `flakegym-nice-${process.pid}-${Date.now()}`;
      const own = getPriority();
      const s = start(["--nice", "7"], { FAKE_CORE_GRANDCHILD: marker });
      const started = await s.next("started");
      await s.next("listening");
      expect(await waitFor(async () => (await findProcesses(marker)).length === 1, 5_000)).toBe(true);
      const [grandchild] = await findProcesses(marker);
      expect(getPriority(Number(started["supervisorPid"]))).toBe(7);
      expect(getPriority(Number(started["hostPid"]))).toBe(7);
      expect(getPriority(Number(started["corePid"]))).toBe(7);
      expect(getPriority(grandchild!)).toBe(7);
      expect(getPriority()).toBe(own);
      s.child.kill("SIGTERM");
      expect(await s.exit).toBe(0);
      const bad = start(["--nice", "25"]);
      expect(await bad.exit).toBe(2);
      expect(bad.stderr()).toContain("--nice '25': expected a niceness from 0 to 19");
    },
  );

  it("rejects bad flags with exit 2, naming the flag", async () => {
    const s = start(["--forward", "unix:/x=127.0.0.1:1"]);
    expect(await s.exit).toBe(2);
    expect(s.stderr()).toContain("--forward 'unix:/x=127.0.0.1:1': expected 127.0.0.1:<port>=unix:<path>");
    const t = start(["--frobnicate", "1"]);
    expect(await t.exit).toBe(2);
    expect(t.stderr()).toContain("unknown flag '--frobnicate'");
  });
});
