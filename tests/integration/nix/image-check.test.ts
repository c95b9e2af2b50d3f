import { execFileSync } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { makeTempDir, REPO_ROOT, type TempDir } from "@flakegym/test-utils";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// nix/checks/check-image.py is what the flake's image checks run on a streamed image. Here it
// inspects docker-archives laid out the way dockerTools.streamLayeredImage writes them
// (<digest>/layer.tar per layer, <digest>.json config, manifest.json), built with tar.

const CHECKER = join(REPO_ROOT, "nix/checks/check-image.py");
const havePython = (() => {
  try {
    execFileSync("python3", ["--version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();
if (!havePython) console.warn("skipping the image checker tests: python3 is not installed");

const CLINE = "/nix/store/00000000000000000000000000000000-cline-core-1.0.10";
const GLIBC = "/nix/store/11111111111111111111111111111111-glibc-2.42";
const ENTRY = "/nix/store/22222222222222222222222222222222-flakegym-worker/bin/flakegym-worker";

interface Layer {
  readonly digest: string;
  /** files to create, relative to the layer root */
  readonly files: readonly string[];
  readonly absolute?: boolean;
}

async function buildArchive(
  root: string,
  name: string,
  layers: readonly Layer[],
  labels: Record<string, string>,
) {
  const out = join(root, name);
  await mkdir(out, { recursive: true });
  for (const layer of layers) {
    const src = join(root, `${name}-${layer.digest}`);
    for (const f of layer.files) {
      await mkdir(join(src, f, ".."), { recursive: true });
      await writeFile(join(src, f), f);
    }
    await mkdir(join(out, layer.digest), { recursive: true });
    const top = [...new Set(layer.files.map((f) => f.split("/")[0]!))];
    const abs = layer.absolute ? ["--absolute-names", "--transform", "s|^|/|"] : [];
    await execa("tar", ["-C", src, ...abs, "-cf", join(out, layer.digest, "layer.tar"), ...top]);
  }
  const config = { config: { Entrypoint: [ENTRY], Labels: labels } };
  await writeFile(join(out, "cfg0.json"), JSON.stringify(config));
  const manifest = [
    {
      Config: "cfg0.json",
      RepoTags: ["flakegym/rust-env:abc"],
      Layers: layers.map((l) => `${l.digest}/layer.tar`),
    },
  ];
  await writeFile(join(out, "manifest.json"), JSON.stringify(manifest));
  const archive = `${out}.tar`;
  await execa("tar", [
    "-C",
    out,
    "-cf",
    archive,
    ...layers.map((l) => `${l.digest}/layer.tar`),
    "cfg0.json",
    "manifest.json",
  ]);
  return archive;
}

async function runChecker(root: string, archive: string, expect: object) {
  const expectFile = join(root, `expect-${Math.random().toString(36).slice(2)}.json`);
  await writeFile(expectFile, JSON.stringify(expect));
  const r = await execa("python3", [CHECKER, expectFile], { inputFile: archive, reject: false });
  return { exitCode: r.exitCode, stdout: r.stdout, stderr: r.stderr };
}

const expectation = {
  repoTag: "flakegym/rust-env:abc",
  entrypoint: [ENTRY],
  labels: { "org.flakegym.profile": "rust", "org.flakegym.cline.version": "1.0.10" },
  clineLayer: CLINE,
  requiredFiles: ["workspace/Cargo.lock", "workspace/target/debug"],
};
const goodLabels = { "org.flakegym.profile": "rust", "org.flakegym.cline.version": "1.0.10", extra: "x" };
const custom: Layer = {
  digest: "c".repeat(64),
  files: ["workspace/Cargo.lock", "workspace/target/debug/.fingerprint"],
};

describe.skipIf(!havePython)("nix/checks/check-image.py on docker-archives", () => {
  let tmp: TempDir;
  beforeAll(async () => {
    tmp = await makeTempDir("flakegym-image-check-");
  });
  afterAll(async () => tmp?.cleanup());

  it("passes an image whose Cline core is alone in a layer and prints that layer's digest", async () => {
    const archive = await buildArchive(
      tmp.path,
      "good",
      [
        { digest: "a".repeat(64), files: [`${GLIBC.slice(1)}/lib/libc.so.6`], absolute: true },
        {
          digest: "b".repeat(64),
          files: [`${CLINE.slice(1)}/lib/cline/cline-core.js`, `${CLINE.slice(1)}/bin/cline-core`],
          absolute: true,
        },
        custom,
      ],
      goodLabels,
    );
    const r = await runChecker(tmp.path, archive, expectation);
    expect(r.stderr).toContain(`ok   clineLayer: ${CLINE} is alone in layer ${"b".repeat(64)}/layer.tar`);
    expect(r.stderr).toContain("ok   file /workspace/target/debug: present");
    expect(r.exitCode).toBe(0);
    expect(r.stdout.trim()).toBe(`sha256:${"b".repeat(64)}`);
  });

  it("fails when the Cline core shares its layer, naming what it shares it with", async () => {
    const archive = await buildArchive(
      tmp.path,
      "merged",
      [{ digest: "d".repeat(64), files: [`${CLINE.slice(1)}/x`, `${GLIBC.slice(1)}/y`] }, custom],
      goodLabels,
    );
    const r = await runChecker(tmp.path, archive, expectation);
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toContain(
      `clineLayer: ${CLINE} shares layer ${"d".repeat(64)}/layer.tar with ['${GLIBC}']`,
    );
  });

  it("fails naming a wrong label, a wrong tag and a missing file", async () => {
    const archive = await buildArchive(
      tmp.path,
      "wrong",
      [
        { digest: "e".repeat(64), files: [`${CLINE.slice(1)}/x`] },
        { digest: "f".repeat(64), files: ["workspace/README.md"] },
      ],
      { "org.flakegym.profile": "go", "org.flakegym.cline.version": "1.0.10" },
    );
    const r = await runChecker(tmp.path, archive, { ...expectation, repoTag: "flakegym/rust-env:other" });
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toContain("label org.flakegym.profile: expected 'rust', got 'go'");
    expect(r.stderr).toContain(
      "repoTag: expected ['flakegym/rust-env:other'], got ['flakegym/rust-env:abc']",
    );
    expect(r.stderr).toContain("file /workspace/Cargo.lock: missing from every layer");
    expect(r.stderr).toMatch(/4 image check\(s\) failed/);
  });
});
