import { spawnSync } from "node:child_process";
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  type DebianBase,
  debianBaseKey,
  debianBaseOf,
  pythonSuiteOf,
  servedByText,
  sourcesForSuite,
} from "../../src/tasks/debian-base.js";
import { chrootArgs, copyShell, stepTimeoutMessage } from "../../src/tasks/dockerfile-build.js";
import {
  type BuildPlan,
  dockerLines,
  envPairs,
  expandVars,
  IMAGE_PATH,
  planDockerfile,
  type Refusal,
  refusalText,
} from "../../src/tasks/dockerfile-plan.js";
import { uvServedText } from "../../src/tasks/harbor-built.js";
import { uvImageRequirement } from "../../src/tasks/uv-image.js";

const plan = (text: string) => planDockerfile(text) as BuildPlan;
const refusals = (text: string) => (planDockerfile(text) as { refusals: Refusal[] }).refusals;

describe("dockerLines", () => {
  it("joins continuations, drops comments (also inside a continued RUN) and keeps each first line number", () => {
    const text =
      "# c\nFROM ubuntu:24.04\n\nRUN apt-get update && \\\n  # inside\n  apt-get install -y curl\nWORKDIR /app\n";
    expect(dockerLines(text)).toEqual([
      { line: 2, op: "FROM", args: "ubuntu:24.04" },
      { line: 4, op: "RUN", args: "apt-get update &&    apt-get install -y curl" },
      { line: 7, op: "WORKDIR", args: "/app" },
    ]);
  });
});

describe("planDockerfile", () => {
  it("reads the cookbook's dns-blacklisting shape: RUN, COPY into /etc and /usr/local/bin, ENTRYPOINT recorded, WORKDIR last", () => {
    const p = plan(
      'FROM ubuntu:24.04\nRUN apt-get update && apt-get install -y curl python3\nCOPY entrypoint.sh /entrypoint.sh\nRUN chmod +x /entrypoint.sh\nCOPY a.txt /etc/a.txt\nENTRYPOINT ["/entrypoint.sh"]\nWORKDIR /app\n',
    );
    expect(p.image).toBe("ubuntu:24.04");
    expect(p.workdir).toBe("/app");
    expect(p.entrypoint).toEqual(["/entrypoint.sh"]);
    expect(p.steps.map((s) => s.kind)).toEqual(["run", "copy", "run", "copy", "workdir"]);
    expect(p.steps[1]).toMatchObject({
      kind: "copy",
      sources: ["entrypoint.sh"],
      dest: "/entrypoint.sh",
      intoDir: false,
    });
  });

  it("resolves COPY destinations against the WORKDIR in force, and ENV/ARG values into later lines", () => {
    const p = plan(
      'ARG V=1.2\nFROM python:3.12-slim\nENV APP=/srv/app X="a b"\nWORKDIR $APP\nCOPY server.py persona.md .\nUSER nobody\n',
    );
    expect(p.image).toBe("python:3.12-slim");
    expect(p.env).toEqual({ APP: "/srv/app", X: "a b" });
    expect(p.steps.find((s) => s.kind === "copy")).toMatchObject({
      dest: "/srv/app",
      intoDir: true,
      sources: ["server.py", "persona.md"],
    });
    expect(p.user).toBe("nobody");
  });

  it("records a shell-form CMD as sh -c and keeps options of FROM out of the image name", () => {
    const p = plan("FROM --platform=linux/amd64 ubuntu:24.04 AS main\nCMD python3 server.py\n");
    expect(p.image).toBe("ubuntu:24.04");
    expect(p.cmd).toEqual(["/bin/sh", "-c", "python3 server.py"]);
  });

  it("refuses what it cannot honour by line number, instruction and why — every such line, not just the first", () => {
    const r = refusals(
      "FROM python:3.12-slim\nCOPY --from=ghcr.io/astral-sh/uv:python3.12-bookworm /usr/local/bin/uv /bin/\nADD https://example.invalid/x.tgz /opt/\nSHELL bash -c\nFROM debian\n",
    );
    expect(r.map((x) => x.line)).toEqual([2, 3, 4, 5]);
    expect(refusalText(r[0]!)).toMatch(
      /^line 2: COPY --from=ghcr\.io.*: option --from is not honoured \(another image or stage/,
    );
    expect(r[1]!.why).toMatch(/is a URL: nothing is fetched/);
    expect(r[2]!.why).toMatch(/SHELL must be a JSON array/);
    expect(r[3]!.why).toMatch(/multi-stage/);
  });

  it("refuses a source outside the build context, an archive ADD, a VOLUME and a Dockerfile without FROM", () => {
    expect(refusals("FROM ubuntu\nCOPY ../secret /x\n")[0]!.why).toMatch(/outside the build context/);
    expect(refusals("FROM ubuntu\nADD a.tar.gz /x/\n")[0]!.why).toMatch(/archive ADD would unpack/);
    expect(refusals("FROM ubuntu\nVOLUME /data\n")[0]!.why).toMatch(/VOLUME/);
    expect(refusals("RUN true\n").map((x) => x.why)).toEqual([
      "comes before FROM",
      "the Dockerfile has no FROM line",
    ]);
  });

  it("takes a local ADD as a copy", () => {
    expect(plan("FROM ubuntu\nADD dir /opt/dir\n").steps[0]).toMatchObject({
      kind: "copy",
      dest: "/opt/dir",
    });
  });
});

describe("variables", () => {
  it("expandVars: $X, braces, a default; envPairs: both ENV forms", () => {
    // biome-ignore lint/suspicious/noTemplateCurlyInString: Dockerfile variable syntax
    expect(expandVars("$A/${B}/${C:-c}", { A: "a", B: "b" })).toBe("a/b/c");
    expect(envPairs("PATH /opt/bin")).toEqual([["PATH", "/opt/bin"]]);
    expect(envPairs("A=1 B='x y'")).toEqual([
      ["A", "1"],
      ["B", "x y"],
    ]);
    expect(envPairs("=oops")).toBeUndefined();
  });
});

describe("the Debian base of a FROM image", () => {
  it("serves ubuntu/debian by minbase, python by Debian's python3 with pip allowed, and refuses an unknown image", () => {
    expect(debianBaseOf("ubuntu:24.04", "bookworm")).toMatchObject({ suite: "bookworm", packages: [] });
    const py = debianBaseOf("python:3.12-slim", "bookworm");
    expect(py).toMatchObject({
      packages: expect.arrayContaining(["python3", "python3-pip", "python-is-python3"]),
    });
    expect((py as DebianBase).hooks[0]).toMatch(/EXTERNALLY-MANAGED/);
    expect(debianBaseOf("mcr.microsoft.com/windows:ltsc", "bookworm")).toMatchObject({
      refused: expect.stringMatching(/no Debian base serves image/),
    });
  });

  it("puts an ubuntu base's apt sources at Ubuntu's path, where Dockerfiles edit them (a public mpiFileUtils task)", async () => {
    const ubuntu = debianBaseOf("ubuntu:24.04", "bookworm") as DebianBase;
    expect((debianBaseOf("debian:12", "bookworm") as DebianBase).hooks).toEqual([]);
    const tree = await mkdtemp(join(tmpdir(), "flakegym-ubuntu-sources-"));
    try {
      await mkdir(join(tree, "etc/apt/sources.list.d"), { recursive: true });
      await writeFile(join(tree, "etc/apt/sources.list.d/0000debian.sources"), "Types: deb\n");
      const r = spawnSync("sh", ["-c", ubuntu.hooks[0]!, "hook", tree]);
      expect(r.status).toBe(0);
      expect(await readdir(join(tree, "etc/apt/sources.list.d"))).toEqual(["ubuntu.sources"]);
      expect(await readFile(join(tree, "etc/apt/sources.list.d/ubuntu.sources"), "utf8")).toBe(
        "Types: deb\n",
      );
    } finally {
      await rm(tree, { recursive: true, force: true });
    }
  });

  it("keys a base by its content: another package, architecture or apt source is another key", () => {
    const b = debianBaseOf("ubuntu:24.04", "bookworm") as Exclude<
      ReturnType<typeof debianBaseOf>,
      { refused: string }
    >;
    const k = debianBaseKey(b, "amd64", "src");
    expect(debianBaseKey(b, "amd64", "src")).toBe(k);
    expect(debianBaseKey({ ...b, packages: ["curl"] }, "amd64", "src")).not.toBe(k);
    expect(debianBaseKey(b, "arm64", "src")).not.toBe(k);
    expect(debianBaseKey(b, "amd64", "src2")).not.toBe(k);
    expect(servedByText("ubuntu:24.04", b, k)).toMatch(
      new RegExp(`^FROM ubuntu:24.04 served by debian bookworm mmdebstrap ${k} \\(minbase;`),
    );
  });
});

describe("the build's commands", () => {
  it("a RUN as another user goes through setpriv; as root it is sh -c in the chroot with Docker's PATH", () => {
    const root = chrootArgs({ rootfs: "/r", cwd: "/app", env: { A: "1" }, user: "root", shell: "true" });
    expect(root.slice(0, 3)).toEqual(["--bind", "/r", "/"]);
    expect(root.slice(-4)).toEqual(["--", "/bin/sh", "-c", "true"]);
    expect(root).toContain("/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
    const user = chrootArgs({ rootfs: "/r", cwd: "/", env: {}, user: "app:app", shell: "id" });
    expect(user.slice(user.indexOf("--") + 1)).toEqual([
      "setpriv",
      "--reuid=app",
      "--regid=app",
      "--clear-groups",
      "/bin/sh",
      "-c",
      "id",
    ]);
  });

  it("shows this machine's CA bundle at build time only through its own path and variables, which the Dockerfile's ENV overrides", () => {
    const a = chrootArgs({
      rootfs: "/r",
      cwd: "/",
      env: { PIP_CERT: "/mine.pem" },
      user: "root",
      shell: "true",
      hostCa: "/host/ca.crt",
    });
    expect(a.join(" ")).toContain("--ro-bind /host/ca.crt /.flakegym-host-ca.crt");
    expect(a.join(" ")).toContain("--setenv SSL_CERT_FILE /.flakegym-host-ca.crt");
    expect(a.join(" ")).toContain("--setenv PIP_CERT /mine.pem");
    expect(
      chrootArgs({ rootfs: "/r", cwd: "/", env: {}, user: "root", shell: "true" }).join(" "),
    ).not.toContain("ca.crt");
  });

  it("a COPY of a directory copies its contents; of files into a directory by name; root-owned unless --chown", () => {
    const s = copyShell(
      { kind: "copy", line: 3, sources: ["skills", "a.txt"], dest: "/opt/x", intoDir: true },
      [true, false],
    );
    expect(s).toContain("cp -a '/.flakegym-context/skills/.' '/opt/x'/");
    expect(s).toContain("cp -a '/.flakegym-context/a.txt' '/opt/x/a.txt'");
    expect(s).toMatch(/chown -R '0:0' '\/opt\/x' '\/opt\/x\/a.txt'$/);
    const f = copyShell(
      {
        kind: "copy",
        line: 3,
        sources: ["e.sh"],
        dest: "/entrypoint.sh",
        intoDir: false,
        chown: "app",
        chmod: "755",
      },
      [false],
    );
    expect(f).toContain("cp -a '/.flakegym-context/e.sh' '/entrypoint.sh'");
    expect(f).toMatch(/chown -R 'app' '\/entrypoint.sh' && chmod -R '755' '\/entrypoint.sh'$/);
  });
});

describe("COPY --from uv's image (served by PyPI's uv wheel)", () => {
  it("maps the image's tag to the wheel's version: latest, a minor series, an exact release", () => {
    expect(uvImageRequirement("ghcr.io/astral-sh/uv:latest")).toBe("uv");
    expect(uvImageRequirement("ghcr.io/astral-sh/uv")).toBe("uv");
    expect(uvImageRequirement("ghcr.io/astral-sh/uv:0.8")).toBe("uv==0.8.*");
    expect(uvImageRequirement("ghcr.io/astral-sh/uv:0.9.7")).toBe("uv==0.9.7");
    // a variant tag is a whole system, and another image is not uv's
    expect(uvImageRequirement("ghcr.io/astral-sh/uv:python3.12-bookworm")).toBeUndefined();
    expect(uvImageRequirement("ghcr.io/evil/uv:latest")).toBeUndefined();
  });

  it("plans /uv /uvx as a copy from the wheel's binaries, keeping the destination's form", () => {
    expect(
      plan("FROM ubuntu:24.04\nCOPY --from=ghcr.io/astral-sh/uv:0.9.7 /uv /uvx /bin/\n").steps[0],
    ).toEqual({
      kind: "copy",
      line: 2,
      sources: ["uv", "uvx"],
      dest: "/bin",
      intoDir: true,
      uv: "uv==0.9.7",
    });
    expect(
      plan("FROM python:3.12\nCOPY --from=ghcr.io/astral-sh/uv:latest /uv /usr/local/bin/uv\n").steps[0],
    ).toMatchObject({
      sources: ["uv"],
      dest: "/usr/local/bin/uv",
      intoDir: false,
      uv: "uv",
    });
  });

  it("is named in the substitution note", () => {
    expect(
      uvServedText(plan("FROM ubuntu:24.04\nCOPY --from=ghcr.io/astral-sh/uv:latest /uv /uvx /bin/\n")),
    ).toBe("; COPY --from=ghcr.io/astral-sh/uv (line 2) served by PyPI's uv wheel (no image registry)");
    expect(uvServedText(plan("FROM ubuntu:24.04\nCOPY a /b\n"))).toBe("");
  });

  it("refuses a file the image does not hold, by name", () => {
    expect(refusals("FROM ubuntu\nCOPY --from=ghcr.io/astral-sh/uv:latest /etc/passwd /x\n")[0]!.why).toMatch(
      /source '\/etc\/passwd' is not in uv's image/,
    );
  });
});

describe("a build step cut by its bound (environment.build_timeout_sec, per step here)", () => {
  it("names the line, the bound, the field and what to do", () => {
    expect(stepTimeoutMessage(62, 600_000, "RUN npm install failed (exit signal)")).toBe(
      "environment/Dockerfile line 62 ran past 600 s, environment.build_timeout_sec, which bounds each step here: raise build_timeout_sec in task.toml if the step needs longer on this machine (RUN npm install failed (exit signal))",
    );
  });
});

describe('SHELL (a public mpiFileUtils task: SHELL ["/bin/bash", "-o", "pipefail", "-c"])', () => {
  it("runs the shell-form RUN lines after it through it; exec-form RUN and lines before it through none", () => {
    const p = plan(
      'FROM ubuntu\nRUN echo a | cat\nSHELL ["/bin/bash", "-o", "pipefail", "-c"]\nRUN echo b | cat\nRUN ["touch", "/x"]\n',
    );
    const runs = p.steps.filter((s) => s.kind === "run");
    expect(runs.map((r) => ("shellArgv" in r ? r.shellArgv : undefined))).toEqual([
      undefined,
      ["/bin/bash", "-o", "pipefail", "-c"],
      undefined,
    ]);
  });

  it("is the chroot's argv before the command", () => {
    const a = chrootArgs({
      rootfs: "/r",
      cwd: "/",
      env: {},
      user: "root",
      shell: "echo b",
      shellArgv: ["/bin/bash", "-c"],
    });
    expect(a.slice(-3)).toEqual(["/bin/bash", "-c", "echo b"]);
    expect(chrootArgs({ rootfs: "/r", cwd: "/", env: {}, user: "root", shell: "echo b" }).slice(-3)).toEqual([
      "/bin/sh",
      "-c",
      "echo b",
    ]);
  });
});

describe("ENV PATH extending the braced PATH (a public mpiFileUtils task)", () => {
  it("extends the image's own PATH, not an empty one", () => {
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the Dockerfile's own ${PATH}, not a template
    const p = plan("FROM ubuntu\nENV PATH=/opt/x/bin:${PATH}\n");
    expect(p.env.PATH).toBe(`/opt/x/bin:${IMAGE_PATH}`);
    expect(IMAGE_PATH).toBe("/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
  });
});

describe("a python image served by the Debian release of its Python (a public flux-accounting task: python:3.13)", () => {
  it("picks the suite by the image's minor version, the host's when none has it", () => {
    expect(pythonSuiteOf("python:3.13-slim-bookworm@sha256:00")).toEqual({ suite: "trixie", python: "3.13" });
    expect(pythonSuiteOf("python:3.11-slim")).toEqual({ suite: "bookworm", python: "3.11" });
    expect(pythonSuiteOf("python:3.12")).toBeUndefined();
    expect(pythonSuiteOf("python:3.130")).toBeUndefined();
    expect(pythonSuiteOf("python")).toBeUndefined();
    expect(debianBaseOf("python:3.13-slim", "bookworm")).toMatchObject({ suite: "trixie" });
    expect(debianBaseOf("python:3.12-slim", "bookworm")).toMatchObject({ suite: "bookworm" });
  });

  it("builds it from the host's archive with the suite renamed", () => {
    const host = [
      "Types: deb",
      "URIs: http://deb.debian.org/debian",
      "Suites: bookworm bookworm-updates",
      "",
      "Types: deb",
      "URIs: http://deb.debian.org/debian-security",
      "Suites: bookworm-security",
    ].join("\n");
    const t = sourcesForSuite(host, "bookworm", "trixie");
    expect(t).toContain("Suites: trixie trixie-updates\n");
    expect(t).toContain("Suites: trixie-security");
    expect(t).toContain("URIs: http://deb.debian.org/debian\n");
    expect(sourcesForSuite(host, "bookworm", "bookworm")).toBe(host);
  });
});
