/** `flakegym doctor` as a user runs it: a real core, a scripted task, tool probes. */
import { probeMemoryMerge } from "@flakegym/cline-vendor";
import { runCli } from "@flakegym/test-utils";
import { describe, expect, it } from "vitest";

describe("flakegym doctor (real process, real core)", () => {
  it("--json reports the pinned core, a completed scripted task and the tool probes", async () => {
    const r = await runCli(["doctor", "--json"], { timeoutMs: 170_000 });
    expect(r.stderr).toBe("");
    const rows = JSON.parse(r.stdout) as { check: string; status: string; value: string }[];
    const row = (check: string) => rows.find((x) => x.check === check);
    expect(row("cline package")).toMatchObject({
      status: "ok",
      value: expect.stringContaining("cline@1.0.10"),
    });
    expect(row("cline core")).toMatchObject({ status: "ok", value: "reports itself as Cline 3.52.0" });
    expect(row("core boot")?.value).toMatch(/^\d+ ms/);
    expect(row("scripted task")).toMatchObject({
      status: "ok",
      value: expect.stringMatching(/^completed in \d+ ms/),
    });
    expect(row("core memory")?.value).toMatch(/core RSS \d+ MB/);
    // the doctor reports what the launcher decided, for this machine
    const merge = probeMemoryMerge();
    expect(row("same-page merging")?.value).toBe(
      merge.on ? "on (idle cores share identical pages)" : `off: ${merge.reason}`,
    );
    for (const tool of ["bubblewrap", "podman", "nix"]) expect(["ok", "warn"]).toContain(row(tool)?.status);
    expect(r.exitCode).toBe(rows.some((x) => x.status === "fail") ? 1 : 0);
  });
});
