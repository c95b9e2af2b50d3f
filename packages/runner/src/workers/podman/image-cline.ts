import { relative } from "node:path";
import type { ClinePackage } from "@flakegym/cline-vendor";
import { z } from "zod";
import { FlakegymError } from "../../errors.js";

/**
 * The Cline core a flake image carries (nix/image.nix: `FLAKEGYM_CLINE_DIR` in its environment,
 * `org.flakegym.cline.*` labels). Its native modules are built for the image's own Node, so an
 * agent in such an image runs the image's node and core; only the supervisor script (plain
 * JavaScript) is bound in from the runner. Pure.
 */

/** The part of `podman image inspect`'s `.Config` read here. */
export const ImageConfig = z
  .object({
    Env: z.array(z.string()).nullish().describe("KEY=value entries of the image's environment"),
    Labels: z.record(z.string(), z.string()).nullish().describe("the image's labels"),
  })
  .passthrough();
export type ImageConfig = z.infer<typeof ImageConfig>;

/** Where the image's Cline core is and which version it is; throws naming the image and what is missing. */
export function imageClineOf(image: string, config: ImageConfig): { dir: string; version: string } {
  const dir = (config.Env ?? []).find((e) => e.startsWith("FLAKEGYM_CLINE_DIR="))?.slice(19);
  const version = config.Labels?.["org.flakegym.cline.version"];
  if (!dir?.startsWith("/") || !version) {
    throw new FlakegymError(
      "E_IMAGE_CLINE",
      `image ${image} has no Cline core of the flake (${!dir?.startsWith("/") ? "no absolute FLAKEGYM_CLINE_DIR in its environment" : "no org.flakegym.cline.version label"})`,
      {
        hint: "use an image the flake built (`flakegym images load`), or run without --images nix",
      },
    );
  }
  return { dir, version };
}

/**
 * The runner's pinned package relocated to the image's copy: the same files at the same relative
 * paths under `dir`, except the descriptor set, which the runner's own gRPC client reads on the
 * host (same version, same file). Throws when the image's version is not the runner's (the runner's gRPC
 * client speaks the pinned core's protocol).
 */
export function clinePackageInImage(
  host: ClinePackage,
  image: string,
  inImage: { dir: string; version: string },
): ClinePackage {
  if (inImage.version !== host.version) {
    throw new FlakegymError(
      "E_IMAGE_CLINE",
      `image ${image} carries cline@${inImage.version}, this runner pins cline@${host.version}`,
      { hint: "rebuild and load the images from this runner's flake (`flakegym images load`)" },
    );
  }
  const at = (p: string) => `${inImage.dir}/${relative(host.root, p)}`;
  return {
    ...host,
    root: inImage.dir,
    coreJs: at(host.coreJs),
    hostBinary: at(host.hostBinary),
    fakeNodeModules: at(host.fakeNodeModules),
    nodeModules: at(host.nodeModules),
    ripgrep: at(host.ripgrep),
  };
}
