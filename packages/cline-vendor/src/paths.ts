import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { ClineVendorError, ErrorCode } from "./errors.js";

/** The pinned npm package version of the compiled Cline core. */
export const CLINE_VERSION = "1.0.10";
/** npm tarball integrity of `cline@1.0.10` (FACTS §2). */
export const CLINE_INTEGRITY =
  "sha512-Ofj9n3ry3RZ/q6GtZs6eqqMJIGqnRWGm/lAxN6VuOC66erV1qzpxTzZw+acMNXJjIjRAbkq5UIP5IqtOPex5aQ==";
/** What the pinned core reports as its own version (getProcessInfo / logs). */
export const CLINE_CORE_REPORTED_VERSION = "3.52.0";

/** Typed locations inside the installed, verified `cline` package. */
export interface ClinePackage {
  readonly version: string;
  readonly integrity: string;
  /** Directory of the installed `cline` package. */
  readonly root: string;
  /** The standalone core bundle, run with `node`. */
  readonly coreJs: string;
  /** FileDescriptorSet of every gRPC service the core and host serve. */
  readonly descriptorSet: string;
  /** The Go host-bridge binary for this platform. */
  readonly hostBinary: string;
  /** The `vscode` shim directory; must be on NODE_PATH. */
  readonly fakeNodeModules: string;
  /** The package's bundled node_modules (grpc, better-sqlite3); must be on NODE_PATH. */
  readonly nodeModules: string;
  /** ripgrep binary where the core expects it (`<root>/rg`). */
  readonly ripgrep: string;
}

const GO_ARCH: Readonly<Record<string, string>> = { x64: "amd64", arm64: "arm64" };
const SUPPORTED_PLATFORMS = ["linux", "darwin"];

/**
 * Name of the cline-host binary for a platform/arch (`cline-host-linux-amd64`). Throws
 * E_CLINE_UNSUPPORTED_PLATFORM for anything the package ships no binary for.
 */
export function hostBinaryName(platform: string = process.platform, arch: string = process.arch): string {
  const goArch = GO_ARCH[arch];
  if (!SUPPORTED_PLATFORMS.includes(platform) || goArch === undefined) {
    throw new ClineVendorError(
      ErrorCode.UnsupportedPlatform,
      `cline@${CLINE_VERSION} ships no cline-host binary for ${platform}/${arch}`,
      {
        hint: "run flakegym on linux or darwin with an x64 or arm64 CPU (or inside a linux/amd64 container)",
      },
    );
  }
  return `cline-host-${platform}-${goArch}`;
}

function badInstall(message: string, hint: string): never {
  throw new ClineVendorError(ErrorCode.BadInstall, message, { hint });
}

const REINSTALL = "run `npm ci` at the repository root (it installs the pinned cline@1.0.10)";

/** Reads the integrity npm recorded for the package in the hidden lockfile, if there is one. */
function installedIntegrity(root: string): string | undefined {
  // <project>/node_modules/cline → <project>/node_modules/.package-lock.json
  const lock = join(dirname(root), ".package-lock.json");
  if (!existsSync(lock)) return undefined;
  try {
    const parsed = JSON.parse(readFileSync(lock, "utf8")) as {
      packages?: Record<string, { version?: string; integrity?: string }>;
    };
    return parsed.packages?.["node_modules/cline"]?.integrity;
  } catch {
    return undefined;
  }
}

export interface ResolveOptions {
  /** Use this directory instead of resolving `cline` from this package (tests, Nix store paths). */
  readonly root?: string;
  readonly platform?: string;
  readonly arch?: string;
}

/**
 * Locates the installed `cline` package and verifies it is the pinned version with every file the
 * launcher needs. Throws {@link ClineVendorError} (E_CLINE_INSTALL / E_CLINE_UNSUPPORTED_PLATFORM)
 * naming the missing or mismatched piece and how to fix it.
 */
export function resolveClinePackage(options: ResolveOptions = {}): ClinePackage {
  let root: string;
  if (options.root !== undefined) root = resolve(options.root);
  else {
    try {
      root = dirname(createRequire(import.meta.url).resolve("cline/package.json"));
    } catch (cause) {
      throw new ClineVendorError(ErrorCode.BadInstall, "the npm package `cline` is not installed", {
        hint: REINSTALL,
        cause,
      });
    }
  }
  const manifestPath = join(root, "package.json");
  if (!existsSync(manifestPath)) badInstall(`no package.json in ${root}`, REINSTALL);
  let manifest: { name?: unknown; version?: unknown };
  try {
    manifest = JSON.parse(readFileSync(manifestPath, "utf8")) as { name?: unknown; version?: unknown };
  } catch (cause) {
    throw new ClineVendorError(ErrorCode.BadInstall, `${manifestPath} is not valid JSON`, {
      hint: REINSTALL,
      cause,
    });
  }
  if (manifest.name !== "cline")
    badInstall(`${manifestPath} is package '${String(manifest.name)}', expected 'cline'`, REINSTALL);
  if (manifest.version !== CLINE_VERSION)
    badInstall(
      `installed cline is version ${String(manifest.version)} at ${root}, flakegym pins ${CLINE_VERSION}`,
      `${REINSTALL}; later cline versions (2.x/3.x) have no cline-core.js`,
    );
  const integrity = installedIntegrity(root);
  if (integrity !== undefined && integrity !== CLINE_INTEGRITY)
    badInstall(
      `installed cline@${CLINE_VERSION} has integrity ${integrity}, expected ${CLINE_INTEGRITY}`,
      `the package was tampered with or came from elsewhere; ${REINSTALL}`,
    );
  const binary = hostBinaryName(options.platform, options.arch);
  const pkg: ClinePackage = {
    version: CLINE_VERSION,
    integrity: CLINE_INTEGRITY,
    root,
    coreJs: join(root, "cline-core.js"),
    descriptorSet: join(root, "proto", "descriptor_set.pb"),
    hostBinary: join(root, "bin", binary),
    fakeNodeModules: join(root, "fake_node_modules"),
    nodeModules: join(root, "node_modules"),
    ripgrep: join(root, "rg"),
  };
  const required: [keyof ClinePackage, string][] = [
    ["coreJs", "the core bundle"],
    ["descriptorSet", "the gRPC descriptor set"],
    ["hostBinary", "the host-bridge binary"],
    ["fakeNodeModules", "the vscode shim"],
    ["ripgrep", "ripgrep (copied to ./rg by cline's postinstall)"],
  ];
  for (const [key, what] of required) {
    if (!existsSync(pkg[key]))
      badInstall(
        `${what} is missing: ${pkg[key]}`,
        key === "ripgrep" ? "run `npm rebuild cline` (its postinstall copies rg)" : REINSTALL,
      );
  }
  const sqlite = join(pkg.nodeModules, "better-sqlite3", "build", "Release", "better_sqlite3.node");
  if (!existsSync(sqlite))
    badInstall(
      `cline's bundled better-sqlite3 native addon is not built: ${sqlite}`,
      "run `npm rebuild cline` (needs a C++ compiler, python3 and make; offline is fine)",
    );
  return pkg;
}
