import { mkdir, mkdtemp, rm, stat, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { aliasSpecOf } from "../../src/rollout/worker-specs.js";
import type { HarborTaskToml } from "../../src/tasks/harbor.js";
import {
  environmentOf,
  envNames,
  offlinePytestPip,
  offlineServedApt,
  offlineUvVerifier,
  parseTaskToml,
  restoreTestFile,
  rewriteTestFile,
} from "../../src/tasks/harbor.js";
import {
  agentIdsOf,
  agentUserMetadata,
  agentUserOf,
  builtAgentUser,
  passwdEntryOf,
  unbuiltAgentUserProblem,
} from "../../src/tasks/harbor-agent-user.js";
import { builtPlanOf, containerEvalCommand } from "../../src/tasks/harbor-built.js";
import {
  builtExecutables,
  builtWorkspace,
  contextDirsOf,
  HARBOR_COMPOSE_FILE,
  layoutProblem,
  missingPartProblem,
  specProblem,
  unreadComposeNote,
  verifierScript,
} from "../../src/tasks/harbor-dir.js";
import { asUserPrefix } from "../../src/tasks/harbor-oracle.js";
import { restoreTestScript } from "../../src/tasks/harbor-reexport.js";
import { substitutionNote } from "../../src/tasks/harbor-served.js";
import {
  impliedWorkdir,
  impliedWorkdirNote,
  nestedWorkdirNote,
  nestedWorkdirOf,
} from "../../src/tasks/harbor-workdir.js";
import { writeFiles } from "../../src/tasks/task-dir.js";
import {
  SANDBOX_WORKSPACE,
  TaskSpec,
  taskWorkdirProblem,
  workdirProblem,
} from "../../src/tasks/task-spec.js";
import { SANDBOX_PATHS } from "../../src/workers/local/shape.js";

/** Shapes met in public Harbor task directories that the cookbook does not have. */

describe("a verifier's pip install of pytest alone (offline at test time)", () => {
  const qc = [
    "#!/bin/bash",
    "set -uo pipefail",
    "python3 -m pip install --break-system-packages -q pytest==9.0.3 2>/dev/null || true",
    "cp /tests/test_outputs.py /app/test_outputs.py 2>/dev/null || true",
    "python3 -m pytest /app/test_outputs.py -q",
  ].join("\n");

  it("drops the line and notes that Debian's pytest serves the pin", () => {
    const r = offlinePytestPip(qc);
    expect(r.script).not.toMatch(/pip install/);
    expect(r.script).toMatch(/^cp \/tests\/test_outputs\.py/m);
    expect(r.notes).toEqual([expect.stringMatching(/pip install pytest==9\.0\.3 dropped .*python3-pytest/)]);
  });

  it("leaves any other pip line for the network check, which refuses it by name", () => {
    const s = "pip install pytest requests || true\npytest /tests/test_x.py";
    expect(offlinePytestPip(s)).toEqual({ script: s, notes: [] });
    expect(verifierScript(s)).toMatchObject({ field: "tests/test.sh", reason: /runs 'pip install'/ });
  });

  it("the whole verifier goes through with /tests pointed at the workspace's .harbor (WORKDIR as written)", () => {
    const r = verifierScript(qc);
    expect(r).toMatchObject({ notes: [expect.stringMatching(/pytest==9\.0\.3 dropped/)] });
    expect((r as { script: string }).script).toMatch(
      /cp \$HARBOR_ROOT\/tests\/test_outputs\.py \/app\/test_outputs\.py/,
    );
  });
});

describe("the uv bootstrap with an environment prefix and continued lines", () => {
  it("drops `DEBIAN_FRONTEND=noninteractive apt-get install … curl ca-certificates` and runs pytest offline", () => {
    const s = [
      "apt-get update",
      "DEBIAN_FRONTEND=noninteractive apt-get install -y \\",
      "  --no-install-recommends \\",
      "  curl \\",
      "  ca-certificates",
      "curl -LsSf https://astral.sh/uv/0.9.7/install.sh | sh",
      "source $HOME/.local/bin/env",
      "uvx \\",
      "  --with pytest==8.4.1 \\",
      "  pytest --ctrf /logs/verifier/ctrf.json /tests/test_outputs.py -rA",
    ].join("\n");
    const r = offlineUvVerifier(s);
    expect(r).toMatchObject({ script: "python3 -m pytest /tests/test_outputs.py -rA" });
  });

  it("still refuses an apt-get of anything else behind a prefix", () => {
    const s = "DEBIAN_FRONTEND=noninteractive apt-get install -y jq\nuvx pytest /tests";
    expect(verifierScript(s)).toMatchObject({ reason: /runs 'apt-get'/ });
  });
});

describe("test files naming /tests/ and /logs/", () => {
  const py = 'EXPECTED = Path("/tests/expected.json")\nOUT = "/logs/verifier/x"\nAPP = "/app/tests/y"\n';

  it("are pointed at the workspace's .harbor/ as the verifier sees it at WORKDIR, and put back on export", () => {
    const r = rewriteTestFile(py, "/app")!;
    expect(r).toBe(
      'EXPECTED = Path("/app/.harbor/tests/expected.json")\nOUT = "/app/.harbor/logs/verifier/x"\nAPP = "/app/tests/y"\n',
    );
    expect(restoreTestFile(r, "/app")).toBe(py);
  });

  it("cannot be when WORKDIR is /", () => {
    expect(rewriteTestFile(py, "/")).toBeUndefined();
  });

  it("test.sh keeps its own rewrite", () => {
    expect(restoreTestScript("bash $HARBOR_ROOT/tests/run.sh $HARBOR_WORKSPACE", "/app")).toBe(
      "bash /tests/run.sh /app",
    );
  });
});

describe("COPY of a directory without a trailing slash", () => {
  const df = "FROM ubuntu:24.04\nWORKDIR /app\nCOPY queries /queries\n";

  it("is a directory copy (Docker's rule) when the build context has that directory", () => {
    const dirs = contextDirsOf(["environment/Dockerfile", "environment/queries/q1.sql", "tests/test.sh"]);
    expect([...dirs].sort()).toEqual([".", "queries"]);
    expect(environmentOf(df, dirs)).toMatchObject({ mounts: [{ from: "queries", at: "/queries" }] });
  });

  it("is a single file outside WORKDIR, refused, when the source is a file", () => {
    expect(environmentOf(df, new Set(["."]))).toMatchObject({ reason: /is a file/ });
  });
});

describe("ENV of output-only variables when the system is served", () => {
  it("reads both ENV forms", () => {
    expect(envNames("PYTHONDONTWRITEBYTECODE=1      PYTHONUNBUFFERED=1")).toEqual([
      "PYTHONDONTWRITEBYTECODE",
      "PYTHONUNBUFFERED",
    ]);
    expect(envNames("DEBIAN_FRONTEND noninteractive")).toEqual(["DEBIAN_FRONTEND"]);
  });

  it("drops them, recorded in the substitution note; any other variable is refused naming --build-env", () => {
    const env = environmentOf(
      "FROM python:3.12-slim\nENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1\nWORKDIR /app\n",
    );
    expect(env).toMatchObject({ envDropped: ["PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED"] });
    expect(substitutionNote(env as never, "a system")).toMatch(
      /ENV PYTHONDONTWRITEBYTECODE PYTHONUNBUFFERED dropped/,
    );
    expect(
      environmentOf("FROM python:3.12-slim\nENV PYTHONDONTWRITEBYTECODE=1 APP_MODE=test\n"),
    ).toMatchObject({
      reason: /ENV .*APP_MODE=test: .*--build-env honours any ENV/,
    });
  });
});

describe("a verifier's apt-get of what every Harbor environment here has", () => {
  it("drops `apt-get update && apt-get install -y python3-pytest` (noted)", () => {
    const r = offlineServedApt(
      "apt-get update && apt-get install -y python3-pytest\npytest /tests/test_outputs.py -v",
    );
    expect(r).toEqual({
      script: "pytest /tests/test_outputs.py -v",
      notes: [expect.stringMatching(/apt-get install python3-pytest dropped/)],
    });
  });

  it("leaves anything else for the network check, which refuses it by name", () => {
    const s = "apt-get update && apt-get install -y python3-pytest jq\npytest /tests";
    expect(offlineServedApt(s)).toEqual({ script: s, notes: [] });
    expect(verifierScript(s)).toMatchObject({ reason: /runs 'apt-get'/ });
  });
});

describe("the workspace of a built environment", () => {
  it("is every file under WORKDIR in the built tree: copied and seeded by RUN lines alike", async () => {
    const tree = await mkdtemp(join(tmpdir(), "flakegym-built-ws-"));
    try {
      await mkdir(join(tree, "app/out"), { recursive: true });
      await writeFile(join(tree, "app/recon.py"), "print(1)\n");
      await writeFile(join(tree, "app/out/seed.db"), Buffer.from([0, 1, 2]));
      await writeFile(join(tree, "outside.txt"), "not the workspace\n");
      const ws = await builtWorkspace(tree, "/app");
      expect(Object.keys(ws).sort()).toEqual(["out/seed.db", "recon.py"]);
      await symlink("/etc/passwd", join(tree, "app/link"));
      expect(await builtWorkspace(tree, "/app")).toMatchObject({ reason: /symbolic link/ });
      expect(await builtWorkspace(tree, "/srv")).toEqual({});
    } finally {
      await rm(tree, { recursive: true, force: true });
    }
  });
});

describe("a Dockerfile without WORKDIR whose scripts work in /app (a public single-task repo's shape)", () => {
  // Ayush-97techyboy/Project-Dynamo_HandshakeAI: `FROM python:3.13-slim-bookworm` + one pip RUN;
  // solve.sh `mkdir -p /app && echo '{"status": "success"}' > /app/report.json`
  const dockerfile = "FROM python:3.13-slim-bookworm\nRUN pip install pytest==8.3.4\n";
  const solve = `mkdir -p /app\necho '{"status": "success"}' > /app/report.json`;

  it("takes /app as the workspace only when solve.sh or the tests name it as a path", () => {
    expect(impliedWorkdir([solve])).toBe("/app");
    expect(impliedWorkdir(['REPORT = Path("/app/report.json")'])).toBe("/app");
    expect(impliedWorkdir(["cd /app && make"])).toBe("/app");
    expect(impliedWorkdir(["cp x /apps/y", "see https://x.org/app/z", "echo $HOME/app"])).toBeUndefined();
  });

  it("builds with it (RUN lines still at /), noted; a WORKDIR or task.toml's workdir wins", () => {
    expect(builtPlanOf(dockerfile, undefined, "/app")).toMatchObject({ workdir: "/app" });
    expect(builtPlanOf(dockerfile)).toMatchObject({ reason: /has no WORKDIR/ });
    expect(builtPlanOf(`${dockerfile}WORKDIR /srv\n`, undefined, "/app")).toMatchObject({ workdir: "/srv" });
    expect(builtPlanOf(dockerfile, "/custom", "/app")).toMatchObject({ workdir: "/custom" });
    expect(impliedWorkdirNote("/app")).toMatch(
      /no WORKDIR: the workspace is \/app.*Harbor would start them at \//,
    );
  });
});

describe("task.toml's environment.workdir (Harbor's own example hello-workdir)", () => {
  const dockerfile = "FROM ubuntu:24.04\nRUN mkdir -p /custom-workdir\nCOPY data/ ./data/\n";

  it("is the workspace over a Dockerfile without WORKDIR, served and built", () => {
    expect(environmentOf(dockerfile)).toMatchObject({ workdir: "/" });
    expect(environmentOf(dockerfile, new Set(["data"]), "/custom-workdir")).toMatchObject({
      workdir: "/custom-workdir",
      mounts: [{ from: "data", at: "/data" }],
    });
    expect(builtPlanOf(dockerfile)).toMatchObject({ reason: /has no WORKDIR/ });
    expect(builtPlanOf(dockerfile, "/custom-workdir")).toMatchObject({ workdir: "/custom-workdir" });
  });

  it("places COPY destinations against it, and a bad one is refused by name", () => {
    const env = environmentOf("FROM python:3.12\nWORKDIR /app\nCOPY a.txt /srv/a.txt\n", new Set(), "/srv");
    expect(env).toMatchObject({ workdir: "/srv", copies: [{ from: "a.txt", to: "a.txt" }] });
    expect(environmentOf(dockerfile, new Set(), "/etc/x")).toMatchObject({ reason: /WORKDIR '\/etc\/x'/ });
  });
});

describe("task.toml's agent.user (Harbor's own example hello-user; public talents-* tasks)", () => {
  const toml = (agent: string) => parseTaskToml(`[agent]\ntimeout_sec = 120.0\n${agent}\n`) as HarborTaskToml;
  const passwd = [
    "root:x:0:0:root:/root:/bin/bash",
    "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin",
    "agent:x:1000:1001::/srv/agent:/bin/bash",
  ].join("\n");

  it("names a user; root, or no user, is Harbor's default (nothing to switch)", () => {
    expect(agentUserOf(toml('user = "agent"'))).toBe("agent");
    expect(agentUserOf(toml("user = 1000"))).toBe("1000");
    expect(agentUserOf(toml('user = "root"'))).toBeUndefined();
    expect(agentUserOf(toml(""))).toBeUndefined();
  });

  it("is looked up in the built tree's /etc/passwd by name or uid", () => {
    const agent = { name: "agent", uid: 1000, gid: 1001, home: "/srv/agent" };
    expect(passwdEntryOf(passwd, "agent")).toEqual(agent);
    expect(passwdEntryOf(passwd, "1000")).toEqual(agent);
    expect(passwdEntryOf(passwd, "candidate")).toBeUndefined();
  });

  it("without a built environment it is refused naming the field and --build-env", () => {
    expect(unbuiltAgentUserProblem("agent")).toMatchObject({
      field: "task.toml: agent.user",
      reason: /user "agent", which exists only in the task's own container: import with --build-env/,
    });
  });

  it("a user the image lacks is refused naming the field and /etc/passwd", async () => {
    const tree = await mkdtemp(join(tmpdir(), "flakegym-passwd-"));
    try {
      await mkdir(join(tree, "etc"));
      await writeFile(join(tree, "etc/passwd"), passwd);
      expect(await builtAgentUser(tree, "agent")).toMatchObject({ uid: 1000, gid: 1001 });
      expect(await builtAgentUser(tree, "candidate")).toMatchObject({
        field: "task.toml: agent.user",
        reason: /"candidate", which the built environment's \/etc\/passwd does not hold/,
      });
    } finally {
      await rm(tree, { recursive: true, force: true });
    }
  });

  it("is kept in the task's metadata and read back as the agent worker's user", () => {
    const meta = agentUserMetadata({ name: "agent", uid: 1000, gid: 1001, home: "/srv/agent" });
    expect(meta).toEqual({ harbor_agent_user: "agent", harbor_agent_ids: "1000:1001" });
    expect(agentIdsOf(meta)).toEqual({ uid: 1000, gid: 1001 });
    expect(agentIdsOf({ harbor_agent_ids: "agent" })).toBeUndefined();
    expect(agentIdsOf(undefined)).toBeUndefined();
  });

  it("the oracle runs solve.sh as it with setpriv (its groups, HOME and USER)", () => {
    expect(asUserPrefix({ name: "agent", uid: 1000, gid: 1001, home: "/srv/agent" })).toEqual([
      "/usr/bin/env",
      "HOME=/srv/agent",
      "USER=agent",
      "LOGNAME=agent",
      "setpriv",
      "--reuid=1000",
      "--regid=1001",
      "--init-groups",
      "--",
    ]);
    expect(asUserPrefix(undefined)).toEqual([]);
  });
});

describe("WORKDIR /workspace (Harbor's describe-image; a public csv-cleaner task): the sandbox's own workspace", () => {
  it("is accepted as the workdir, with nothing to alias; a mount there stays refused", () => {
    expect(SANDBOX_WORKSPACE).toBe(SANDBOX_PATHS.workspace);
    const env = environmentOf("FROM ubuntu:24.04\nWORKDIR /workspace\nCOPY image.png /workspace/image.png\n");
    expect(env).toMatchObject({ workdir: "/workspace", copies: [{ from: "image.png", to: "image.png" }] });
    expect(taskWorkdirProblem("/workspace")).toBeUndefined();
    expect(taskWorkdirProblem("/workspace/sub")).toMatch(/sandbox's own \/workspace/);
    expect(workdirProblem("/workspace")).toMatch(/sandbox's own \/workspace/);
    const runtime = (workdir: string) =>
      ({ catalog: { dir: "/t", spec: { workdir } } }) as unknown as Parameters<typeof aliasSpecOf>[0];
    expect(aliasSpecOf(runtime("/workspace"), "/c")).toEqual({});
    expect(aliasSpecOf(runtime("/app"), "/c")).toEqual({ workspaceAlias: "/app" });
  });
});

describe("Compose-named files Harbor does not read (a public taskforge task's environment/docker-compose.yml)", () => {
  const toml = {} as Record<string, unknown>;

  it("only environment/docker-compose.yaml is a Compose environment, as Harbor's Docker environment reads it", () => {
    expect(layoutProblem(toml, ["environment/docker-compose.yaml", "environment/Dockerfile"])).toMatchObject({
      field: HARBOR_COMPOSE_FILE,
    });
    for (const f of ["environment/docker-compose.yml", "environment/compose.yaml", "environment/compose.yml"])
      expect(layoutProblem(toml, [f, "environment/Dockerfile"])).toBeUndefined();
  });

  it("the others are named in a note: their services are not started, as under Harbor", () => {
    expect(unreadComposeNote(["environment/docker-compose.yml", "tests/test.sh"])).toMatch(
      /^environment\/docker-compose\.yml: not read as a Compose environment \(Harbor reads only environment\/docker-compose\.yaml\)/,
    );
    expect(unreadComposeNote(["environment/docker-compose.yaml"])).toBeUndefined();
    expect(unreadComposeNote(["environment/Dockerfile"])).toBeUndefined();
  });
});

describe("the agent worker's user from a built task's metadata", () => {
  const runtime = (metadata: Record<string, string>) =>
    ({ catalog: { dir: "/t", spec: { workdir: "/app", metadata } } }) as unknown as Parameters<
      typeof aliasSpecOf
    >[0];

  it("is set with the built tree, never without it", () => {
    const ids = { harbor_agent_user: "agent", harbor_agent_ids: "1000:1000" };
    expect(aliasSpecOf(runtime({ harbor_rootfs: "k1", ...ids }), "/c").agentUser).toEqual({
      uid: 1000,
      gid: 1000,
    });
    expect(aliasSpecOf(runtime(ids), "/c").agentUser).toBeUndefined();
  });
});

describe("a task Harbor itself could not run (a public Telco churn task: test/ for tests/, notebooks for solve.sh)", () => {
  it("is refused naming the missing part, before any build", () => {
    expect(
      missingPartProblem(["task.toml", "instruction.md", "test/test.sh", "solution/solution.ipynb"]),
    ).toEqual({
      field: "tests/test.sh",
      reason: expect.stringMatching(
        /^missing: Harbor runs tests\/test\.sh as the verifier \(found test\/test\.sh, which Harbor does not read\)/,
      ),
    });
    expect(missingPartProblem(["tests/test.sh", "solution/solution.ipynb"])).toMatchObject({
      field: "solution/solve.sh",
    });
    expect(missingPartProblem(["tests/test.sh", "solution/solve.sh"])).toBeUndefined();
    expect(missingPartProblem(["tests/test.sh", "solution/fix.patch"])).toBeUndefined();
  });
});

describe("an invalid task.toml (a public dynamo task: a newline inside a basic string)", () => {
  it("is refused naming its line and key, and that Harbor's own reading rejects it too", () => {
    const text = '[metadata]\ndifficulty = "easy"\nexplanation = "one\ntwo"\n';
    const p = parseTaskToml(text);
    expect(p).toMatchObject({
      field: "task.toml line 3 (explanation)",
      reason: expect.stringMatching(
        /^is not valid TOML \(newlines are not allowed in strings\); Harbor's own reading/,
      ),
    });
  });
});

describe("a built WORKDIR inside the sandbox's own /workspace (public talents-* tasks: WORKDIR /workspace/trace-weave)", () => {
  it("makes /workspace the workspace and the WORKDIR where solve.sh and the verifier start", () => {
    expect(nestedWorkdirOf("/workspace/trace-weave", SANDBOX_WORKSPACE)).toEqual({
      root: "/workspace",
      startDir: "/workspace/trace-weave",
    });
    expect(nestedWorkdirOf("/workspace", SANDBOX_WORKSPACE)).toBeUndefined();
    expect(nestedWorkdirOf("/workspaces/x", SANDBOX_WORKSPACE)).toBeUndefined();
    expect(nestedWorkdirOf("/app", SANDBOX_WORKSPACE)).toBeUndefined();
    expect(nestedWorkdirNote("/workspace/trace-weave", "/workspace")).toMatch(
      /^WORKDIR \/workspace\/trace-weave lies in the sandbox's own \/workspace: the workspace is \/workspace \(holding trace-weave\/ as the image has it\)/,
    );
  });

  it("the verifier starts in it", () => {
    expect(containerEvalCommand("/workspace/trace-weave", 60)).toContain("; cd /workspace/trace-weave; ");
  });

  it("a served task's WORKDIR there stays refused, named by field and message (not the schema's JSON)", () => {
    const err = TaskSpec.safeParse({ workdir: "/workspace/x" });
    expect(err.success).toBe(false);
    const p = specProblem(err.error);
    expect(p.field).toMatch(/^task\.toml \(as the task's .*workdir/);
    expect(p.reason).toMatch(/'\/workspace\/x' lies in the sandbox's own \/workspace/);
    expect(p.reason).not.toMatch(/"code"/);
  });
});

describe("the image's executable bit in a built workspace (a public flux-accounting task's bin/ scripts)", () => {
  it("is read from the built tree and written back into the task folder", async () => {
    const tree = await mkdtemp(join(tmpdir(), "flakegym-exec-bit-"));
    try {
      await mkdir(join(tree, "app/bin"), { recursive: true });
      await writeFile(join(tree, "app/bin/tool"), "#!/bin/sh\n", { mode: 0o755 });
      await writeFile(join(tree, "app/README.md"), "x\n", { mode: 0o644 });
      const files = ["README.md", "bin/tool"];
      expect(await builtExecutables(tree, "/app", files)).toEqual(["bin/tool"]);
      const out = join(tree, "out");
      await writeFiles(out, { "bin/tool": "#!/bin/sh\n", "README.md": "x\n" }, ["bin/tool"]);
      expect((await stat(join(out, "bin/tool"))).mode & 0o777).toBe(0o755);
      expect((await stat(join(out, "README.md"))).mode & 0o111).toBe(0);
    } finally {
      await rm(tree, { recursive: true, force: true });
    }
  });
});
