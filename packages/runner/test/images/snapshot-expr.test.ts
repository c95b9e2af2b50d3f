import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { nixString, snapshotImageExpr } from "../../src/images/snapshot-expr.js";

// "${HOME}" written without a template-looking literal (what a shell command may well contain)
const HOME_REF = ["$", "{HOME}"].join("");
const spec = {
  taskId: "tinygauge-vertical",
  repo: "catalog:tinygauge-vertical",
  commit: "69b86d28130d8b8c779c6b3202f06729a7cce58b",
  profile: "rust" as const,
  install: ["cargo build --offline --tests --quiet"],
  smoke: [`echo "${HOME_REF}" \\ done`],
  network: "none" as const,
};

let HAVE_NIX_INSTANTIATE = true;
try {
  execFileSync("nix-instantiate", ["--version"], { stdio: "ignore" });
} catch {
  HAVE_NIX_INSTANTIATE = false;
  console.log("skipped the Nix read-back of nixString: nix-instantiate is not installed");
}

describe("snapshotImageExpr", () => {
  it("passes the runner's snapshot spec to lib.mkSnapshotImage", () => {
    const e = snapshotImageExpr("/src/flakegym", "x86_64-linux", spec, { dir: "/cat/repo" });
    expect(e).toContain('(builtins.getFlake "/src/flakegym").lib.mkSnapshotImage {');
    expect(e).toContain('task = "tinygauge-vertical";');
    expect(e).toContain('install = [ "cargo build --offline --tests --quiet" ];');
    expect(e).toContain(`smoke = [ "echo \\"\\${HOME_REF}\\" \\\\ done" ];`);
    expect(e).toContain('src = builtins.path { path = "/cat/repo"; name = "source"; };');
    expect(snapshotImageExpr("f", "x86_64-linux", spec, { narHash: "sha256-x" })).toContain(
      'narHash = "sha256-x";',
    );
  });

  it("passes every profile through (each has a builder in the flake), and refuses control characters", () => {
    for (const profile of ["go", "node", "python", "c"] as const) {
      expect(snapshotImageExpr("f", "s", { ...spec, profile }, { narHash: "x" })).toContain(
        `profile = "${profile}";`,
      );
    }
    expect(() => nixString("a\u0001b")).toThrow(/control character/);
  });

  it.skipIf(!HAVE_NIX_INSTANTIATE)("escapes so that Nix reads back exactly the strings given", () => {
    for (const s of [`echo "${HOME_REF}" \\ done`, "a\nb\tc", "$$ {x} $", "plain"]) {
      const out = execFileSync("nix-instantiate", ["--eval", "--json", "-E", nixString(s)], {
        encoding: "utf8",
      });
      expect(JSON.parse(out)).toBe(s);
    }
  });
});
