import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { createDeadline } from "@flakegym/nomad-jobs";
import { execa } from "execa";
import { holdHarborTree, TREE_DONE_MARK } from "../gc/harbor-tree-use.js";
import { goImageVersion } from "./go-toolchain.js";

/**
 * The root filesystem that serves a Dockerfile's `FROM` where no image registry is reachable: a
 * Debian system built from Debian's packages with mmdebstrap (minbase), with the packages that make
 * it the nearest match to the image (python:3.x → Debian's python3 and pip, node → nodejs, …). Built
 * once per content key (suite, package list, architecture, apt sources, hooks) under the flakegym
 * cache; the substitution is recorded ("FROM ubuntu:24.04 served by debian bookworm mmdebstrap <key>").
 */

/** The Debian base chosen for an image. */
export interface DebianBase {
  readonly suite: string;
  /** Packages added to minbase, sorted. */
  readonly packages: readonly string[];
  /** Shell lines run on the finished tree (`$1` is its path). */
  readonly hooks: readonly string[];
  /** What is not the image's (versions, layout), for the record. */
  readonly differences: string;
}

/** The python image's pip installs into the system Python: Debian's marks it externally managed. */
const PYTHON_HOOK = 'rm -f "$1"/usr/lib/python3*/EXTERNALLY-MANAGED';

/**
 * An ubuntu image keeps its apt sources in /etc/apt/sources.list.d/ubuntu.sources, which Dockerfiles
 * edit in place (`sed -i … ubuntu.sources` to pin a snapshot): the Debian sources are put there.
 */
const UBUNTU_SOURCES_HOOK =
  'for f in "$1"/etc/apt/sources.list.d/*.sources; do mv "$f" "$1"/etc/apt/sources.list.d/ubuntu.sources; done';

/** The nearest Debian base of a `FROM` image, or why there is none. Pure. */
export function debianBaseOf(image: string, suite: string): DebianBase | { readonly refused: string } {
  const name = image.split("@")[0]!.split(":")[0]!.split("/").pop()!.toLowerCase();
  const base = (packages: string[], differences: string, hooks: string[] = []): DebianBase => ({
    suite,
    packages: [...packages].sort(),
    hooks,
    differences,
  });
  if (name === "ubuntu")
    return base(
      [],
      `Debian ${suite} minbase, its apt sources at Ubuntu's path (/etc/apt/sources.list.d/ubuntu.sources, so a RUN that edits them still runs; they name Debian's archive); RUN apt-get installs Debian's packages of the same names`,
      [UBUNTU_SOURCES_HOOK],
    );
  if (/^(debian|buildpack-deps)$/.test(name))
    return base([], `Debian ${suite} minbase; RUN apt-get installs Debian's packages of the same names`);
  if (/^python/.test(name)) {
    // the Debian release whose python3 is the image's minor version, where one is (else the host's)
    const own = pythonSuiteOf(image);
    const py = own ? { ...base([], ""), suite: own.suite } : undefined;
    return {
      ...base(
        ["ca-certificates", "python-is-python3", "python3", "python3-pip", "python3-venv"],
        own
          ? `Debian ${own.suite}'s python3 (Python ${own.python}, the image's minor version; Debian's build, not the image's), pip installing into it as the image's does`
          : `Debian ${suite}'s python3 (not the image's version), pip installing into it as the image's does`,
        [PYTHON_HOOK],
      ),
      ...(py ? { suite: py.suite } : {}),
    };
  }
  if (/^(node|nodejs)$/.test(name))
    return base(["ca-certificates", "nodejs", "npm"], `Debian ${suite}'s nodejs (not the image's version)`);
  const go = goImageVersion(image);
  if (go !== undefined)
    return base(
      ["ca-certificates", "curl", "g++", "gcc", "git", "libc6-dev", "make", "pkg-config", "procps"],
      `Go ${go} from the Go module proxy's golang.org/toolchain (the image's own distribution) at /usr/local/go; Debian ${suite}'s gcc, make and git as the image's`,
    );
  if (/^(golang|go)$/.test(name))
    return base(["ca-certificates", "git", "golang-go"], `Debian ${suite}'s Go (not the image's version)`);
  if (/^(gcc|clang)$/.test(name))
    return base(["g++", "gcc", "make"], `Debian ${suite}'s gcc (not the image's version)`);
  if (/^rust/.test(name))
    return base(["ca-certificates", "cargo", "rustc"], `Debian ${suite}'s Rust (not the image's version)`);
  return {
    refused: `no Debian base serves image '${image}' (ubuntu, debian, python, node, golang, gcc, rust images are served): build it on a machine with an image registry`,
  };
}

/** Debian releases by the Python minor version their python3 is (those reachable from Debian's archive). */
const PYTHON_SUITES: Readonly<Record<string, string>> = { "3.11": "bookworm", "3.13": "trixie" };

/** The Debian suite whose python3 is a `python:3.x…` image's minor version, or undefined. Pure. */
export function pythonSuiteOf(image: string): { suite: string; python: string } | undefined {
  const tag = image.split("@")[0]!.split(":")[1] ?? "";
  const python = /^(3\.\d+)(?![\d])/.exec(tag)?.[1];
  const suite = python === undefined ? undefined : PYTHON_SUITES[python];
  return python && suite ? { suite, python } : undefined;
}

/**
 * The host's apt sources (deb822) for another suite of the same archive: each `Suites:` line's
 * host suite name (`bookworm`, `bookworm-updates`, `bookworm-security`) renamed. Pure.
 */
export function sourcesForSuite(text: string, hostSuite: string, suite: string): string {
  if (suite === hostSuite) return text;
  return text.replace(/^(Suites:.*)$/gm, (line) =>
    line.replace(new RegExp(`\\b${hostSuite}(?=$|[\\s-])`, "g"), suite),
  );
}

/** The content key of a base: suite, packages, hooks, architecture and the apt sources it is built from. Pure. */
export function debianBaseKey(base: DebianBase, arch: string, sources: string): string {
  const h = createHash("sha256");
  h.update(
    JSON.stringify({ v: 1, suite: base.suite, packages: base.packages, hooks: base.hooks, arch, sources }),
  );
  return h.digest("hex").slice(0, 16);
}

/** The manifest line of the substitution. Pure. */
export function servedByText(image: string, base: DebianBase, key: string): string {
  const extra = base.packages.length > 0 ? ` + ${base.packages.join(" ")}` : "";
  return `FROM ${image} served by debian ${base.suite} mmdebstrap ${key} (minbase${extra}; ${base.differences})`;
}

/** This machine's Debian apt sources (deb822), the first suite they name, and the architecture. */
export async function hostAptSources(): Promise<{ file: string; text: string; suite: string; arch: string }> {
  const file = "/etc/apt/sources.list.d/debian.sources";
  const text = await readFile(file, "utf8").catch(() => {
    throw new Error(`${file} is missing: a Debian base is built from this machine's Debian apt sources`);
  });
  const suite = /^Suites:\s*(\S+)/m.exec(text)?.[1];
  if (!suite) throw new Error(`${file} names no Suites: line`);
  const arch = (await execa("dpkg", ["--print-architecture"], { timeout: 10_000 })).stdout.trim();
  return { file, text, suite, arch };
}

/** Where built bases live: `<cache>/harbor-rootfs/base-<key>`. */
export const baseDir = (cacheRoot: string, key: string) => join(cacheRoot, "harbor-rootfs", `base-${key}`);

/** The marker written last: a base directory without it is unfinished. */
export const DONE_MARK = TREE_DONE_MARK;

/**
 * The base's root filesystem directory, built with mmdebstrap unless the cache holds it. Needs
 * root (mmdebstrap --mode=root) and Debian's apt sources; bounded by `timeoutMs`.
 */
export async function ensureDebianBase(
  base: DebianBase,
  o: { cacheRoot: string; timeoutMs: number; signal?: AbortSignal; log?: (line: string) => void },
): Promise<{ dir: string; key: string; builtMs?: number }> {
  const host = await hostAptSources();
  const src = { ...host, text: sourcesForSuite(host.text, host.suite, base.suite) };
  const key = debianBaseKey(base, src.arch, src.text);
  const dir = baseDir(o.cacheRoot, key);
  // held (flakegym gc leaves it) for as long as this process runs, which copies it for a build
  if (await holdHarborTree(dir, o.signal)) return { dir, key };
  const tmp = `${dir}.tmp-${process.pid}-${Date.now()}`;
  await mkdir(join(o.cacheRoot, "harbor-rootfs"), { recursive: true });
  const args = [
    "--variant=minbase",
    "--mode=root",
    "--format=directory",
    ...(base.packages.length > 0 ? [`--include=${base.packages.join(",")}`] : []),
    ...base.hooks.map((h) => `--customize-hook=${h}`),
    base.suite,
    tmp,
    // another suite's sources go in as text on stdin ("-"), the host's file as itself
    src.text === host.text ? src.file : "-",
  ];
  const started = Date.now();
  o.log?.(
    `building the Debian base ${key} (mmdebstrap ${base.suite}${base.packages.length ? ` + ${base.packages.join(" ")}` : ""})`,
  );
  using deadline = createDeadline({
    signals: [o.signal],
    timeout: { ms: o.timeoutMs, limit: "the Debian base build" },
  });
  const r = await execa("mmdebstrap", args, {
    reject: false,
    cancelSignal: deadline.signal,
    ...(src.text === host.text ? { stdin: "ignore" as const } : { input: src.text }),
    all: true,
  });
  if (r.exitCode !== 0) {
    await rm(tmp, { recursive: true, force: true });
    const tail = (r.all ?? "").split("\n").slice(-8).join("\n");
    throw new Error(
      `mmdebstrap ${base.suite} failed (exit ${r.exitCode ?? "signal"}${deadline.expired ? ", timed out" : ""}): ${tail}\ninstall mmdebstrap (scripts/ensure-system-deps) and run as root`,
    );
  }
  const builtMs = Date.now() - started;
  await writeFile(join(tmp, DONE_MARK), `${JSON.stringify({ key, ...base, arch: src.arch, builtMs })}\n`);
  await rename(tmp, dir).catch(async (err: NodeJS.ErrnoException) => {
    await rm(tmp, { recursive: true, force: true }); // another build finished first: keep that one
    if (!existsSync(join(dir, DONE_MARK))) throw err;
  });
  await holdHarborTree(dir, o.signal);
  return { dir, key, builtMs };
}
