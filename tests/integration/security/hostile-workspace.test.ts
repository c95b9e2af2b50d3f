import { execFileSync } from "node:child_process";
import { existsSync, lstatSync } from "node:fs";
import { mkdir, readdir, readFile, readlink, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { SUPERVISOR_PATH } from "@flakegym/cline-vendor";
import {
  collectFromAllocation,
  collectHostArtifacts,
  createLocalBackend,
  createNomadClient,
  createPodmanBackend,
  type Fork,
  forkTree,
  type Worker,
} from "@flakegym/runner";
import { freePort, makeTempDir, REPO_ROOT, startNomadDouble, type TempDir } from "@flakegym/test-utils";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { idleAgent } from "./idle-agent.js";

// A hostile agent's workspace against the real collection path of every backend here: the local
// backend's own collectArtifacts (bubblewrap; a stand-in agent process instead of the Cline core),
// podman's (the same host-side collector, planted through a real container), and the Nomad path
// (cline-supervisor --diff-dir as a raw_exec task of the Nomad double, read back with
// collectFromAllocation). The agent plants every git hook that runs a program, symlinks out of the
// workspace, a 10 GB sparse file, a FIFO, a nested repository and a path with a newline next to its
// legitimate edits. No host marker may appear; the diff must reproduce exactly the legitimate edits
// on the pristine snapshot, and what was left out must be recorded with a reason.

const hasBwrap = existsSync("/usr/bin/bwrap");
if (!hasBwrap) console.warn("hostile-workspace (local) skipped: bubblewrap is not installed");
const podmanMissing = ["/usr/bin/podman", "/usr/sbin/runc"].filter((p) => !existsSync(p));
if (podmanMissing.length)
  console.warn(`hostile-workspace (podman) skipped: missing ${podmanMissing.join(", ")}`);

/** The agent's doing, run with cwd = its workspace: `sh -s -- <host marker dir> <host secret file>`. */
const PLANT = String.raw`set -e
M="$1"; S="$2"
# legitimate edits, committed (the agent moves HEAD; the base must not follow)
printf 'one\nTWO\n' > a.txt
printf 'brand new\n' > src/new.txt
rm src/lib.txt
printf '\000\001\002\377' > blob.bin
printf 'nl\n' > 'new
line.txt'
printf '$Id$\r\nkeep crlf\r\n' > crlf.txt
git -c user.name=agent -c user.email=agent@x add -A
git -c user.name=agent -c user.email=agent@x commit -qm agent
# every setting that makes git run a program
git config filter.evil.clean "touch $M/filter-clean; cat"
git config filter.evil.smudge "touch $M/filter-smudge; cat"
git config filter.evil.process "touch $M/filter-process"
git config filter.evil.required true
git config core.fsmonitor "touch $M/fsmonitor; false"
git config diff.external "touch $M/diff-external"
git config diff.evil.textconv "touch $M/textconv; cat"
git config diff.evil.command "touch $M/diff-command"
git config core.pager "touch $M/pager; cat"
git config core.hooksPath "$PWD/.git/evil-hooks"
git config core.attributesFile "$PWD/.git/evil-attributes"
git config core.excludesFile "$PWD/.git/evil-excludes"
git config include.path "$PWD/.git/evil-include"
printf '[core]\n\tfsmonitor = touch %s/include-fsmonitor\n[diff]\n\texternal = touch %s/include-external\n' "$M" "$M" > .git/evil-include
printf '* filter=evil diff=evil\n' > .git/evil-attributes
printf '*\n' > .git/evil-excludes
printf '*\n' > .git/info/exclude
mkdir -p .git/evil-hooks
for h in post-index-change pre-commit post-checkout reference-transaction pre-auto-gc; do
  printf '#!/bin/sh\ntouch %s/hook-%s\n' "$M" "$h" > ".git/evil-hooks/$h"
  chmod +x ".git/evil-hooks/$h"; cp ".git/evil-hooks/$h" ".git/hooks/$h"
done
printf '* text eol=crlf ident working-tree-encoding=UTF-16LE filter=evil diff=evil\n' > .gitattributes
# links out of the workspace (a tracked file becomes one)
ln -s "$S" leak-file
ln -s "$(dirname "$S")" leak-dir
rm README; ln -s "$S" README
# what git must not read
truncate -s 10G huge.bin
mkfifo pipe
mkdir -p vendor/nested
git -C vendor/nested init -q
git -C vendor/nested config core.fsmonitor "touch $M/nested-fsmonitor"
echo x > vendor/nested/x
`;

const SECRET = "HOST-SECRET-b2f1c0";
/** @flakegym/nomad-jobs' WORKER_TASK: the task collectFromAllocation signals. */
const WORKER_TASK = "worker";
/** Nomad's interpolation of the allocation dir in driver config. */
const ALLOC_DIR = "$" + "{NOMAD_ALLOC_DIR}";

interface Scene {
  tmp: TempDir;
  /** The pristine snapshot tree (workspace/ is a git repository at `base`). */
  snapshot: string;
  base: string;
  baseObjects: string;
  markers: string;
  secret: string;
}

const gitEnv = { GIT_CONFIG_GLOBAL: "/dev/null", GIT_CONFIG_NOSYSTEM: "1" };
const git = (cwd: string, ...args: string[]) =>
  execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...args], {
    cwd,
    env: { ...process.env, ...gitEnv },
    encoding: "utf8",
  }).trim();

async function makeScene(): Promise<Scene> {
  const tmp = await makeTempDir("flakegym-hostile-ws-");
  const snapshot = join(tmp.path, "snapshot");
  const ws = join(snapshot, "workspace");
  await mkdir(join(ws, "src"), { recursive: true });
  await writeFile(join(ws, "README"), "readme\n");
  await writeFile(join(ws, "a.txt"), "one\ntwo\n");
  await writeFile(join(ws, "src", "lib.txt"), "lib\n");
  await writeFile(join(ws, ".gitignore"), "ignored/\n");
  git(ws, "init", "-q", "-b", "main");
  git(ws, "add", "-A");
  git(ws, "commit", "-qm", "base");
  const markers = join(tmp.path, "markers");
  await mkdir(markers);
  const secret = join(tmp.path, "outside", "secret.txt");
  await mkdir(join(tmp.path, "outside"));
  await writeFile(secret, `${SECRET}\n`);
  return {
    tmp,
    snapshot,
    base: git(ws, "rev-parse", "HEAD"),
    baseObjects: join(ws, ".git", "objects"),
    markers,
    secret,
  };
}

const plantCommand = (s: Scene) => `sh -s -- '${s.markers}' '${s.secret}' <<'PLANT'\n${PLANT}\nPLANT`;

/** The diff applies to the pristine snapshot and reproduces exactly the agent's legitimate edits. */
async function expectSealedCollection(s: Scene, dest: string, label: string) {
  expect(await readdir(s.markers), `${label}: host markers`).toEqual([]);
  const manifest = JSON.parse(await readFile(join(dest, "manifest.json"), "utf8")) as {
    baseCommit: string;
    excluded: { path: string; reason: string }[];
    diffError?: string;
  };
  expect(manifest.diffError).toBeUndefined();
  expect(manifest.baseCommit).toBe(s.base);
  const reasons = Object.fromEntries(manifest.excluded.map((e) => [e.path, e.reason]));
  expect(reasons["huge.bin"]).toMatch(/^larger than \d+ bytes \(10737418240\)$/);
  expect(reasons["pipe"]).toBe("a fifo, not a file");
  expect(reasons["vendor/nested/"]).toBe("nested git repository (not collected)");
  const patch = await readFile(join(dest, "diff.patch"));
  expect(patch.includes(SECRET)).toBe(false);
  const check = join(s.tmp.path, `check-${label}`);
  execFileSync("cp", ["-a", join(s.snapshot, "workspace"), check]);
  await writeFile(join(s.tmp.path, `${label}.patch`), patch);
  git(check, "apply", "--binary", "--whitespace=nowarn", join(s.tmp.path, `${label}.patch`));
  expect(await readFile(join(check, "a.txt"), "utf8")).toBe("one\nTWO\n");
  expect(await readFile(join(check, "src", "new.txt"), "utf8")).toBe("brand new\n");
  expect(existsSync(join(check, "src", "lib.txt"))).toBe(false);
  expect(await readFile(join(check, "blob.bin"))).toEqual(Buffer.from([0, 1, 2, 255]));
  expect(await readFile(join(check, "new\nline.txt"), "utf8")).toBe("nl\n");
  // in-tree attributes (eol, ident, encoding, filters) changed nothing: the bytes are the agent's
  expect(await readFile(join(check, "crlf.txt"), "utf8")).toBe("$Id$\r\nkeep crlf\r\n");
  expect(await readFile(join(check, ".gitattributes"), "utf8")).toContain("filter=evil");
  // links are recorded as links, never followed
  expect(await readlink(join(check, "README"))).toBe(s.secret);
  expect(await readlink(join(check, "leak-file"))).toBe(s.secret);
  expect(lstatSync(join(check, "leak-dir")).isSymbolicLink()).toBe(true);
  for (const absent of ["huge.bin", "pipe", "vendor"]) expect(existsSync(join(check, absent))).toBe(false);
  expect(git(check, "status", "--porcelain", "--untracked-files=no", "--", "a.txt")).toBe("M a.txt");
  expect(await readdir(s.markers), `${label}: host markers after the checks`).toEqual([]);
}

describe("a hostile workspace is collected without any host tool interpreting it", () => {
  let s: Scene;
  const forks: Fork[] = [];
  const workers: Worker[] = [];
  beforeAll(async () => {
    s = await makeScene();
  });
  afterAll(async () => {
    for (const w of workers) await w.stop().catch(() => {});
    for (const f of forks) await f.release().catch(() => {});
    await s?.tmp.cleanup();
  });

  async function fork(name: string, quotaMb?: number) {
    const f = await forkTree(s.snapshot, {
      dest: join(s.tmp.path, "forks", name),
      ...(quotaMb ? { quotaMb } : {}),
    });
    forks.push(f);
    return f;
  }

  it.skipIf(!hasBwrap)(
    "local backend: worker.collectArtifacts on a fork planted from inside the sandbox",
    async () => {
      const f = await fork("local");
      const worker = await createLocalBackend({
        stateDir: join(s.tmp.path, "workers"),
        agent: idleAgent,
      }).start({
        runId: "hostile",
        taskId: "hostile",
        trajectoryId: "local",
        profile: "c",
        workspace: join(f.tree, "workspace"),
        gateway: {},
        limits: { memoryMb: 512, pids: 128, cpuSeconds: 60, diskMb: 20_480, wallClockMs: 120_000 },
        agent: true,
      });
      workers.push(worker);
      const planted = await worker.exec(plantCommand(s), { timeoutMs: 60_000 });
      expect(planted.stderr).toBe("");
      expect(planted.exitCode).toBe(0);
      // Cline's task files live in the agent-writable config dir: links and FIFOs there are refused
      const taskDir = join(worker.configDir!, "data", "tasks", "7");
      await mkdir(taskDir, { recursive: true });
      await symlink(s.secret, join(taskDir, "ui_messages.json"));
      execFileSync("mkfifo", [join(taskDir, "api_conversation_history.json")]);
      await writeFile(join(taskDir, "task_metadata.json"), "{}");
      const dest = join(s.tmp.path, "out", "local");
      const started = Date.now();
      await worker.collectArtifacts!({
        taskId: "7",
        dest,
        baseCommit: s.base,
        baseObjects: s.baseObjects,
        signal: AbortSignal.timeout(120_000),
      });
      console.log(`local: hostile workspace collected in ${Date.now() - started} ms`);
      await expectSealedCollection(s, dest, "local");
      const manifest = JSON.parse(await readFile(join(dest, "manifest.json"), "utf8")) as {
        missing: string[];
        excluded: { path: string; reason: string }[];
      };
      expect(manifest.missing.sort()).toEqual(["api_conversation_history.json", "ui_messages.json"]);
      expect(manifest.excluded).toEqual(
        expect.arrayContaining([
          { path: "cline:ui_messages.json", reason: "a symbolic link" },
          { path: "cline:api_conversation_history.json", reason: "a fifo, not a file" },
        ]),
      );
      expect(await readFile(join(dest, "task_metadata.json"), "utf8")).toBe("{}");
    },
  );

  it.skipIf(!hasBwrap)(
    "local backend: a workspace git would block on (.gitignore FIFO, nested .git pointing outside) ends as a recorded error, fast",
    async () => {
      const f = await fork("unsafe");
      const outside = join(s.tmp.path, "outside-repo");
      await mkdir(join(outside, "objects"), { recursive: true });
      await mkdir(join(outside, "refs"), { recursive: true });
      execFileSync("mkfifo", [join(outside, "HEAD")]);
      const ws = join(f.tree, "workspace");
      await mkdir(join(ws, "sub"));
      await writeFile(join(ws, "sub", ".git"), `gitdir: ${outside}\n`);
      const configDir = join(s.tmp.path, "unsafe-config");
      await mkdir(configDir);
      const started = Date.now();
      const dest = join(s.tmp.path, "out", "unsafe");
      await collectHostArtifacts(
        { id: "unsafe", configDir, workspace: ws },
        {
          taskId: "",
          dest,
          baseCommit: s.base,
          baseObjects: s.baseObjects,
          signal: AbortSignal.timeout(60_000),
        },
      );
      const m = JSON.parse(await readFile(join(dest, "manifest.json"), "utf8")) as { diffError?: string };
      expect(m.diffError).toMatch(/'sub\/.git' points outside the workspace/);
      execFileSync("mkfifo", [join(ws, ".gitignore.tmp")]);
      execFileSync("rm", ["-rf", join(ws, "sub"), join(ws, ".gitignore")]);
      execFileSync("mv", [join(ws, ".gitignore.tmp"), join(ws, ".gitignore")]);
      await collectHostArtifacts(
        { id: "unsafe", configDir, workspace: ws },
        {
          taskId: "",
          dest,
          baseCommit: s.base,
          baseObjects: s.baseObjects,
          signal: AbortSignal.timeout(60_000),
        },
      );
      const m2 = JSON.parse(await readFile(join(dest, "manifest.json"), "utf8")) as { diffError?: string };
      expect(m2.diffError).toMatch(/'.gitignore' is not a regular file/);
      expect(existsSync(join(dest, "diff.patch"))).toBe(false);
      expect(Date.now() - started).toBeLessThan(30_000);
    },
  );

  it.skipIf(podmanMissing.length > 0)(
    "podman backend: planted through a real container, collected by the backend's host-side collector",
    async () => {
      const f = await fork("podman", 64);
      const stateDir = join(s.tmp.path, "podman");
      await mkdir(stateDir, { recursive: true });
      const image = "localhost/flakegym-hostile-ws:latest";
      const root = join(s.tmp.path, "rootfs");
      for (const d of ["etc", "tmp", "workspace", "deps", "sandbox-home", "proc", "dev", "sys", "run", "usr"])
        await mkdir(join(root, d), { recursive: true });
      for (const l of ["bin", "lib", "lib64", "sbin"]) await symlink(`usr/${l}`, join(root, l));
      await writeFile(join(root, "etc", "passwd"), "root:x:0:0::/root:/bin/sh\n");
      await writeFile(join(root, "etc", "group"), "root:x:0:\n");
      await writeFile(join(stateDir, "containers.conf"), "[containers]\ndefault_ulimits = []\n");
      await execa("tar", ["-C", root, "-cf", join(s.tmp.path, "rootfs.tar"), "."]);
      await execa("podman", ["import", join(s.tmp.path, "rootfs.tar"), image], {
        env: { CONTAINERS_CONF: join(stateDir, "containers.conf") },
      });
      const worker = await createPodmanBackend({
        image,
        stateDir,
        binds: [{ src: "/usr", dest: "/usr" }],
      }).start({
        runId: "hostile",
        taskId: "hostile",
        trajectoryId: "podman",
        profile: "c",
        workspace: join(f.tree, "workspace"),
        gateway: {},
        limits: { memoryMb: 256, pids: 64, cpuSeconds: 60, diskMb: 64, wallClockMs: 120_000 },
        agent: false,
      });
      workers.push(worker);
      const planted = await worker.exec(plantCommand(s), { timeoutMs: 60_000 });
      expect(planted.stderr).toBe("");
      expect(planted.exitCode).toBe(0);
      const dest = join(s.tmp.path, "out", "podman");
      const configDir = join(s.tmp.path, "podman-config");
      await mkdir(configDir);
      // what podman's collectArtifacts runs (an agent container would need the Cline core)
      await collectHostArtifacts(
        { id: "podman", configDir, workspace: join(f.tree, "workspace") },
        {
          taskId: "",
          dest,
          baseCommit: s.base,
          baseObjects: s.baseObjects,
          signal: AbortSignal.timeout(120_000),
        },
      );
      await expectSealedCollection(s, dest, "podman");
    },
  );

  it("nomad: cline-supervisor --diff-dir in a raw_exec task, asked through its core gate by collectFromAllocation", async () => {
    const f = await fork("nomad");
    const port = await freePort();
    const token = "hostile-ws-token";
    const ws = join(f.tree, "workspace");
    const double = await startNomadDouble();
    const client = createNomadClient({ address: double.url, retry: { attempts: 1 } });
    try {
      const fixture = (n: string) =>
        fileURLToPath(new URL(`packages/cline-vendor/test/fixtures/${n}`, `file://${REPO_ROOT}/`));
      await client.jobs.register({
        ID: "hostile-ws",
        Type: "batch",
        TaskGroups: [
          {
            Name: "g",
            RestartPolicy: { Attempts: 0, Mode: "fail" },
            Tasks: [
              {
                Name: WORKER_TASK,
                Driver: "raw_exec",
                KillSignal: "SIGTERM",
                Config: {
                  // says where its allocation dir is (the agent's forgery goes there), then runs the supervisor
                  command: "/bin/sh",
                  args: [
                    "-c",
                    'echo "allocdir=$NOMAD_ALLOC_DIR"; exec "$@"',
                    "sh",
                    process.execPath,
                    SUPERVISOR_PATH,
                    ...["--host-bin", fixture("fake-host.mjs"), "--core-js", fixture("h2-core.mjs")],
                    ...["--core-address", `127.0.0.1:${port}`],
                    ...["--node-path", "/nonexistent", "--workspace", ws],
                    ...["--config", `${ALLOC_DIR}/cline`, "--diff-dir", `${ALLOC_DIR}/cline/flakegym`],
                  ],
                },
                Env: { FLAKEGYM_CORE_TOKEN: token },
              },
            ],
          },
        ],
      });
      await double.waitFor(() => double.liveTasks() === 1);
      const [alloc] = (await client.jobs.allocations("hostile-ws")).data;
      // the supervisor seals the base before it starts its children: wait until they run
      let out = "";
      for (let i = 0; i < 200; i++) {
        out = (await client.logs.read(alloc!.ID, { task: WORKER_TASK, type: "stdout" })).data;
        if (out.includes('"event":"listening"')) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      // the agent forges the supervisor's files where it can write them: they are never read
      const diffDir = join(/allocdir=(.*)/.exec(out)![1]!, "cline", "flakegym");
      await mkdir(diffDir, { recursive: true });
      await writeFile(join(diffDir, "diff.patch"), "forged\n");
      await writeFile(
        join(diffDir, "diff.json"),
        `${JSON.stringify({ seq: 1, baseCommit: s.base, bytes: 7 })}\n`,
      );
      // raw_exec has no isolation: the agent is any process with the workspace (played by the test)
      execFileSync("sh", ["-c", plantCommand(s)], { cwd: ws, env: { ...process.env, ...gitEnv } });
      const dest = join(s.tmp.path, "out", "nomad");
      await collectFromAllocation(
        client,
        alloc!.ID,
        { taskId: "", dest, signal: AbortSignal.timeout(120_000), timeoutMs: 60_000 },
        { seq: 1, agentAddress: `127.0.0.1:${port}`, agentToken: token },
      );
      expect((await readFile(join(dest, "diff.patch"), "utf8")).includes("forged")).toBe(false);
      await expectSealedCollection(s, dest, "nomad");
    } finally {
      await client.jobs.deregister("hostile-ws", { purge: true }).catch(() => {});
      client.close();
      await double.close();
    }
  });
});
