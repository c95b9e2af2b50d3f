/**
 * `npm run docs:heavy`: the docs test with the blocks marked `heavy` run too (a guide's TRL training
 * step, Python examples that import the frameworks). It prepares the Python they need first: the
 * conformance suite's virtualenv (`tests/conformance/requirements.txt`, `FLAKEGYM_CONFORMANCE_VENV`,
 * reused when the pins did not change), whose bin/ the docs test puts first on PATH.
 */
import { spawnSync } from "node:child_process";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { ensureVenv } from "../tests/conformance/venv.js";

const ROOT = join(import.meta.dirname, "..");
const venvDir = process.env["FLAKEGYM_CONFORMANCE_VENV"] ?? join(tmpdir(), "flakegym-conformance", "venv");
const venv = ensureVenv({
  venv: venvDir,
  requirements: join(ROOT, "tests/conformance/requirements.txt"),
  pythonEnv: "FLAKEGYM_CONFORMANCE_PYTHON",
  python: { atLeast: [3, 10], below: [3, 13] },
  log: (line) => console.error(`docs:heavy: ${line}`),
});
if (!venv.python) {
  console.error(`docs:heavy: no Python for the heavy blocks: ${venv.reason}`);
  process.exit(1);
}
const failed = Object.entries(venv.failed);
if (failed.length) {
  console.error(
    `docs:heavy: pip steps failed, the blocks needing them will fail:\n${failed.map(([s, e]) => `  ${s}: ${e}`).join("\n")}`,
  );
}
const r = spawnSync(
  "npx",
  ["vitest", "run", "--project", "e2e", "tests/e2e/docs.test.ts", ...process.argv.slice(2)],
  {
    cwd: ROOT,
    stdio: "inherit",
    env: { ...process.env, FLAKEGYM_DOCS_HEAVY: "1", FLAKEGYM_DOCS_PYTHON_BIN: dirname(venv.python) },
  },
);
process.exit(r.status ?? 1);
