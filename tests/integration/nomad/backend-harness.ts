import {
  createNomadBackend,
  createNomadClient,
  type NomadBackend,
  type NomadBackendOptionsInput,
  type NomadProgress,
  nomadVar,
} from "@flakegym/runner";
import { type NomadDouble, type NomadDoubleOptions, startNomadDouble } from "@flakegym/test-utils";
import { afterEach, expect } from "vitest";

/**
 * The Nomad backend against the in-process double, as the backend and isolation suites set it up:
 * one double per test, backends closed after it, and after every test the double's job table must
 * be empty and no task may still run — the backend never leaks a job, whatever happened.
 * Registers its `afterEach` in the calling file.
 */

export type WorkerSpec = Parameters<NomadBackend["start"]>[0];

export const IMAGE = `oci.example/flakegym/python-env@sha256:${"c0ffee00".repeat(8)}`;

export interface HarnessDefaults {
  /** Options every double of the file starts with (a test's own come on top). */
  readonly double?: NomadDoubleOptions;
  readonly runId: string;
  readonly memoryMb: number;
}

export function nomadBackendHarness(defaults: HarnessDefaults) {
  let double: NomadDouble | undefined;
  const backends: NomadBackend[] = [];
  let seq = 0;

  afterEach(async () => {
    try {
      if (double) {
        expect(double.jobs().map((j) => j.ID)).toEqual([]);
        await double.waitFor(() => double!.liveTasks() === 0, 5_000);
      }
    } finally {
      for (const b of backends.splice(0)) await b.close();
      await double?.close();
      double = undefined;
    }
  });

  async function setup(
    doubleOpts: NomadDoubleOptions = {},
    backendOpts: Partial<NomadBackendOptionsInput> = {},
    extra: { token?: string; probe?: () => Promise<boolean> } = {},
  ) {
    double = await startNomadDouble({ ...defaults.double, ...doubleOpts });
    const client = createNomadClient({
      address: double.url,
      ...(extra.token ? { token: extra.token } : {}),
      retry: { attempts: 4, baseDelayMs: 5, maxDelayMs: 20 },
    });
    const events: NomadProgress[] = [];
    const backend = createNomadBackend(
      {
        driver: { driver: "docker" },
        // The double runs container commands on this machine: keep the workspace in the allocation
        // dir, not at the image's /workspace (which here would be the host's).
        workspaceDir: `${nomadVar("NOMAD_ALLOC_DIR")}/workspace`,
        gatewayAdvertise: "10.9.8.7:8089",
        startTimeoutMs: 5_000,
        pollMs: 2_000,
        probeIntervalMs: 30,
        cleanupTimeoutMs: 5_000,
        ...backendOpts,
      },
      { client, onProgress: (p) => events.push(p), ...(extra.probe ? { probe: extra.probe } : {}) },
    );
    backends.push(backend);
    return { double, client, backend, events };
  }

  function spec(over: Partial<WorkerSpec> = {}): WorkerSpec {
    seq++;
    return {
      runId: defaults.runId,
      taskId: "demo-task",
      trajectoryId: `traj-${seq}`,
      profile: "python",
      workspace: "",
      image: IMAGE,
      gateway: { url: "http://127.0.0.1:8089/v1" },
      limits: { memoryMb: defaults.memoryMb, pids: 512, wallClockMs: 600_000 },
      agent: true,
      ...over,
    };
  }

  /** A backend the test made itself, closed after it like the harness's own. */
  const track = (b: NomadBackend) => void backends.push(b);

  return { setup, spec, track };
}

/** The error `p` rejects with (fails when it resolves). */
export async function rejection(p: Promise<unknown>): Promise<Error & { code?: string; hint?: string }> {
  try {
    await p;
  } catch (e) {
    return e as Error & { code?: string; hint?: string };
  }
  throw new Error("expected a rejection");
}
