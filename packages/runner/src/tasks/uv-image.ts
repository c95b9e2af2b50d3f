import { chmod, mkdir, mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execa } from "execa";

/**
 * `COPY --from=ghcr.io/astral-sh/uv:<tag> /uv /uvx <dest>` — the usual way a Dockerfile gets uv —
 * served where no image registry is reachable: the image holds nothing but the two static binaries,
 * and PyPI's `uv` wheel of the same version ships the same two binaries. The wheel is fetched by
 * this machine's pip (its own index settings) and the two files are taken out of it by name into a
 * fresh directory, which the build then copies from as from a build context.
 */

/** The files the uv image holds at its root. */
export const UV_IMAGE_FILES = ["uv", "uvx"] as const;

const UV_IMAGE = /^ghcr\.io\/astral-sh\/uv(?::(latest|\d+(?:\.\d+){0,2}))?$/;

/**
 * The pip requirement serving a `COPY --from=<image>`, or undefined when the image is not uv's own
 * (or its tag names a variant, e.g. `:python3.12-bookworm`, which holds a whole system). Pure.
 */
export function uvImageRequirement(image: string): string | undefined {
  const m = UV_IMAGE.exec(image);
  if (!m) return undefined;
  const tag = m[1];
  if (tag === undefined || tag === "latest") return "uv";
  return tag.split(".").length === 3 ? `uv==${tag}` : `uv==${tag}.*`;
}

/** A `--from` source of uv's image (`/uv`, `/uvx`) as a name in the served directory, or undefined. Pure. */
export function uvImageSource(src: string): string | undefined {
  const name = src.replace(/^\/+/, "");
  return (UV_IMAGE_FILES as readonly string[]).includes(name) ? name : undefined;
}

/** Extracts the wheel's `*.data/scripts/<name>` members into `out` (Python's zipfile, names only). */
const EXTRACT = [
  "import sys, zipfile",
  "z = zipfile.ZipFile(sys.argv[1])",
  "for n in sys.argv[3:]:",
  "    m = [i for i in z.namelist() if i.endswith('.data/scripts/' + n)]",
  "    if len(m) != 1: sys.exit('the wheel holds no single .data/scripts/' + n)",
  "    open(sys.argv[2] + '/' + n, 'wb').write(z.read(m[0]))",
].join("\n");

/**
 * A directory (`context`, inside `dir`) holding `uv` and `uvx` from PyPI's wheel for `requirement`,
 * and the wheel's file name (its version, for the record). The caller removes `dir`.
 */
export async function uvFromPypi(
  requirement: string,
  signal: AbortSignal,
): Promise<{ dir: string; context: string; wheel: string }> {
  const dir = await mkdtemp(join(tmpdir(), "flakegym-uv-"));
  try {
    const dl = join(dir, "wheel");
    const pip = await execa(
      "python3",
      ["-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--dest", dl, requirement],
      { reject: false, cancelSignal: signal, stdin: "ignore", all: true },
    );
    const wheel = (await readdir(dl).catch(() => [])).find((f) => f.endsWith(".whl"));
    if (pip.exitCode !== 0 || wheel === undefined)
      throw new Error(
        `COPY --from uv's image is served by PyPI's ${requirement} wheel, which this machine's pip could not fetch (exit ${pip.exitCode ?? "signal"}): ${(pip.all ?? "").split("\n").slice(-3).join(" | ")}`,
      );
    const out = join(dir, "context");
    await mkdir(out);
    await execa("python3", ["-c", EXTRACT, join(dl, wheel), out, ...UV_IMAGE_FILES], {
      cancelSignal: signal,
    });
    for (const f of UV_IMAGE_FILES) await chmod(join(out, f), 0o755);
    return { dir, context: out, wheel };
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}
