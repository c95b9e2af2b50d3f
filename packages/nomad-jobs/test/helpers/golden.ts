import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { expect } from "vitest";

/**
 * Compares `value` with `test/golden/<name>.golden.json`. `UPDATE_GOLDEN=1` rewrites the file
 * (atomically) instead; `npm run golden:update -w @flakegym/nomad-jobs` does that for this package.
 */
export function expectGolden(name: string, value: unknown): void {
  const file = fileURLToPath(new URL(`../golden/${name}.golden.json`, import.meta.url));
  const text = `${JSON.stringify(value, null, 2)}\n`;
  if (process.env.UPDATE_GOLDEN === "1") {
    writeFileSync(`${file}.tmp`, text);
    renameSync(`${file}.tmp`, file);
    return;
  }
  if (!existsSync(file)) {
    throw new Error(
      `golden file ${file} is missing: run UPDATE_GOLDEN=1 npx vitest run --project nomad-jobs`,
    );
  }
  expect(JSON.parse(text), `differs from ${file} (UPDATE_GOLDEN=1 rewrites it)`).toEqual(
    JSON.parse(readFileSync(file, "utf8")),
  );
}
