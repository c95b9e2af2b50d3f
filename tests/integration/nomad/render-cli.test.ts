import { createNomadClient, workerJobFactProblems } from "@flakegym/runner";
import { makeTempDir, runCli, startNomadDouble } from "@flakegym/test-utils";
import { describe, expect, it } from "vitest";

const IMAGE = `oci.example/flakegym/node-env@sha256:${"5e".repeat(32)}`;

describe("flakegym nomad render (real process)", () => {
  it('prints {"Job": ...} that Nomad accepts and dispatches', async () => {
    const r = await runCli([
      "nomad",
      "render",
      "--task",
      "demo",
      "--profile",
      "node",
      "--image",
      IMAGE,
      "--gateway-advertise",
      "10.0.0.5:8089",
      "--run",
      "r-cli",
    ]);
    expect(r.stderr).toBe("");
    expect(r.exitCode).toBe(0);
    const body = JSON.parse(r.stdout) as { Job: { ID: string; Meta: Record<string, string> } };
    expect(Object.keys(body)).toEqual(["Job"]);
    expect(body.Job.ID).toMatch(/^flakegym-r-cli-demo-agent-[0-9a-f]{8}$/);
    expect(body.Job.Meta).toMatchObject({
      flakegym_run: "r-cli",
      flakegym_task: "demo",
      flakegym_profile: "node",
    });
    // The rendered job holds Nomad's facts: memory above the core, replace off, a dedicated
    // network, the writable layer capped at the disk, no secrets.
    expect(workerJobFactProblems(body.Job as never)).toEqual([]);
    expect(JSON.stringify(body.Job)).toContain('"network_mode":"flakegym-egress"');

    // What `nomad job run -json` would send: the double registers it, and a dispatch with the
    // required meta runs a worker allocation.
    const double = await startNomadDouble();
    const client = createNomadClient({ address: double.url });
    try {
      await client.jobs.register(body.Job as never);
      const d = await client.jobs.dispatch(body.Job.ID, {
        meta: {
          flakegym_trajectory: "t1",
          flakegym_expires: String(Date.now() + 60_000),
          flakegym_policy_url: "http://10.0.0.5:8089/t/t1/v1",
          flakegym_core_token: "t1-token",
        },
      });
      await double.waitFor(() =>
        double.allocations().some((a) => (a as { ClientStatus: string }).ClientStatus === "running"),
      );
      await client.jobs.deregister(d.data.DispatchedJobID, { purge: true });
      await client.jobs.deregister(body.Job.ID, { purge: true });
      expect(double.jobs()).toEqual([]);
    } finally {
      client.close();
      await double.close();
    }
  });

  it("--canonical fills the server's defaults", async () => {
    const r = await runCli([
      "nomad",
      "render",
      "--task",
      "demo",
      "--profile",
      "node",
      "--image",
      IMAGE,
      "--gateway-advertise",
      "10.0.0.5:8089",
      "--canonical",
    ]);
    expect(r.exitCode).toBe(0);
    const job = (JSON.parse(r.stdout) as { Job: Record<string, unknown> }).Job;
    expect(job).toMatchObject({ Namespace: "default", Region: "global", Priority: 50, NodePool: "default" });
  });

  it("usage errors name the flag and what to do (exit 2)", async () => {
    const loop = await runCli([
      "nomad",
      "render",
      "--task",
      "demo",
      "--profile",
      "node",
      "--image",
      IMAGE,
      "--gateway-advertise",
      "127.0.0.1:8089",
    ]);
    expect(loop.exitCode).toBe(2);
    expect(loop.stderr).toContain("is a loopback address");
    expect(loop.stderr).toContain("hint: pass --gateway-advertise <host:port>");
    const noImage = await runCli([
      "nomad",
      "render",
      "--task",
      "demo",
      "--profile",
      "node",
      "--gateway-advertise",
      "10.0.0.5:1",
    ]);
    expect(noImage.exitCode).toBe(2);
    expect(noImage.stderr).toContain("--driver docker needs --image");
    const tag = await runCli([
      "nomad",
      "render",
      "--task",
      "demo",
      "--profile",
      "node",
      "--image",
      "x:latest",
      "--gateway-advertise",
      "10.0.0.5:1",
    ]);
    expect(tag.exitCode).toBe(2);
    expect(tag.stderr).toContain("not pinned by digest");
    await using empty = await makeTempDir();
    const unknown = await runCli([
      "nomad",
      "render",
      "--task",
      "nope",
      "--catalog",
      empty.path,
      "--image",
      IMAGE,
      "--gateway-advertise",
      "10.0.0.5:1",
    ]);
    expect(unknown.exitCode).toBe(2);
    expect(unknown.stderr).toContain("task 'nope' is not in the task catalog");
    expect(unknown.stderr).toContain("pass --profile");
  });
});
