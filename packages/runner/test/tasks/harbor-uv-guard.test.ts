import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { verifierScript } from "../../src/tasks/harbor-dir.js";
import { unwrapUvInstallGuard } from "../../src/tasks/harbor-uv-guard.js";

/** The shape of a public task's test.sh: uv's installer behind a `command -v uv` guard. */
const GUARDED = [
  "#!/bin/bash",
  "set -e",
  "# Install uv if not already installed",
  "if ! command -v uv &> /dev/null; then",
  "    curl -LsSf https://astral.sh/uv/0.9.5/install.sh | sh",
  "    source $HOME/.local/bin/env",
  "fi",
  "uvx \\",
  "  -p 3.13 \\",
  "  -w pytest==8.4.1 \\",
  "  -w pytest-json-ctrf==0.3.5 \\",
  "  --no-cache-dir \\",
  "  pytest /tests/test_outputs.py -rA --ctrf /logs/verifier/ctrf.json",
].join("\n");

describe("a uv installer behind `if ! command -v uv`", () => {
  it("is unwrapped, and the verifier made offline runs pytest with a script bash can parse", () => {
    const r = verifierScript(GUARDED, false);
    if ("reason" in r) throw new Error(r.reason);
    const code = r.script.split("\n").filter((l) => !l.trim().startsWith("#"));
    expect(code.join("\n")).not.toMatch(/\bif\b|\bfi\b|astral|uvx/);
    const parsed = spawnSync("bash", ["-n"], { input: r.script, encoding: "utf8" });
    expect(parsed.status).toBe(0);
    expect(r.script).toContain("python3 -m pytest /tests/test_outputs.py -rA");
    expect(r.notes.join(" ")).toMatch(/uv asked for Python 3\.13/);
  });
  it("is left as written when the block does anything else", () => {
    const other = "if ! command -v uv >/dev/null; then\n  pip install uv\nfi\n";
    expect(unwrapUvInstallGuard(other)).toBe(other);
    expect(verifierScript(other, false)).toMatchObject({ reason: /fetches over the network/ });
  });
});
