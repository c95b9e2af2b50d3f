import { makeTempDir, runCli } from "@flakegym/test-utils";
import { describe, expect, it } from "vitest";

describe("flakegym CLI (real process)", () => {
  it("--version prints the runner's package version", async () => {
    const r = await runCli(["--version"]);
    expect(r.exitCode).toBe(0);
    expect(r.stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
  });

  it("--help lists the commands", async () => {
    const r = await runCli(["--help"]);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toContain("usage: flakegym <command>");
    expect(r.stdout).toMatch(/tasks list\s+list the built-in task catalog/);
  });

  it("a command's --help is generated from its option schema", async () => {
    const r = await runCli(["tasks", "list", "--help"]);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toMatch(/--json\s+print the catalog as JSON/);
  });

  it("an unknown flag exits 2 naming the flag", async () => {
    const r = await runCli(["tasks", "list", "--jsn"]);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toContain("unknown flag '--jsn'");
    expect(r.stderr).toContain("did you mean --json?");
  });

  it("an unknown command exits 2 listing what exists", async () => {
    const r = await runCli(["tasks", "frobnicate"]);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toContain("unknown command 'tasks frobnicate'");
    expect(r.stderr).toContain("tasks list");
  });

  it("tasks list over an empty catalog says so", async () => {
    await using dir = await makeTempDir();
    const r = await runCli(["tasks", "list", "--catalog", dir.path]);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toBe("the task catalog is empty");
    const j = await runCli(["tasks", "list", "--catalog", dir.path, "--json"]);
    expect(JSON.parse(j.stdout)).toEqual([]);
  });

  it("tasks list on a missing catalog names the directory and what to do", async () => {
    const r = await runCli(["tasks", "list", "--catalog", "/nonexistent/catalog"]);
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toContain("cannot read task catalog directory /nonexistent/catalog");
    expect(r.stderr).toContain("hint: pass --catalog");
  });
});
