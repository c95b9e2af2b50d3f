import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import {
  coreResourceRows,
  coreVersionRow,
  DoctorRow,
  doctorProbes,
  nixImagesRow,
  nixRolloutProbe,
  nixVersionRow,
  renderDoctorTable,
  toolProbe,
} from "../../../src/cli/commands/doctor.js";

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

  it("lists the cline probe first, then bubblewrap, podman, nix, rollout --images nix, nomad", () => {
    expect(doctorProbes.map((p) => p.name)).toEqual([
      "cline",
      "bubblewrap",
      "podman",
      "nix",
      "rollout --images nix",
      "nomad",
    ]);
  });

  it("reports rollout --images nix from this machine's podman, Nix and image records", async () => {
    const cache = mkdtempSync(join(tmpdir(), "flakegym-doctor-images-"));
    vi.stubEnv("FLAKEGYM_CACHE", cache);
    try {
      const [row] = await nixRolloutProbe.run(ctx);
      // no records in an empty cache: never ok, and it says so naming the file
      expect(row).toMatchObject({ check: "rollout --images nix", status: "info" });
      expect(row?.detail).toContain(`no images recorded in ${join(cache, "images.json")}`);
    } finally {
      vi.unstubAllEnvs();
      rmSync(cache, { recursive: true, force: true });
    }
  });

  it("judges Nix by what this flake needs: 2.18+ is ok; older says what it can and cannot do", () => {
    expect(nixVersionRow("nix (Nix) 2.26.3")).toEqual({
      check: "nix",
      status: "ok",
      value: "nix (Nix) 2.26.3",
    });
    expect(nixVersionRow("nix (Nix) 2.18.0").status).toBe("ok");
    expect(nixVersionRow("nix (Nix) 3.1.0").status).toBe("ok");
    const old = nixVersionRow("nix (Nix) 2.8.0");
    expect(old).toMatchObject({ status: "warn", value: "nix (Nix) 2.8.0 (older than 2.18)" });
    expect(old.detail).toMatch(/can: evaluate the flake against the stub nixpkgs/);
    expect(old.detail).toMatch(/cannot: evaluate nixpkgs \(its lib\/minver\.nix needs Nix >= 2\.18\)/);
    expect(old.detail).toMatch(/trixie's nix-bin/);
    expect(nixVersionRow("nix (Nix) 2.17.9").status).toBe("warn");
    expect(nixVersionRow("garbage")).toMatchObject({
      status: "warn",
      detail: expect.stringMatching(/cannot read/),
    });
    expect(DoctorRow.parse(old)).toEqual(old);
  });
});

describe("the nix images row", () => {
  it("says whether the flake's images can be built here, and if not why and what to run", () => {
    expect(nixImagesRow("nix (Nix) 2.26.3").status).toBe("ok");
    const old = nixImagesRow("nix (Nix) 2.8.0");
    expect(old).toMatchObject({ check: "nix images", status: "info" });
    expect(old.detail).toContain("2.8.0 cannot evaluate nixpkgs");
    expect(old.detail).toContain("./result | podman load");
    expect(nixImagesRow(undefined).detail).toContain("`nix` is not installed");
    expect(DoctorRow.parse(old)).toEqual(old);
  });
});

describe("the cline core rows", () => {
  it("a core reporting another version than its package ships is a warning naming both", () => {
    const r = coreVersionRow("0.0.1-other", "1.0.10");
    expect([r.status, r.value]).toEqual(["warn", "reports itself as Cline 0.0.1-other"]);
    expect(r.detail).toMatch(/^expected .+ for cline@1\.0\.10$/);
  });

  it("memory, page merging and the one-byte bundle (off is a warning, with its reason)", () => {
    const rows = coreResourceRows(
      {
        memoryMerge: { on: false, reason: "no prctl" },
        oneByte: { on: false, reason: "not built" },
      } as never,
      { coreRssBytes: 3 * 1024 * 1024, hostRssBytes: 1024 * 1024 },
    );
    expect(rows.map((r) => [r.check, r.status])).toEqual([
      ["core memory", "info"],
      ["same-page merging", "info"],
      ["one-byte bundle", "warn"],
    ]);
    expect(rows[1]!.value).toBe("off: no prctl");
    expect(rows[2]!.value).toBe("off: not built");
    expect(rows.every((r) => DoctorRow.safeParse(r).success)).toBe(true);
  });
});
