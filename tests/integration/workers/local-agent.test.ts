import { existsSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { join } from "node:path";
import { createClineClient, runClineTask } from "@flakegym/cline-vendor";
import { createLocalBackend, forkTree, type Worker } from "@flakegym/runner";
import { findProcesses, makeTempDir, say, startScriptedPolicy, waitFor, xmlTool } from "@flakegym/test-utils";
import { describe, expect, it } from "vitest";

// The real Cline core (host + core under cline-vendor's supervisor) inside a local worker's
// bubblewrap sandbox, driven over gRPC by a scripted policy reached only through the gateway's unix
// socket. One boot serves both cases to keep the suite lean.

const hasBwrap = existsSync("/usr/bin/bwrap");
if (!hasBwrap) console.warn("local agent suite skipped: bubblewrap (bwrap) is not installed");

const bodyText = (body: unknown) => JSON.stringify(body);

describe.skipIf(!hasBwrap)("local agent worker (real Cline core in bubblewrap)", () => {
  it("completes a task in /workspace, and the agent's hostile commands are contained", async () => {
    await using tmp = await makeTempDir("flakegym-agent-");
    const lower = join(tmp.path, "snap");
    await mkdir(join(lower, "workspace"), { recursive: true });
    await writeFile(join(lower, "workspace", "README.md"), "# demo\n");
    const fork = await forkTree(lower, { dest: join(tmp.path, "fork"), quotaMb: 256 });
    let hostConnections = 0;
    const hostServer = createServer((s) => {
      hostConnections++;
      s.end("host secret\n");
    });
    await new Promise<void>((r) => hostServer.listen(0, "127.0.0.1", r));
    const hostPort = (hostServer.address() as { port: number }).port;
    const hostile = [
      "cat /etc/shadow",
      `bash -c 'exec 3<>/dev/tcp/127.0.0.1/${hostPort} && cat <&3'`,
      `node -e 'require("net").connect(80,"192.0.2.1").on("error",e=>console.log("outside:",e.code))'`,
      `ls ${tmp.path}`,
      "echo pwd=$(pwd) home=$HOME",
      // two users (issue 42, a root runner): the core's processes and dirs are out of reach (the
      // markers are computed, so the command's own text, echoed back to the policy, holds none)
      "echo uid=$(id -u)",
      'for p in /proc/[0-9]*; do [ "$(stat -c %u $p)" = 0 ] && { kill -0 $(basename $p) 2>/dev/null && echo core$((1+1))-reached || echo core$((1+1))-denied; }; done',
      `cat ${tmp.path}/workers/*/w/config/core.log >/dev/null || echo config$((1+1))-closed`,
      `ls ${tmp.path}/workers/*/w/sock >/dev/null || echo sock$((1+1))-closed`,
    ].join("; ");
    const socketPath = join(tmp.path, "gateway.sock");
    const policy = await startScriptedPolicy(
      [
        say(`Writing the file.\n${xmlTool.writeToFile("hello.txt", "hi from the sandbox")}`),
        say(`Checking the environment.\n${xmlTool.executeCommand(hostile)}`),
        say(xmlTool.attemptCompletion("done")),
      ],
      { socketPath },
    );
    const backend = createLocalBackend({ stateDir: join(tmp.path, "workers") });
    let worker: Worker | undefined;
    try {
      worker = await backend.start({
        runId: "agent",
        taskId: "demo",
        trajectoryId: "t0",
        profile: "node",
        workspace: join(fork.tree, "workspace"),
        gateway: { socketPath },
        limits: { memoryMb: 2048, pids: 512, cpuSeconds: 600, diskMb: 256, wallClockMs: 300_000 },
        agent: true,
      });
      expect(worker.agentAddress).toMatch(/^unix:/);
      expect(worker.policyBaseUrl).toBe("http://127.0.0.1:18080/v1");
      const client = createClineClient({ address: worker.agentAddress! });
      try {
        const run = await runClineTask({
          client,
          prompt: "Create hello.txt, then check the environment.",
          provider: { kind: "openai", baseUrl: worker.policyBaseUrl!, modelId: "flakegym-scripted" },
          limits: { idleMs: 90_000 },
        });
        expect(run.outcome.kind).toBe("completed");
      } finally {
        client.close();
      }
      expect(await readFile(join(fork.tree, "workspace", "hello.txt"), "utf8")).toBe("hi from the sandbox");
      expect(policy.requests.length).toBe(3);
      // The command's output comes back to the policy in the next request.
      const seen = bodyText(policy.requests[2]!.body);
      expect(seen).toContain("/etc/shadow: No such file");
      expect(seen).toContain("Connection refused");
      expect(seen).toContain("outside: ENETUNREACH");
      expect(seen).toContain("pwd=/workspace home=/sandbox-home");
      expect(seen).not.toContain("host secret");
      if (process.getuid?.() === 0) {
        expect(worker.agentUsers).toBe("apart");
        expect(seen).toContain("uid=1000");
        expect(seen).toContain("core2-denied");
        expect(seen).not.toContain("core2-reached");
        expect(seen).toContain("config2-closed");
        expect(seen).toContain("sock2-closed");
      } else console.log("local-agent: one user (the runner is not root): the two-user checks skipped");
      expect(hostConnections).toBe(0);
      // Prompts see sandbox paths, not the host's fork path.
      expect(bodyText(policy.requests[0]!.body)).not.toContain(fork.tree);
      // the config dir (artifacts) is on the host
      expect(existsSync(join(worker.configDir!, "core.log"))).toBe(true);
      // exec shares the sandbox with the agent
      expect((await worker.exec("cat hello.txt")).stdout).toBe("hi from the sandbox");
    } finally {
      await worker?.stop();
      await policy.close();
      hostServer.close();
    }
    expect(await worker!.exited).toEqual({ reason: "stopped" });
    expect(await waitFor(async () => (await findProcesses(fork.tree)).length === 0, 5000)).toBe(true);
    expect(await findProcesses("cline-core.js")).toSatisfy((ps: { cmdline: string }[]) =>
      ps.every((p) => !p.cmdline.includes(tmp.path)),
    );
    await fork.release();
  });
});
