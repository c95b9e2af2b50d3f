import { nomadDoctorRows } from "@flakegym/runner";
import { DOCUMENTED_CAPABILITIES, startNomadDouble } from "@flakegym/test-utils";
import { describe, expect, it } from "vitest";

describe("nomadDoctorRows", () => {
  it("skips when NOMAD_ADDR is unset", async () => {
    expect(await nomadDoctorRows({})).toEqual([
      { check: "nomad", status: "info", value: "NOMAD_ADDR is not set (only the nomad backend needs it)" },
    ]);
  });

  it("reports reachability, leader and version; warns on an old Nomad", async () => {
    for (const [version, status] of [
      ["2.0.6", "ok"],
      ["1.9.3", "warn"],
    ] as const) {
      const double = await startNomadDouble({ version, token: "tk" });
      try {
        const rows = await nomadDoctorRows({ NOMAD_ADDR: double.url, NOMAD_TOKEN: "tk" });
        expect(rows[0]).toMatchObject({ check: "nomad reachable", status: "ok" });
        expect(rows[0]!.value).toContain("leader 127.0.0.1:4647");
        expect(rows[1]).toMatchObject({ check: "nomad token", status: "ok" });
        expect(rows[2]).toMatchObject({ check: "nomad version", status });
        expect(rows[2]!.value).toContain(version);
      } finally {
        await double.close();
      }
    }
  });

  it("the token docs/reference/nomad.md describes (no agent:read): Nomad reachable, token fine, version not checked (a warning)", async () => {
    const double = await startNomadDouble({
      aclTokens: { documented: { namespaces: { default: DOCUMENTED_CAPABILITIES } } },
    });
    try {
      const rows = await nomadDoctorRows({ NOMAD_ADDR: double.url, NOMAD_TOKEN: "documented" });
      expect(rows.map((r) => [r.check, r.status])).toEqual([
        ["nomad reachable", "ok"],
        ["nomad token", "ok"],
        ["nomad version", "warn"],
      ]);
      expect(rows[2]!.value).toContain("agent:read");
    } finally {
      await double.close();
    }
  });

  it("fails with a hint when Nomad is unreachable or the token is refused", async () => {
    const rows = await nomadDoctorRows({ NOMAD_ADDR: "http://127.0.0.1:1" }, { timeoutMs: 2_000 });
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ check: "nomad reachable", status: "fail" });
    expect(rows[0]!.detail).toContain("NOMAD_ADDR");
    const double = await startNomadDouble({ token: "right" });
    try {
      // the leader needs no token (like Nomad): reachable, but the token row fails, naming NOMAD_TOKEN
      const denied = await nomadDoctorRows({ NOMAD_ADDR: double.url, NOMAD_TOKEN: "wrong" });
      expect(denied[0]).toMatchObject({ check: "nomad reachable", status: "ok" });
      expect(denied[1]).toMatchObject({ check: "nomad token", status: "fail" });
      expect(denied[1]!.detail).toContain("NOMAD_TOKEN is not a valid ACL token");
    } finally {
      await double.close();
    }
    const bad = await nomadDoctorRows({ NOMAD_ADDR: "127.0.0.1:4646" });
    expect(bad[0]).toMatchObject({ check: "nomad config", status: "fail" });
  });
});
