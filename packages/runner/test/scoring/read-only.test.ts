import { chmod, mkdir, mkdtemp, readFile, rm, stat, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  canOwnForOthers,
  HIDDEN_OWNER_UID,
  installedHiddenFiles,
  prepareReadOnlyHidden,
  writeReadOnlyFiles,
} from "../../src/scoring/read-only.js";
import type { HiddenTests } from "../../src/scoring/scorer.js";
import { capabilitiesOf } from "../../src/workers/backend.js";
import { uidMapped } from "../../src/workers/local/uid-map.js";

// The hidden test files as installed, computed on the host from trusted inputs (a real git apply
// in a private temp repo), and written owned by nobody, read-only.

let root: string;
let snapshot: string;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "flakegym-read-only-"));
  snapshot = join(root, "snapshot");
  await mkdir(join(snapshot, "tests"), { recursive: true });
  await writeFile(join(snapshot, "tests", "old.py"), "def test_old():\n    assert True\n");
  await writeFile(join(snapshot, "tests", "run.sh"), "#!/bin/sh\necho old\n", { mode: 0o755 });
  await symlink("old.py", join(snapshot, "tests", "link.py"));
  await symlink("tests", join(snapshot, "linked-dir"));
});
afterAll(() => rm(root, { recursive: true, force: true }));

const patch = [
  "diff --git a/tests/old.py b/tests/old.py",
  "--- a/tests/old.py",
  "+++ b/tests/old.py",
  "@@ -1,2 +1,4 @@",
  " def test_old():",
  "     assert True",
  "+def test_new():",
  "+    assert 1 == 1",
  "diff --git a/tests/run.sh b/tests/run.sh",
  "--- a/tests/run.sh",
  "+++ b/tests/run.sh",
  "@@ -1,2 +1,2 @@",
  " #!/bin/sh",
  "-echo old",
  "+echo new",
  "diff --git a/tests/test_added.py b/tests/test_added.py",
  "new file mode 100644",
  "--- /dev/null",
  "+++ b/tests/test_added.py",
  "@@ -0,0 +1 @@",
  "+def test_added(): pass",
  "",
].join("\n");

const hidden = (over: Partial<HiddenTests>): HiddenTests => ({
  testFiles: ["tests/old.py", "tests/run.sh", "tests/test_added.py"],
  install: { kind: "patch", patch },
  commands: [],
  timeoutMs: 1000,
  ...over,
});

const canary = {
  file: "tests/test_added.py",
  prepend: "# pre\n",
  append: "def test_canary(): assert 1 == 2\n",
  id: "c",
};

describe("installedHiddenFiles", () => {
  it("applies the tests patch to the snapshot's versions, keeps exec bits, adds the canary", async () => {
    const files = await installedHiddenFiles(hidden({}), snapshot, canary);
    expect(files?.map((f) => [f.path, f.content.toString(), f.executable])).toEqual([
      ["tests/old.py", "def test_old():\n    assert True\ndef test_new():\n    assert 1 == 1\n", false],
      ["tests/run.sh", "#!/bin/sh\necho new\n", true],
      ["tests/test_added.py", "# pre\ndef test_added(): pass\ndef test_canary(): assert 1 == 2\n", false],
    ]);
    // the snapshot itself is untouched
    expect(await readFile(join(snapshot, "tests", "old.py"), "utf8")).toBe(
      "def test_old():\n    assert True\n",
    );
  });

  it("a patch applied before is not applied again, and never from stale bytes: a changed base file or exec bit is applied anew", async () => {
    const dir = join(root, "memo");
    await mkdir(join(dir, "tests"), { recursive: true });
    const a = join(dir, "tests", "a.sh");
    await writeFile(a, "one\ntwo\nthree\nfour\n", { mode: 0o755 });
    const two = [
      "diff --git a/tests/a.sh b/tests/a.sh",
      "--- a/tests/a.sh",
      "+++ b/tests/a.sh",
      "@@ -1,3 +1,3 @@",
      " one",
      "-two",
      "+TWO",
      " three",
      "",
    ].join("\n");
    const h = hidden({ testFiles: ["tests/a.sh"], install: { kind: "patch", patch: two } });
    // a scratch dir that cannot hold the temp repo: only a call that applies nothing succeeds there
    const noScratch = join(root, "no-such-scratch");
    const read = async (scratch: string) =>
      (await installedHiddenFiles(h, dir, undefined, undefined, scratch))?.map((f) => [
        f.content.toString(),
        f.executable,
      ]);
    expect(await read(root)).toEqual([["one\nTWO\nthree\nfour\n", true]]);
    expect(await read(noScratch)).toEqual([["one\nTWO\nthree\nfour\n", true]]);
    // a caller changing a returned buffer does not change what the next call gets
    (await installedHiddenFiles(h, dir, undefined))![0]!.content.fill(0x41);
    expect(await read(noScratch)).toEqual([["one\nTWO\nthree\nfour\n", true]]);
    // the snapshot's bytes changed (same size, outside the hunk): applied again, from the new bytes
    await writeFile(a, "one\ntwo\nthree\nFOUR\n");
    await expect(read(noScratch)).rejects.toThrow(/ENOENT/);
    expect(await read(root)).toEqual([["one\nTWO\nthree\nFOUR\n", true]]);
    // the exec bit alone changed
    await chmod(a, 0o644);
    await expect(read(noScratch)).rejects.toThrow(/ENOENT/);
    expect(await read(root)).toEqual([["one\nTWO\nthree\nFOUR\n", false]]);
  });

  it("a tests dir's files as they are, with the canary", async () => {
    const files = await installedHiddenFiles(
      hidden({
        testFiles: ["tests/test_added.py"],
        install: { kind: "files", files: [{ path: "tests/test_added.py", content: Buffer.from("x\n") }] },
      }),
      snapshot,
      canary,
    );
    expect(files?.map((f) => f.content.toString())).toEqual(["# pre\nx\ndef test_canary(): assert 1 == 2\n"]);
  });

  it("cannot bind (the script installs them itself): a deleted file, a symlink (or a symlinked directory) in the snapshot, a canary elsewhere, no tests", async () => {
    const del =
      "diff --git a/tests/old.py b/tests/old.py\ndeleted file mode 100644\n--- a/tests/old.py\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-def test_old():\n-    assert True\n";
    expect(
      await installedHiddenFiles(
        hidden({ testFiles: ["tests/old.py"], install: { kind: "patch", patch: del } }),
        snapshot,
        undefined,
      ),
    ).toBeUndefined();
    expect(
      await installedHiddenFiles(hidden({ testFiles: ["tests/link.py"] }), snapshot, undefined),
    ).toBeUndefined();
    expect(
      await installedHiddenFiles(hidden({ testFiles: ["linked-dir/old.py"] }), snapshot, undefined),
    ).toBeUndefined();
    expect(await installedHiddenFiles(hidden({}), snapshot, { ...canary, file: "src/x.py" })).toBeUndefined();
    const { install: _, ...none } = hidden({});
    expect(await installedHiddenFiles(none, snapshot, undefined)).toBeUndefined();
  });

  it("a Nomad worker binds nothing: the script installs the files computed on the host", async () => {
    const p = await prepareReadOnlyHidden(capabilitiesOf("nomad"), hidden({}), snapshot);
    expect(p?.readOnly).toBeUndefined();
    expect(p?.bound.readOnly).toBe(false);
    expect(p?.bound.files.map((f) => f.path)).toEqual(hidden({}).testFiles);
  });

  it("an eval_cmd task gets its decoy twin: the same paths, every literal expectation changed; none when there is nothing to change", async () => {
    const evalCmd = { commands: [{ id: "eval_cmd", kind: "eval_cmd" as const, command: "sh tests/run.sh" }] };
    const p = await prepareReadOnlyHidden(capabilitiesOf("nomad"), hidden(evalCmd), snapshot);
    expect(p?.bound.guard).toEqual({ guarded: ["eval_cmd"], unguarded: [] });
    expect(p?.twin?.bound.readOnly).toBe(false);
    const real = p!.bound.files;
    const twin = p!.twin!.bound.files;
    expect(twin.map((f) => [f.path, f.executable])).toEqual(real.map((f) => [f.path, f.executable]));
    // tests/old.py's `assert 1 == 1` changes on one side only (both could hold again); the rest is as installed
    expect(twin[0]!.content.toString()).toMatch(
      /^def test_old\(\):\n {4}assert True\ndef test_new\(\):\n {4}assert (1 == [02-9]|[02-9] == 1)\n$/,
    );
    expect(twin.slice(1).map((f) => f.content.toString())).toEqual(
      real.slice(1).map((f) => f.content.toString()),
    );
    const none = await prepareReadOnlyHidden(
      capabilitiesOf("nomad"),
      hidden({
        ...evalCmd,
        testFiles: ["tests/run.sh"],
        install: { kind: "files", files: [{ path: "tests/run.sh", content: Buffer.from("true\n") }] },
      }),
      snapshot,
    );
    expect(none?.twin).toBeUndefined();
    expect(none?.bound.guard?.unguarded.map((u) => u.id)).toEqual(["eval_cmd"]);
  });
});

describe("prepareReadOnlyHidden, per-id tasks", () => {
  const ids = (...names: [string, "fail_to_pass" | "pass_to_pass"][]) => ({
    commands: names.map(([id, kind]) => ({ id, kind, command: `run ${id}`, passPattern: "^ok" })),
  });

  it("a per-id task gets its decoy twin, each graded id guarded or said why not", async () => {
    const p = await prepareReadOnlyHidden(
      capabilitiesOf("nomad"),
      hidden(ids(["tests/old.py::test_new", "fail_to_pass"], ["tests/old.py::test_old", "pass_to_pass"])),
      snapshot,
    );
    expect(p?.bound.guard?.guarded).toEqual(["tests/old.py::test_new"]);
    expect(p?.bound.guard?.unguarded.map((u) => u.id)).toEqual(["tests/old.py::test_old"]);
    expect(p?.bound.canary).toBeUndefined();
    expect(p!.twin!.bound.files[0]!.content.toString()).toMatch(/assert (1 == [02-9]|[02-9] == 1)\n$/);
    expect(p?.twin?.bound.guard).toEqual(p?.bound.guard);
  });

  it("no graded id guarded: scored once, every id reported unguarded", async () => {
    const p = await prepareReadOnlyHidden(
      capabilitiesOf("nomad"),
      hidden(ids(["tests/old.py::test_old", "fail_to_pass"])),
      snapshot,
    );
    expect(p?.twin).toBeUndefined();
    expect(p?.bound.guard?.unguarded.map((u) => u.id)).toEqual(["tests/old.py::test_old"]);
  });
});

describe("uidMapped (/proc/self/uid_map)", () => {
  it("the initial namespace maps every uid", () => {
    expect(uidMapped("         0          0 4294967295\n", HIDDEN_OWNER_UID)).toBe(true);
  });
  it("a namespace mapping only root (Nix's chroot helper for `nix run` on a private store) lacks nobody", () => {
    expect(uidMapped("         0          0          1\n", HIDDEN_OWNER_UID)).toBe(false);
    expect(uidMapped("         0          0          1\n", 0)).toBe(true);
  });
  it("ranges: the last id of a range is in, the next is out; several lines", () => {
    expect(uidMapped("0 100000 65535", 65534)).toBe(true);
    expect(uidMapped("0 100000 65534", 65534)).toBe(false);
    expect(uidMapped("0 0 1\n65534 65534 1\n", 65534)).toBe(true);
    expect(uidMapped("", 0)).toBe(false);
  });
});

const cannotOwn = !canOwnForOthers();
if (cannotOwn)
  console.log(
    "skipped writeReadOnlyFiles: chown to another user needs root on the host, in a user namespace that maps nobody",
  );
describe.skipIf(cannotOwn)("writeReadOnlyFiles (chown needs root on the host)", () => {
  it("writes each file owned by nobody, 0444 (0555 when executable), and removes them all on release", async () => {
    const r = await writeReadOnlyFiles([
      { path: "tests/a.py", content: Buffer.from("a"), executable: false },
      { path: "tests/run.sh", content: Buffer.from("b"), executable: true },
    ]);
    expect(r.files.map((f) => f.path)).toEqual(["tests/a.py", "tests/run.sh"]);
    const [a, b] = await Promise.all(r.files.map((f) => stat(f.hostPath)));
    expect(a).toMatchObject({ uid: HIDDEN_OWNER_UID, gid: HIDDEN_OWNER_UID, mode: 0o100444 });
    expect(b).toMatchObject({ uid: HIDDEN_OWNER_UID, mode: 0o100555 });
    expect(await readFile(r.files[1]!.hostPath, "utf8")).toBe("b");
    await r.release();
    await expect(stat(r.files[0]!.hostPath)).rejects.toThrow(/ENOENT/);
  });
});
