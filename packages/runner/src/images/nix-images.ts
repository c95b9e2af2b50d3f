import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { execa } from "execa";
import { FlakegymError } from "../errors.js";
import { runningNixBin } from "../nix/running-nix.js";
import { writeJsonAtomic } from "../run-format/jsonl.js";
import {
  type ImageRecord,
  ImageRecords,
  type ImageTarget,
  parseLoadedImage,
  upsertImageRecord,
} from "./targets.js";

/**
 * The effects of `flakegym images`: `nix build` of a flake image (a stream script), streaming it
 * into `podman load`, reading the loaded image's id, pushing it, and the record of what was loaded.
 * Every external call has a deadline.
 */

export interface NixImageOptions {
  readonly flakeRef: string;
  readonly nixBin?: string;
  readonly extraArgs?: readonly string[];
  readonly env?: NodeJS.ProcessEnv;
  readonly signal?: AbortSignal;
  readonly timeoutMs: number;
}

/** `nix --version`'s line, or undefined when there is no nix. */
export async function nixVersionLine(nixBin = "nix", env?: NodeJS.ProcessEnv): Promise<string | undefined> {
  const r = await execa(nixBin, ["--version"], { reject: false, timeout: 30_000, stdin: "ignore", env });
  return r.exitCode === 0 ? r.stdout.trim() : undefined;
}

/** `nix build --no-link --print-out-paths <flake>#<package>`: the image's stream script. */
export async function nixBuildImage(target: ImageTarget, o: NixImageOptions): Promise<string> {
  const installable =
    target.expr === undefined
      ? `${o.flakeRef}#${target.package}`
      : `--expr (lib.mkSnapshotImage ${target.id})`;
  const buildArgs = target.expr === undefined ? [installable] : ["--impure", "--expr", target.expr];
  const r = await execa(
    o.nixBin ?? runningNixBin(o.env ?? process.env),
    [
      "--extra-experimental-features",
      "nix-command flakes",
      "build",
      "--no-link",
      "--print-out-paths",
      ...(o.extraArgs ?? []),
      ...buildArgs,
    ],
    {
      reject: false,
      stdin: "ignore",
      timeout: o.timeoutMs,
      ...(o.env ? { env: o.env } : {}),
      ...(o.signal ? { cancelSignal: o.signal } : {}),
    },
  );
  if (r.timedOut) {
    throw new FlakegymError(
      "E_NIX_TIMEOUT",
      `nix build ${installable} did not finish within ${o.timeoutMs} ms`,
      {
        hint: "raise --timeout-ms; the first build of an image fetches its whole closure",
      },
    );
  }
  const out = r.stdout.trim().split("\n").at(-1) ?? "";
  if (r.exitCode !== 0 || !out.startsWith("/")) {
    throw new FlakegymError(
      "E_NIX_BUILD",
      `nix build ${installable} failed (exit ${r.exitCode}): ${r.stderr.trim().split("\n").slice(-8).join("\n")}`,
      { hint: "run the same `nix build` by hand with --show-trace" },
    );
  }
  return out;
}

/**
 * Runs the stream script and pipes the docker-archive into `podman load`; returns the reference
 * podman loaded it as. Both processes are killed at the deadline.
 */
export async function podmanLoadStream(
  streamScript: string,
  o: { readonly timeoutMs: number; readonly podmanArgs?: readonly string[] },
): Promise<string> {
  const stream = spawn(streamScript, [], { stdio: ["ignore", "pipe", "pipe"] });
  const load = spawn("podman", [...(o.podmanArgs ?? []), "load"], { stdio: ["pipe", "pipe", "pipe"] });
  stream.stdout.pipe(load.stdin);
  let out = "";
  let err = "";
  load.stdout.on("data", (d: Buffer) => {
    out += d.toString();
  });
  load.stderr.on("data", (d: Buffer) => {
    err += d.toString();
  });
  stream.stderr.on("data", (d: Buffer) => {
    err += d.toString();
  });
  const exit = (p: ReturnType<typeof spawn>) =>
    new Promise<number>((res) => {
      p.on("error", () => res(127));
      p.on("close", (code) => res(code ?? -1));
    });
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    stream.kill("SIGKILL");
    load.kill("SIGKILL");
  }, o.timeoutMs);
  try {
    const [s, l] = await Promise.all([exit(stream), exit(load)]);
    if (timedOut)
      throw new FlakegymError("E_PODMAN_LOAD", `${streamScript} | podman load: over ${o.timeoutMs} ms`);
    const loaded = parseLoadedImage(out);
    if (s !== 0 || l !== 0 || loaded === undefined) {
      throw new FlakegymError(
        "E_PODMAN_LOAD",
        `${streamScript} | podman load failed (stream exit ${s}, podman exit ${l}): ${err.trim().split("\n").slice(-6).join("\n")}`,
        { hint: "is podman installed and working (`flakegym doctor`)?" },
      );
    }
    return loaded;
  } finally {
    clearTimeout(timer);
  }
}

/** `podman image inspect --format {{.Id}}`. */
export async function podmanImageId(ref: string, timeoutMs: number): Promise<string> {
  const r = await execa("podman", ["image", "inspect", "--format", "{{.Id}}", ref], {
    reject: false,
    stdin: "ignore",
    timeout: timeoutMs,
  });
  if (r.exitCode !== 0) {
    throw new FlakegymError("E_PODMAN_INSPECT", `podman image inspect ${ref} failed: ${r.stderr.trim()}`);
  }
  return r.stdout.trim();
}

/** `podman push` to `<registry>/<name>:<tag>`; returns `<registry>/<name>@<digest>`. */
export async function podmanPush(
  ref: string,
  registry: string,
  name: string,
  timeoutMs: number,
): Promise<string> {
  const dest = `${registry.replace(/\/+$/, "")}/${name}`;
  const dir = await mkdtemp(join(tmpdir(), "flakegym-push-"));
  const digestFile = join(dir, "digest");
  try {
    const r = await execa(
      "podman",
      ["push", "--digestfile", digestFile, ref, `docker://${dest}:${ref.split(":").at(-1)}`],
      {
        reject: false,
        stdin: "ignore",
        timeout: timeoutMs,
      },
    );
    if (r.exitCode !== 0) {
      throw new FlakegymError("E_PODMAN_PUSH", `podman push ${ref} to ${dest} failed: ${r.stderr.trim()}`, {
        hint: "log in first (`podman login <registry>`), or push with skopeo (docs/reference/nix.md)",
      });
    }
    return `${dest}@${readFileSync(digestFile, "utf8").trim()}`;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The records file's content; an absent file is no records. Throws naming a malformed file. */
export function readImageRecords(file: string): ImageRecords {
  if (!existsSync(file)) return { images: [] };
  const r = ImageRecords.safeParse(JSON.parse(readFileSync(file, "utf8")));
  if (!r.success) {
    const issue = r.error.issues[0]!;
    throw new FlakegymError("E_IMAGE_RECORDS", `${file}: field '${issue.path.join(".")}': ${issue.message}`, {
      hint: "delete the file; `flakegym images load` writes it again",
    });
  }
  return r.data;
}

/** Adds one record to the file (atomic replace). */
export async function recordImage(file: string, rec: ImageRecord): Promise<void> {
  await mkdir(dirname(file), { recursive: true });
  await writeJsonAtomic(file, upsertImageRecord(readImageRecords(file), rec));
}
