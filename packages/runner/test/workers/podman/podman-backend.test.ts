import { existsSync } from "node:fs";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execa } from "execa";
import { describe, expect, it } from "vitest";
import {
  BASE_IMAGE,
  hostToolchainPodmanOptions,
  writeBaseRootfs,
} from "../../../src/workers/podman/podman-backend.js";

describe("hostToolchainPodmanOptions", () => {
  it("binds host /usr read-only and imports the base image; a node in /usr needs nothing more", () => {
    expect(hostToolchainPodmanOptions("/usr/bin/node")).toEqual({
      image: BASE_IMAGE,
      importBaseImage: true,
      binds: [{ src: "/usr", dest: "/usr" }],
    });
  });

  it("a node outside /usr is bound at /opt/node, put on PATH and used for the supervisor", () => {
    expect(hostToolchainPodmanOptions("/opt/u/.nvm/versions/node/v20.1.0/bin/node")).toEqual({
      image: BASE_IMAGE,
      importBaseImage: true,
      binds: [
        { src: "/usr", dest: "/usr" },
        { src: "/opt/u/.nvm/versions/node/v20.1.0", dest: "/opt/node" },
      ],
      pathPrefix: ["/opt/node/bin"],
      nodeInImage: "/opt/node/bin/node",
    });
  });
});

describe("writeBaseRootfs", () => {
  it("writes a tar of the minimal rootfs (merged-/usr links, passwd, mount points) and nothing else", async () => {
    const dir = await mkdtemp(join(tmpdir(), "flakegym-podman-rootfs-"));
    try {
      const tar = await writeBaseRootfs(dir);
      expect(tar).toBe(join(dir, "rootfs.tar"));
      expect(await readdir(dir)).toEqual(["rootfs.tar"]);
      const list = (await execa("tar", ["-tvf", tar])).stdout.split("\n");
      const names = list.map((l) => l.split(/\s+/).slice(5).join(" "));
      for (const d of ["./workspace/", "./deps/", "./sandbox-home/", "./run/flakegym/", "./usr/", "./tmp/"])
        expect(names).toContain(d);
      expect(names).toContain("./bin -> usr/bin");
      expect(names).toContain("./lib64 -> usr/lib64");
      expect(names).toContain("./etc/passwd");
      expect(existsSync(join(dir, "rootfs"))).toBe(false);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
