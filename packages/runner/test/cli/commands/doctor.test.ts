import { describe, expect, it } from "vitest";
import { DoctorRow, doctorProbes, renderDoctorTable, toolProbe } from "../../../src/cli/commands/doctor.js";

const ctx = { signal: new AbortController().signal, timeoutMs: 10_000, progress: () => {} };

describe("doctor", () => {
  it("renders rows as an aligned table with details under the value", () => {
    const out = renderDoctorTable([
      { check: "cline package", status: "ok", value: "cline@1.0.10" },
      { check: "podman", status: "warn", value: "not installed", detail: "needed by the podman backend" },
    ]);
    expect(out.split("\n")).toEqual([
      "CHECK          STATUS  VALUE",
      "cline package  ok      cline@1.0.10",
      "podman         warn    not installed",
      "                       needed by the podman backend",
      "",
    ]);
  });

  it("a tool probe reports a present binary's version line (real `node --version`)", async () => {
    const [row] = await toolProbe("node", process.execPath, "why").run(ctx);
    expect(row).toEqual({ check: "node", status: "ok", value: process.version });
  });

  it("a tool probe warns, with the reason, when the binary is missing", async () => {
    const [row] = await toolProbe("frob", "flakegym-no-such-binary-xyz", "needed for frobbing").run(ctx);
    expect(row).toEqual({
      check: "frob",
      status: "warn",
      value: "not installed",
      detail: "needed for frobbing",
    });
    expect(DoctorRow.parse(row)).toEqual(row);
  });

  it("lists the cline probe first, then bubblewrap, podman, nix, nomad", () => {
    expect(doctorProbes.map((p) => p.name)).toEqual(["cline", "bubblewrap", "podman", "nix", "nomad"]);
  });
});
