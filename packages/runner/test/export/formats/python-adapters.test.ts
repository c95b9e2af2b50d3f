import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

/**
 * The Python adapters' credit across segments and members (adapters/python/tests/test_credit.py:
 * stdlib only, hand-built records, no server), beside credit.test.ts's TypeScript twin.
 */

const adapters = fileURLToPath(new URL("../../../../../adapters/python", import.meta.url));
const python = ["python3", "python"].find(
  (p) =>
    spawnSync(p, ["-c", "import sys; assert sys.version_info >= (3, 8)"], { timeout: 30_000 }).status === 0,
);

if (python === undefined) console.log("skipped the Python adapters' credit tests: no python3 >= 3.8 on PATH");

describe("python adapters: credit", () => {
  it.skipIf(python === undefined)("test_credit.py passes", () => {
    const r = spawnSync(python!, ["-m", "unittest", "-v", "tests.test_credit"], {
      cwd: adapters,
      encoding: "utf8",
      timeout: 60_000,
    });
    expect(r.stderr).toMatch(/Ran \d+ tests/);
    expect(r.status, r.stderr).toBe(0);
  });
});
