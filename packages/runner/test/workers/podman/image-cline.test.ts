import { resolveClinePackage } from "@flakegym/cline-vendor";
import { describe, expect, it } from "vitest";
import { clinePackageInImage, ImageConfig, imageClineOf } from "../../../src/workers/podman/image-cline.js";

const DIR = "/nix/store/0123456789abcdfghijklmnpqrsvwxyz-cline-1.0.10/lib/node_modules/cline";
const config = ImageConfig.parse({
  Env: ["PATH=/bin:/usr/bin", `FLAKEGYM_CLINE_DIR=${DIR}`, "FLAKEGYM_PROFILE=node"],
  Labels: { "org.flakegym.cline.version": "1.0.10", "org.flakegym.profile": "node" },
  Entrypoint: ["/bin/flakegym-worker"],
});

describe("imageClineOf", () => {
  it("reads the core's directory and version from the image's environment and labels", () => {
    expect(imageClineOf("img", config)).toEqual({ dir: DIR, version: "1.0.10" });
  });

  it("refuses an image that is not the flake's, naming the image and what is missing", () => {
    expect(() => imageClineOf("localhost/other:1", { Env: ["PATH=/bin"], Labels: null })).toThrow(
      /image localhost\/other:1 has no Cline core of the flake \(no absolute FLAKEGYM_CLINE_DIR/,
    );
    expect(() => imageClineOf("x", { Env: [`FLAKEGYM_CLINE_DIR=${DIR}`] })).toThrow(
      /no org.flakegym.cline.version label/,
    );
  });
});

describe("clinePackageInImage", () => {
  const host = resolveClinePackage();

  it("relocates the runner's package layout to the image's copy; the descriptor set stays the host's", () => {
    const p = clinePackageInImage(host, "img", { dir: DIR, version: host.version });
    expect(p.root).toBe(DIR);
    expect(p.coreJs).toBe(`${DIR}/cline-core.js`);
    expect(p.hostBinary).toBe(`${DIR}/bin/${host.hostBinary.split("/").at(-1)}`);
    expect(p.nodeModules).toBe(`${DIR}/node_modules`);
    expect(p.fakeNodeModules).toBe(`${DIR}/fake_node_modules`);
    expect(p.ripgrep).toBe(`${DIR}/rg`);
    expect(p.descriptorSet).toBe(host.descriptorSet);
  });

  it("refuses an image whose core is not the runner's version", () => {
    expect(() => clinePackageInImage(host, "flakegym/node-env:t", { dir: DIR, version: "1.0.9" })).toThrow(
      /image flakegym\/node-env:t carries cline@1.0.9, this runner pins cline@1.0.10/,
    );
  });
});
