import type { NomadBackendOptionsInput } from "@flakegym/runner";
import { describe, expect, it } from "vitest";
import { nomadBackendHarness, rejection } from "./backend-harness.js";

/**
 * Issue 33 on the Nomad double: what a hostile workload can find in its worker, raw_exec's
 * refusal, the backend's namespace, and placement that waits for a node. The double behaves like
 * Nomad where it matters here: raw_exec tasks inherit the client's environment minus Nomad's
 * short denylist (double.test.ts pins that), so only flakegym's `env -i` keeps keys out.
 */

const CANARY = "sk-canary-4f1d2e9b7c";
/** The Nomad client's environment: what an operator's shell typically carries. */
const CLIENT_ENV = {
  PATH: process.env.PATH,
  HOME: process.env.HOME,
  OPENAI_API_KEY: CANARY,
  ANTHROPIC_API_KEY: CANARY,
  HF_TOKEN: CANARY,
  NOMAD_TOKEN: CANARY,
  FLAKEGYM_UPSTREAM_KEY: CANARY,
};

/** Searches everything the worker process can read about its own environment for key-like values. */
const HOSTILE = [
  "env",
  "tr '\\0' '\\n' < /proc/self/environ",
  "tr '\\0' '\\n' < /proc/$$/environ",
  'for f in "$HOME"/.bashrc "$HOME"/.profile; do cat "$f" 2>/dev/null; done',
  "true",
].join("; ");

const { setup, spec } = nomadBackendHarness({
  runId: "run-iso",
  memoryMb: 1024,
  double: { clientEnv: CLIENT_ENV },
});

describe("a hostile workload searching its worker for API keys finds none", () => {
  const drivers: Array<[string, NomadBackendOptionsInput["driver"]]> = [
    ["raw_exec", { driver: "raw_exec", command: "/bin/sh", allowUnisolated: true }],
    ["docker", { driver: "docker" }],
    ["podman", { driver: "podman" }],
  ];

  for (const [name, driver] of drivers) {
    it(`exec on ${name}: its environment holds the allowlist only`, async () => {
      const { backend } = await setup({}, { driver });
      const w = await backend.start(spec({ agent: false }));
      try {
        const r = await w.exec(HOSTILE, { timeoutMs: 10_000 });
        expect(r.exitCode).toBe(0);
        expect(r.stdout).toContain("FLAKEGYM_WORKSPACE=");
        expect(r.stdout).not.toContain(CANARY);
        expect(r.stdout).not.toMatch(/^(OPENAI_API_KEY|ANTHROPIC_API_KEY|HF_TOKEN|NOMAD_TOKEN)=/m);
      } finally {
        await w.stop();
      }
    });
  }

  it("an agent worker on raw_exec: the supervisor's environment (which the core and every agent command inherit) has no key", async () => {
    // The worker's "supervisor" dumps what it was started with where the runner can read it
    // (the allocation's config dir, through fs/cat), then serves until stopped.
    const dump = [
      'mkdir -p "$FLAKEGYM_CONFIG_DIR"',
      `{ ${HOSTILE}; } > "$FLAKEGYM_CONFIG_DIR/found.txt"`,
      "exec sleep 60",
    ].join("; ");
    const { double, client, backend } = await setup(
      {},
      { driver: { driver: "raw_exec", command: "/bin/sh", args: ["-c", dump], allowUnisolated: true } },
      // stands in for the core's gRPC: ready once the dump is written
      {
        probe: async () =>
          double?.allocations().some((a) => a.JobID.includes("/dispatch-")) === true && (await dumped()),
      },
    );
    let allocId = "";
    async function dumped(): Promise<boolean> {
      const a = double?.allocations().find((x) => x.JobID.includes("/dispatch-"));
      if (!a) return false;
      allocId = a.ID;
      try {
        return (await client.fs.cat(a.ID, "alloc/cline/found.txt")).data.length > 0;
      } catch {
        return false;
      }
    }
    const w = await backend.start(spec());
    try {
      const found = (await client.fs.cat(allocId, "alloc/cline/found.txt")).data.toString("utf8");
      expect(found).toContain("FLAKEGYM_CORE_PORT=");
      expect(found).not.toContain(CANARY);
    } finally {
      await w.stop();
    }
  });
});

describe("raw_exec is refused for agents unless explicitly allowed", () => {
  it("start fails before anything is registered, naming what raw_exec does not isolate", async () => {
    const { double, backend } = await setup({}, { driver: { driver: "raw_exec", command: "/bin/sh" } });
    const e = await rejection(backend.start(spec()));
    expect(e.code).toBe("E_NOMAD_CONFIG");
    expect(e.message).toContain("no user separation");
    expect(e.message).toContain("no network namespace");
    expect(e.message).toContain("allowUnisolated");
    expect(double.jobs()).toEqual([]);
  });
});

describe("namespace and placement", () => {
  it("honours the backend's namespace when following the allocation (the client's is another)", async () => {
    const { double, backend } = await setup({ namespaces: ["default", "train"] }, { namespace: "train" });
    const w = await backend.start(spec());
    expect(double.jobs().every((j) => j.Namespace === "train")).toBe(true);
    await w.stop();
  });

  it("waits while no node is ready (scaling from zero) and starts once one is", async () => {
    const { double, backend, events } = await setup({ nodeReady: false });
    const started = backend.start(spec());
    await double.waitFor(() => events.some((e) => e.kind === "waiting"));
    double.setNodeReady(true);
    const w = await started;
    const waiting = events.find((e) => e.kind === "waiting") as { reason: string };
    expect(waiting.reason).toContain("0 nodes evaluated");
    expect(waiting.reason).toContain("ready");
    await w.stop();
  });

  it("a constraint no node meets fails at once, naming it; a node that meets it runs the worker", async () => {
    const gvisor = [
      { LTarget: "$" + "{attr.driver.docker.runtimes}", RTarget: "runsc", Operand: "set_contains" },
    ];
    const runcOnly = await setup({}, { driver: { driver: "docker" }, constraints: gvisor });
    const e = await rejection(runcOnly.backend.start(spec()));
    expect(e.code).toBe("E_NOMAD_PLACEMENT");
    expect(e.message).toContain("attr.driver.docker.runtimes} set_contains runsc");
    expect(runcOnly.double.jobs()).toEqual([]);
    const { backend } = await setup(
      { nodeAttributes: { "driver.docker.runtimes": "runc,runsc" } },
      { driver: { driver: "docker", runtime: "runsc" }, constraints: gvisor },
    );
    const w = await backend.start(spec());
    await w.stop();
  });

  it("the wait is bounded by the start deadline, with the scheduler's reason", async () => {
    const { backend } = await setup({ nodeReady: false }, { startTimeoutMs: 800 });
    const e = await rejection(backend.start(spec()));
    expect(e.code).toBe("E_NOMAD_START_TIMEOUT");
    expect(e.message).toContain("no client node in the job's datacenters and node pool is ready");
  });
});

describe("resources and lost nodes (the double enforces memory and replaces lost allocations like Nomad)", () => {
  const node = JSON.stringify(process.execPath);

  it("an agent worker above its memory is OOM-killed and exits with reason memory", async () => {
    // limit 128 MB + the core's 416 MB = MemoryMB 544, the hard limit; this "core" grows past it
    const hog = `exec ${node} -e "setTimeout(() => { globalThis.b = Buffer.alloc(700 * 1024 * 1024, 1) }, 300); setTimeout(() => {}, 30000)"`;
    const { backend } = await setup(
      {},
      { driver: { driver: "raw_exec", command: "/bin/sh", args: ["-c", hog], allowUnisolated: true } },
      { probe: async () => true },
    );
    const w = await backend.start(spec({ limits: { memoryMb: 128, pids: 512, wallClockMs: 600_000 } }));
    try {
      const exit = await w.exited!;
      expect(exit.reason).toBe("memory");
    } finally {
      await w.stop();
    }
  });

  it("a lost worker is not replaced (disconnect replace = false): no second worker runs the trajectory", async () => {
    const { double, backend } = await setup(
      {},
      {
        driver: {
          driver: "raw_exec",
          command: "/bin/sh",
          args: ["-c", "exec sleep 60"],
          allowUnisolated: true,
        },
      },
      { probe: async () => true },
    );
    const w = await backend.start(spec());
    try {
      const mine = () => double.allocations().filter((a) => a.JobID.includes("/dispatch-"));
      await double.loseAllocation(mine()[0]!.ID);
      const exit = await w.exited!;
      expect(exit.reason).toBe("crashed");
      await new Promise((r) => setTimeout(r, 300));
      expect(mine().map((a) => (a as { ClientStatus: string }).ClientStatus)).toEqual(["lost"]);
    } finally {
      await w.stop();
    }
  });
});
