import { createHash } from "node:crypto";
import { mkdir, mkdtemp, rename, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createDeadline } from "@flakegym/nomad-jobs";
import { execa } from "execa";
import type { GuardFile } from "../decoys/guard.js";
import { GO_REWRITER } from "./go-source.js";
import { type Externalized, externalizedOf } from "./rewrite.js";

/**
 * Externalizes the graded assertions of a `go test` suite's hidden test files (issue 42): in a
 * graded test function, `if got != <constant> { t.Errorf(…) }` (each `!=` operand of a top-level
 * `||` chain) and a table test's `if got != tc.want` over a table bound once, in the test, to a
 * literal whose `want` fields are all constants of a basic type, become an emission of `got`
 * (rendered by its kind: int, float, string, bool; anything else equals nothing); the constants
 * leave the file (a table's become `*new(T)`), the site ids stay on the host with them. Go's own
 * parser runs on the host (go-source.ts), built once per source version. Whatever it cannot
 * rewrite stays as written and is left to decoys, said per test.
 */

/** Deadline of building the rewriter (once per source version) and of one run of it. */
const BUILD_MS = 180_000;
const REWRITE_MS = 60_000;

/** The Go toolchain the rewriter is built with: `$FLAKEGYM_HOST_GO`, else `go` on PATH. */
const hostGo = () => process.env.FLAKEGYM_HOST_GO || "go";

const goEnv = (): Record<string, string> => {
  const keep = ["PATH", "HOME", "GOCACHE", "GOPATH", "GOROOT", "XDG_CACHE_HOME"];
  const env: Record<string, string> = {
    GOTOOLCHAIN: "local",
    GOFLAGS: "",
    GO111MODULE: "on",
    CGO_ENABLED: "0",
  };
  for (const k of keep) if (process.env[k]) env[k] = process.env[k]!;
  return env;
};

let built: Promise<string> | undefined;

/** Whether `path` is a file of ours (this uid), so a binary another user planted is never run. */
async function ours(path: string): Promise<boolean> {
  const s = await stat(path).catch(() => undefined);
  return !!s && s.isFile() && s.uid === process.getuid?.() && (s.mode & 0o022) === 0;
}

async function build(signal?: AbortSignal): Promise<string> {
  const hash = createHash("sha256").update(GO_REWRITER).digest("hex").slice(0, 16);
  const home = join(tmpdir(), `flakegym-${process.getuid?.() ?? "u"}-go-rewriter`);
  await mkdir(home, { recursive: true, mode: 0o700 });
  const bin = join(home, hash);
  if (await ours(bin)) return bin;
  const dir = await mkdtemp(join(home, "build-"));
  try {
    await writeFile(join(dir, "main.go"), GO_REWRITER);
    await writeFile(join(dir, "go.mod"), "module flakegym/gorewriter\n\ngo 1.21\n");
    using deadline = createDeadline({
      signals: [signal],
      timeout: {
        limit: "building the host's Go assertion rewriter (scoring/externalize/go.ts)",
        ms: BUILD_MS,
      },
    });
    const r = await execa(hostGo(), ["build", "-trimpath", "-o", "rewriter", "."], {
      cwd: dir,
      reject: false,
      cancelSignal: deadline.signal,
      env: goEnv(),
      extendEnv: false,
    });
    if (r.exitCode !== 0)
      throw new Error(
        `the host's ${hostGo()} could not build the Go assertion rewriter (exit ${r.exitCode ?? "none"}${r.isCanceled ? ", deadline" : ""}): ${r.stderr.trim().split("\n").slice(-3).join(" | ")}; set FLAKEGYM_HOST_GO to a Go 1.21+`,
      );
    await rename(join(dir, "rewriter"), bin);
    return bin;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The rewriter's binary, built once per process (a failed build is retried next time). */
function rewriterBinary(signal?: AbortSignal): Promise<string> {
  built ??= build(signal).catch((e: unknown) => {
    built = undefined;
    throw e;
  });
  return built;
}

/**
 * Rewrites `files` (a go test suite's) so the graded tests' constant expectations are emitted,
 * not compared. Throws with the reason when the host's Go cannot build or run the rewriter (the
 * caller then keeps decoys for every test and reports why).
 */
export async function externalizeGo(
  files: readonly GuardFile[],
  graded: readonly string[],
  signal?: AbortSignal,
): Promise<Externalized> {
  // a file that is not UTF-8 would reach the parser changed: it stays as written
  const go = files.filter(
    (f) =>
      f.path.endsWith("_test.go") &&
      !f.content.includes(0) &&
      Buffer.from(f.content.toString("utf8")).equals(f.content),
  );
  const bin = await rewriterBinary(signal);
  using deadline = createDeadline({
    signals: [signal],
    timeout: { limit: "the host's Go assertion rewriter (scoring/externalize/go.ts)", ms: REWRITE_MS },
  });
  const input = JSON.stringify({
    files: go.map((f) => ({ path: f.path, text: f.content.toString("utf8") })),
    graded,
  });
  const r = await execa(bin, [], {
    input,
    reject: false,
    cancelSignal: deadline.signal,
    env: {},
    extendEnv: false,
    maxBuffer: 256 * 1024 * 1024,
  });
  if (r.exitCode !== 0)
    throw new Error(
      `the host's Go assertion rewriter failed (exit ${r.exitCode ?? "none"}${r.isCanceled ? ", deadline" : ""}): ${r.stderr.trim().split("\n").slice(-3).join(" | ")}`,
    );
  return externalizedOf(files, r.stdout);
}
