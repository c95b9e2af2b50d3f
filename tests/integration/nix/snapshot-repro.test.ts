import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { makeTempDir } from "@flakegym/test-utils";
import { execa } from "execa";
import { describe, expect, it } from "vitest";
import { gitIndexStatProblems, incrementalArtefacts } from "./snapshot-repro.js";

const git = (cwd: string, ...args: string[]) =>
  execa("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...args], {
    cwd,
    timeout: 30_000,
    stdin: "ignore",
  });

describe("gitIndexStatProblems (on indexes the real git writes)", () => {
  it("flags every entry `git add` wrote with stat data, and none after `git read-tree HEAD`", async () => {
    const tmp = await makeTempDir("flakegym-index-");
    try {
      writeFileSync(join(tmp.path, "a.txt"), "a\n");
      writeFileSync(join(tmp.path, "a-much-longer-file-name-for-padding.c"), "int x;\n");
      await git(tmp.path, "init", "-q");
      await git(tmp.path, "add", "--all");
      await git(tmp.path, "commit", "-qm", "m");
      const added = gitIndexStatProblems(readFileSync(join(tmp.path, ".git/index")));
      expect(added.map((p) => p.path).sort()).toEqual(["a-much-longer-file-name-for-padding.c", "a.txt"]);
      expect(added[0]?.fields).toEqual(expect.arrayContaining(["mtime", "ino"]));

      await execa("rm", [join(tmp.path, ".git/index")]);
      await git(tmp.path, "read-tree", "HEAD");
      expect(gitIndexStatProblems(readFileSync(join(tmp.path, ".git/index")))).toEqual([]);
      // and git still sees a clean tree
      expect((await git(tmp.path, "status", "--porcelain")).stdout).toBe("");
    } finally {
      await tmp.cleanup();
    }
  });

  it("says what is wrong with a file that is not an index", () => {
    expect(() => gitIndexStatProblems(Buffer.from("nope"))).toThrow(/not a git index/);
  });
});

describe("incrementalArtefacts", () => {
  it("finds cargo's incremental session files, nothing else under target/", () => {
    expect(
      incrementalArtefacts([
        "workspace/target/debug/incremental/x-1abc/s-h2-working/dep-graph.bin",
        "workspace/target/debug/deps/x-1abc",
        "workspace/target/debug/incremental",
        "src/incremental/mod.rs",
      ]),
    ).toEqual(["workspace/target/debug/incremental/x-1abc/s-h2-working/dep-graph.bin"]);
  });
});
