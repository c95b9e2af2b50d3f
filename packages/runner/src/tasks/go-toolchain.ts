import { chmod, mkdir, mkdtemp, readdir, rm, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execa } from "execa";

/**
 * `FROM golang:<version>` served where no image registry is reachable: the image is Debian with a
 * C toolchain, git and make, and Go's own distribution at /usr/local/go. Go publishes that same
 * distribution as a module, `golang.org/toolchain@v0.0.1-go<version>.linux-<arch>` (what
 * `GOTOOLCHAIN` switching downloads); this machine's `go` fetches it through its own proxy setting
 * into a scratch module cache, and its files are copied to /usr/local/go of the tree, `go` and
 * `gofmt` linked into /usr/local/bin (the sandbox's PATH has it; the image's ENV PATH is not
 * carried into the sandbox). A tag without a version (`golang:latest`, `golang:bookworm`) keeps
 * Debian's golang-go.
 */

/** The Go version a golang image tag names (`1.22.12-bookworm@sha256:…` → `1.22.12`, `1.22` → `1.22`). Pure. */
export function goImageVersion(image: string): string | undefined {
  const ref = image.split("@")[0]!;
  const name = ref.split(":")[0]!.split("/").pop()!.toLowerCase();
  if (name !== "golang" && name !== "go") return undefined;
  const tag = ref.includes(":") ? ref.slice(ref.lastIndexOf(":") + 1) : "";
  return /^(1\.\d+(?:\.\d+)?)(?:-|$)/.exec(tag)?.[1];
}

/** Go's name of this architecture (`dpkg --print-architecture` names: amd64, arm64, …). Pure. */
export const goArchOf = (dpkgArch: string) =>
  dpkgArch === "i386" ? "386" : dpkgArch.replace(/^armhf$/, "armv6l");

/** The newest `go<minor>.N` among the toolchain module's versions for `arch` (`1.22` → `1.22.12`). Pure. */
export function newestPatch(minor: string, versions: readonly string[], arch: string): string | undefined {
  const re = new RegExp(`^v0\\.0\\.1-go(${minor.replace(".", "\\.")}\\.(\\d+))\\.linux-${arch}$`);
  const hits = versions.flatMap((v) => {
    const m = re.exec(v);
    return m ? [{ v: m[1]!, n: Number(m[2]) }] : [];
  });
  return hits.sort((a, b) => b.n - a.n)[0]?.v;
}

const MODULE = "golang.org/toolchain";

async function goCmd(args: string[], cwd: string, signal: AbortSignal) {
  const r = await execa("go", args, {
    cwd,
    reject: false,
    cancelSignal: signal,
    stdin: "ignore",
    env: { GOMODCACHE: join(cwd, "mod"), GOFLAGS: "-modcacherw", GOTOOLCHAIN: "local", GO111MODULE: "on" },
  }).catch((err: Error) => ({ exitCode: 127, stdout: "", stderr: err.message }));
  if (r.exitCode !== 0)
    throw new Error(
      `go ${args.join(" ")} failed (exit ${r.exitCode}): ${String(r.stderr).trim().split("\n").slice(-3).join(" ")} — Go's distribution is fetched with this machine's go and its GOPROXY: install Go or reach a Go module proxy`,
    );
  return String(r.stdout);
}

/** Makes bin/* and pkg/tool/<os_arch>/* executable (the module zip keeps no modes), as Go's own switch does. */
async function markExecutables(goroot: string): Promise<void> {
  await chmod(join(goroot, "bin"), 0o755);
  for (const f of await readdir(join(goroot, "bin"))) await chmod(join(goroot, "bin", f), 0o755);
  const tool = join(goroot, "pkg", "tool");
  for (const d of await readdir(tool).catch(() => [] as string[]))
    for (const f of await readdir(join(tool, d))) await chmod(join(tool, d, f), 0o755);
}

/**
 * Installs Go `version` (full, or a minor resolved to its newest patch) from the toolchain module
 * at /usr/local/go of `tree`, linked into /usr/local/bin, with the image's GOPATH /go made. Returns
 * the module version installed, for the record.
 */
export async function installGoToolchain(
  tree: string,
  version: string,
  dpkgArch: string,
  signal: AbortSignal,
): Promise<string> {
  const scratch = await mkdtemp(join(tmpdir(), "flakegym-go-toolchain-"));
  try {
    const arch = goArchOf(dpkgArch);
    let full = version;
    if (version.split(".").length === 2) {
      const listed = await goCmd(["list", "-m", "-versions", MODULE], scratch, signal);
      const found = newestPatch(version, listed.trim().split(/\s+/).slice(1), arch);
      if (!found) throw new Error(`the Go module proxy lists no go${version}.N toolchain for linux-${arch}`);
      full = found;
    }
    const mod = `v0.0.1-go${full}.linux-${arch}`;
    const out = JSON.parse(
      await goCmd(["mod", "download", "-json", `${MODULE}@${mod}`], scratch, signal),
    ) as {
      Dir?: string;
    };
    if (!out.Dir) throw new Error(`go mod download ${MODULE}@${mod} gave no directory`);
    const goroot = join(tree, "usr", "local", "go");
    await rm(goroot, { recursive: true, force: true });
    await mkdir(goroot, { recursive: true });
    await execa("cp", ["-a", "--no-preserve=ownership", `${out.Dir}/.`, goroot], { cancelSignal: signal });
    await markExecutables(goroot);
    await mkdir(join(tree, "usr", "local", "bin"), { recursive: true });
    for (const b of ["go", "gofmt"]) {
      await rm(join(tree, "usr", "local", "bin", b), { force: true });
      await symlink(`/usr/local/go/bin/${b}`, join(tree, "usr", "local", "bin", b));
    }
    await mkdir(join(tree, "go", "bin"), { recursive: true });
    return `${MODULE}@${mod}`;
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}
