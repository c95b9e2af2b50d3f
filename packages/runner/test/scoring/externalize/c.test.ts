import { spawnSync } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { createDeadline } from "@flakegym/nomad-jobs";
import { execa } from "execa";
import { describe, expect, it } from "vitest";
import { rewriteCTests } from "../../../src/scoring/externalize/c.js";
import { cStringBytes, cTokens } from "../../../src/scoring/externalize/c-tokens.js";
import { externalVerdict } from "../../../src/scoring/externalize/verdict.js";
import { tempDir } from "../../helpers/temp-dir.js";

// The host's check-h rewriter (issue 42) on a test file with the shapes it takes (CHECK_STR against
// string literals with escapes and an inner NUL, CHECK(got == n), checks in loops and ifs), then the
// rewritten file compiled with the catalog's flags (-Wall -Wextra -Werror) and run for real against
// a right and a wrong implementation: the literals are gone from the file, and the scorer's
// comparison of the emissions passes the right one only.

const CHECK_H = `#include <stdio.h>
#include <string.h>
static int check_failures = 0;
#define CHECK(cond) do { if (!(cond)) check_failures++; } while (0)
#define CHECK_STR(got, want) do { if (strcmp((got), (want)) != 0) check_failures++; } while (0)
typedef struct { const char *name; void (*fn)(void); } check_test;
#define T(fn) {#fn, fn}
#define TEST_MAIN(...) int main(void) { static const check_test t_[] = {__VA_ARGS__}; \\
    for (size_t i = 0; i < sizeof t_ / sizeof t_[0]; i++) { int b = check_failures; t_[i].fn(); \\
    printf("%s %s\\n", check_failures == b ? "ok" : "FAIL", t_[i].name); } return 0; }
`;

const TESTS = `#include "check.h"
#include "lib.h"

static void strings(void) {
    CHECK_STR(repr("a\\tb"), "\\"a\\\\tb\\"");
    CHECK_STR(repr("x"), "\\"x\\"\\0 ignored after the NUL");
    CHECK(count("a b c") == 3u);
}

static void looped(void) {
    for (int i = 0; i < 2; i++) CHECK(count("a") == 1);
    if (count("") == 0) CHECK_STR(repr(""), "\\"\\"");
    CHECK(count("a b") == (size_t)2);
    CHECK(count("a b") == 2);
}

static void not_graded(void) { CHECK(count("") == 0); }

TEST_MAIN(T(strings), T(looped), T(not_graded))
`;

const RIGHT = `#include <stdio.h>
#include <string.h>
static const char *repr(const char *s) {
    static char out[64];
    char *p = out;
    *p++ = '"';
    for (; *s; s++) { if (*s == '\\t') { *p++ = '\\\\'; *p++ = 't'; } else *p++ = *s; }
    *p++ = '"';
    *p = 0;
    return out;
}
static size_t count(const char *s) {
    size_t n = 0;
    for (int in = 0; *s; s++) { if (*s != ' ' && !in) n++; in = *s != ' '; }
    return n;
}
`;

const WRONG = RIGHT.replace("*p++ = 't';", "*p++ = 'T';");
const GRADED = ["strings", "looped"];

function ccSkipReason(): string | undefined {
  const r = spawnSync("cc", ["--version"], { stdio: "ignore", timeout: 15_000 });
  return r.error || r.status !== 0 ? "the host has no C compiler `cc` on PATH" : undefined;
}
const noCc = ccSkipReason();
if (noCc) console.log(`skipped the C rewriter's compiled runs: ${noCc}`);

async function runWith(impl: string, rewritten: string): Promise<{ emitted: string; passed: Set<string> }> {
  await using tmp = await tempDir("flakegym-externalize-c-");
  await writeFile(join(tmp.path, "check.h"), CHECK_H);
  await writeFile(join(tmp.path, "lib.h"), impl);
  await writeFile(join(tmp.path, "t.c"), rewritten);
  const emit = join(tmp.path, "emit");
  using deadline = createDeadline({
    timeout: { limit: "compiling and running the rewritten C tests", ms: 60_000 },
  });
  const flags = [
    "-std=c11",
    "-Wall",
    "-Wextra",
    "-Werror",
    "-O1",
    "-I",
    tmp.path,
    "-o",
    join(tmp.path, "t"),
    join(tmp.path, "t.c"),
  ];
  const cc = await execa("cc", flags, { reject: false, cancelSignal: deadline.signal });
  if (cc.exitCode !== 0) throw new Error(`the rewritten file does not compile: ${cc.stderr}`);
  const r = await execa(join(tmp.path, "t"), [], {
    reject: false,
    cancelSignal: deadline.signal,
    env: { FLAKEGYM_EMIT: emit },
  });
  const passed = new Set([...r.stdout.matchAll(/^ok (\S+)$/gm)].map((m) => m[1]!));
  return { emitted: await readFile(emit, "utf8").catch(() => ""), passed };
}

describe("the C tokenizer and string literals (scoring/externalize/c-tokens.ts)", () => {
  it("keeps preprocessor lines and literals whole, drops comments, decodes escapes as C does", () => {
    const kinds = (s: string) => cTokens(s)?.map((t) => `${t.kind}:${t.text}`);
    expect(kinds('#define X(a) \\\n  a\n/* c */ x == "a\\"b" // d\n\'\\n\' L"w"')).toEqual([
      "pp:#define X(a) \\\n  a",
      "name:x",
      "punct:==",
      'str:"a\\"b"',
      "char:'\\n'",
      'str:L"w"',
    ]);
    expect(cTokens('"open')).toBeUndefined();
    expect(cStringBytes('"\\x00\\x7f\\377\\n\\"é"')!.toString("hex")).toBe("007fff0a22c3a9");
    for (const no of ['"\\u00e9"', '"\\x123"', '"\\q"', 'L"w"']) expect(cStringBytes(no)).toBeUndefined();
  });
});

describe("the host's check-h rewriter (scoring/externalize/c.ts)", () => {
  it("takes CHECK_STR against strings and CHECK(got == n); leaves the rest, and checks that may not run", () => {
    const r = rewriteCTests([{ path: "t.c", text: TESTS }], GRADED);
    const text = r.files[0]!.text!;
    for (const gone of ["a\\\\tb", "ignored after", "== 3u"]) expect(text).not.toContain(gone);
    expect(text).toContain('CHECK(count("") == 0); }');
    const per = (t: string) => r.sites.filter((s) => s.test === t).map((s) => [s.expected, s.count]);
    expect(per("strings")).toEqual([
      [{ t: "bytes", v: Buffer.from('"a\\tb"').toString("hex") }, "one"],
      [{ t: "bytes", v: Buffer.from('"x"').toString("hex") }, "one"],
      [{ t: "int", v: "3" }, "one"],
    ]);
    expect(per("looped")).toEqual([
      [{ t: "int", v: "1" }, "any"],
      [{ t: "bytes", v: Buffer.from('""').toString("hex") }, "any"],
      [{ t: "int", v: "2" }, "one"],
    ]);
    expect(r.tests.looped!.kept).toEqual([
      "CHECK whose condition is not `got == <positive integer literal>`",
    ]);
  });

  it.skipIf(noCc !== undefined)(
    "the rewritten file compiles with -Werror and runs: the right implementation holds outside, a wrong one fails there though the harness passes it",
    async () => {
      const r = rewriteCTests([{ path: "t.c", text: TESTS }], GRADED);
      const right = await runWith(RIGHT, r.files[0]!.text!);
      expect(externalVerdict(GRADED, r.sites, right.emitted)).toEqual(new Map());
      expect([...right.passed].sort()).toEqual(["looped", "not_graded", "strings"]);
      const wrong = await runWith(WRONG, r.files[0]!.text!);
      expect(wrong.passed.has("strings")).toBe(true);
      const v = externalVerdict(GRADED, r.sites, wrong.emitted);
      expect([...v.keys()]).toEqual(["strings"]);
      expect(v.get("strings")).toMatch(/failed outside the sandbox/);
    },
    120_000,
  );
});
