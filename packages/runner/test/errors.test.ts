import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { ERROR_CODES, type ErrorCode, FlakegymError, HttpError, UsageError } from "../src/errors.js";

const SRC = fileURLToPath(new URL("../src", import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? sources(p) : /\.(m?ts|mjs)$/.test(name) ? [p] : [];
  });
}

describe("error codes: one typed union", () => {
  it("an unknown code is a type error where the error is made and where a code is compared", () => {
    // @ts-expect-error E_NOT_A_CODE is not an ErrorCode (npm run typecheck fails if this compiles)
    const made = new FlakegymError("E_NOT_A_CODE", "a misspelt code");
    // @ts-expect-error the same for HttpError
    const answered = new HttpError(400, "E_BAD_REQUST", "a misspelt code");
    // @ts-expect-error and for UsageError's code
    const usage = new UsageError("bad flag", undefined, "E_USGE");
    const known: ErrorCode = "E_USAGE";
    // @ts-expect-error a comparison with a code that does not exist has no overlap
    const compared = made.code === "E_NOT_A_CODE";
    expect([made.code, answered.code, usage.code, known, compared]).toEqual([
      "E_NOT_A_CODE",
      "E_BAD_REQUST",
      "E_USGE",
      "E_USAGE",
      true,
    ]);
  });

  it("every code is listed once, is spelt E_UPPER_CASE and is raised somewhere in the runner", () => {
    expect(new Set(ERROR_CODES).size).toBe(ERROR_CODES.length);
    for (const code of ERROR_CODES) expect(code).toMatch(/^E_[A-Z0-9]+(_[A-Z0-9]+)*$/);
    const text = sources(SRC)
      .filter((f) => !f.endsWith(`${"/"}errors.ts`))
      .map((f) => readFileSync(f, "utf8"))
      .join("\n");
    const unused = ERROR_CODES.filter((c) => !text.includes(`"${c}"`));
    expect(unused, "codes no source raises: strike them from ERROR_CODES").toEqual([]);
  });
});
