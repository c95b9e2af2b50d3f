import { describe, expect, it } from "vitest";
import { rootfsBinds, rootfsImageOf } from "../../../src/workers/podman/rootfs-image.js";

describe("a built tree as a podman image", () => {
  it("is named by the tree's content key", () => {
    expect(rootfsImageOf("/cache/flakegym/harbor-rootfs/0123abcd")).toBe(
      "localhost/flakegym-harbor-rootfs:0123abcd",
    );
  });

  it("drops this machine's /usr and binds a /usr node beside the tree; a node elsewhere keeps its own bind", () => {
    const binds = [
      { src: "/usr", dest: "/usr" },
      { src: "/host/x", dest: "/x" },
    ];
    expect(rootfsBinds(binds, "/usr/bin/node")).toEqual({
      binds: [
        { src: "/host/x", dest: "/x" },
        { src: "/usr/bin/node", dest: "/opt/flakegym-node/bin/node" },
      ],
      nodeInImage: "/opt/flakegym-node/bin/node",
    });
    const own = [
      { src: "/usr", dest: "/usr" },
      { src: "/opt/n20", dest: "/opt/node" },
    ];
    expect(rootfsBinds(own, "/opt/n20/bin/node")).toEqual({
      binds: [{ src: "/opt/n20", dest: "/opt/node" }],
    });
  });
});
