import { loadProfiles } from "@flakegym/profiles";
import { runCli } from "@flakegym/test-utils";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readFlakeFacts } from "../../../packages/runner/src/nix/flake-facts.js";
import { createStubFlake, NIX_MISSING_REASON, nixAvailable, type StubFlake } from "./stub-flake.js";

// The runner's flake-facts reader against real `nix eval` of the flake (nixpkgs stubbed).

const HAVE_NIX = nixAvailable();
if (!HAVE_NIX) console.warn(NIX_MISSING_REASON);

describe.skipIf(!HAVE_NIX)("readFlakeFacts with real nix", () => {
  let flake: StubFlake;
  beforeAll(async () => {
    flake = await createStubFlake();
  });
  afterAll(async () => flake?.cleanup());

  it("reads lib.flakegym.<system>: every profile of profiles.json with its devShell and image", async () => {
    for (const system of ["x86_64-linux", "aarch64-linux"]) {
      const r = await readFlakeFacts({
        flakeRef: flake.ref,
        system,
        extraArgs: flake.overrideArgs,
        timeoutMs: 60_000,
      });
      expect(r.kind).toBe("facts");
      if (r.kind !== "facts") return;
      expect(r.attribute).toBe(`lib.flakegym.${system}`);
      expect(r.facts.system).toBe(system);
      for (const [id, p] of Object.entries(loadProfiles().profiles)) {
        const f = r.facts.profiles[id as keyof typeof r.facts.profiles];
        expect(f).toMatchObject({ nixName: p.nixName, devShell: p.nixName, smoke: p.smoke });
        expect(f.image).toMatchObject({ package: `${p.nixName}-container`, name: `flakegym/${p.nixName}` });
        expect(f.image.tag).toMatch(/^[0-9a-z]{32}$/);
      }
      const snap = r.facts.snapshots["ratatui-2148"]!;
      expect(snap.image.package).toBe("snapshot-ratatui-2148");
      expect(snap.commit).toBe("527e1df9296e4b6d56dc665788ce558558b480c6");
    }
  });

  it("fails naming the attribute for a system the flake does not build", async () => {
    const p = readFlakeFacts({ flakeRef: flake.ref, system: "riscv64-linux", extraArgs: flake.overrideArgs });
    await expect(p).rejects.toMatchObject({ code: "E_NIX_EVAL" });
    await expect(p).rejects.toThrow(/lib\.flakegym\.riscv64-linux/);
  });

  it("`flakegym nix facts` prints them, as a table or as JSON", async () => {
    const overrides = [
      "--override-input",
      `nixpkgs=path:${flake.dir}/tests/nix/stub-nixpkgs`,
      "--override-input",
      `ratatui=path:${flake.dir}/tests/nix/stub-ratatui`,
    ];
    const base = ["nix", "facts", "--flake", flake.ref, "--system", "x86_64-linux", ...overrides];
    const json = await runCli([...base, "--json"]);
    expect(json.exitCode, json.stderr).toBe(0);
    const facts = JSON.parse(json.stdout) as { profiles: Record<string, { image: { name: string } }> };
    expect(Object.keys(facts.profiles).sort()).toEqual(Object.keys(loadProfiles().profiles).sort());

    const text = await runCli(base);
    expect(text.exitCode, text.stderr).toBe(0);
    expect(text.stdout).toMatch(
      /^rust\s+rust-env\s+flakegym\/rust-env:[0-9a-z]{32}\s+\.#rust-env-container$/m,
    );
    expect(text.stdout).toMatch(
      /^ratatui-2148\s+rust\s+flakegym\/snapshot-ratatui-2148:\S+\s+\.#snapshot-ratatui-2148$/m,
    );
  });

  it("`flakegym nix facts` without nix says so and exits 1", async () => {
    const r = await runCli(["nix", "facts", "--flake", flake.ref], { env: { PATH: "/nonexistent" } });
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toContain("no flake facts: 'nix' is not installed");
  });
});
