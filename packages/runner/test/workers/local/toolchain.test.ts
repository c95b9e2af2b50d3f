import { describe, expect, it } from "vitest";
import {
  NIX_STORE_DIR,
  nodeBinds,
  parseStoreClosure,
  SANDBOX_NODE_DIR,
} from "../../../src/workers/local/toolchain.js";

const NODE_PKG = `/nix/store/${"a".repeat(32)}-nodejs-24`;
const CLINE_PKG = `/nix/store/${"b".repeat(32)}-cline-core-1.0.10`;

describe("parseStoreClosure", () => {
  it("keeps store paths, one a line, and drops blanks and anything else", () => {
    expect(parseStoreClosure(`${NODE_PKG}\n\n  ${CLINE_PKG}  \n/etc/passwd\n${NODE_PKG}/bin\n`)).toEqual([
      NODE_PKG,
      CLINE_PKG,
    ]);
  });
});

describe("nodeBinds", () => {
  it("binds nothing for a node under /usr (the sandbox has /usr)", () => {
    expect(nodeBinds("/usr/bin/node", undefined)).toEqual({ binds: [], path: [] });
  });

  it("binds a store-built node's runtime closure read-only at its own paths, node's bin first on PATH", () => {
    const r = nodeBinds(`${NODE_PKG}/bin/node`, [NODE_PKG, CLINE_PKG]);
    expect(r.binds).toEqual([
      { src: NODE_PKG, dest: NODE_PKG },
      { src: CLINE_PKG, dest: CLINE_PKG },
    ]);
    expect(r.binds.every((b) => !b.rw)).toBe(true);
    expect(r.path).toEqual([`${NODE_PKG}/bin`]);
  });

  it("binds the whole store read-only when no closure is known", () => {
    expect(nodeBinds(`${NODE_PKG}/bin/node`, undefined).binds).toEqual([
      { src: NIX_STORE_DIR, dest: NIX_STORE_DIR },
    ]);
    expect(nodeBinds(`${NODE_PKG}/bin/node`, []).binds).toEqual([
      { src: NIX_STORE_DIR, dest: NIX_STORE_DIR },
    ]);
  });

  it("binds another node's prefix at /opt/node", () => {
    expect(nodeBinds("/opt/custom/node-v20/bin/node", undefined)).toEqual({
      binds: [{ src: "/opt/custom/node-v20", dest: SANDBOX_NODE_DIR }],
      path: [`${SANDBOX_NODE_DIR}/bin`],
    });
  });
});
