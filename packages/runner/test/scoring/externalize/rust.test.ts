import { spawnSync } from "node:child_process";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { createDeadline } from "@flakegym/nomad-jobs";
import { execa } from "execa";
import { describe, expect, it } from "vitest";
import { rewriteRustTests } from "../../../src/scoring/externalize/rust.js";
import { rustDebug } from "../../../src/scoring/externalize/rust-literal.js";
import { rustTokens } from "../../../src/scoring/externalize/rust-tokens.js";
import { externalVerdict } from "../../../src/scoring/externalize/verdict.js";
import { tempDir } from "../../helpers/temp-dir.js";

// The host's libtest rewriter (issue 42) on an integration test file with the shapes it takes
// (assert_eq! against literals, in loops, with messages, after a return), then the rewritten file
// run for real by `cargo test` against a right and a wrong implementation: the literals are gone
// from the file, and the scorer's comparison of the emissions passes the right one only.

const TESTS = `#![allow(clippy::all)]
use calc::{count, half, name, rows};

#[test]
fn literals() {
    assert_eq!(half(9.0), 4.5);
    assert_eq!(name(2), Some("two"), "name of {}", 2);
    assert_eq!(rows(3), vec!["█  ", "██ ", "███"]);
    assert_eq!(count("a b c"), 3);
}

#[test]
fn looped_and_computed() {
    for n in [1, 2] {
        assert_eq!(count(&"x ".repeat(n)), n);
    }
    assert_eq!(name(1), name(1));
    assert_eq!(name(9), None);
}

#[test]
fn early_return() -> Result<(), String> {
    assert_eq!(count("a"), 1);
    Ok(())
}

#[test]
fn not_graded() {
    assert_eq!(count(""), 0);
}
`;

const RIGHT = `pub fn half(x: f64) -> f64 { x / 2.0 }
pub fn name(n: u32) -> Option<&'static str> { match n { 1 => Some("one"), 2 => Some("two"), _ => None } }
pub fn count(s: &str) -> usize { s.split_whitespace().count() }
pub fn rows(n: usize) -> Vec<String> { (1..=n).map(|i| format!("{:<w$}", "█".repeat(i), w = n)).collect() }
`;

const WRONG = RIGHT.replace('2 => Some("two")', '2 => Some("too")').replace('"█".repeat(i)', '"▄".repeat(i)');

const GRADED = ["literals", "looped_and_computed", "early_return"];

function cargoSkipReason(): string | undefined {
  const r = spawnSync("cargo", ["--version"], { stdio: "ignore", timeout: 15_000 });
  return r.error || r.status !== 0
    ? "the host has no cargo on PATH (install Rust to run the rewritten file)"
    : undefined;
}
const noCargo = cargoSkipReason();
if (noCargo) console.log(`skipped the Rust rewriter's cargo runs: ${noCargo}`);

async function runWith(impl: string, rewritten: string): Promise<{ emitted: string; passed: Set<string> }> {
  await using tmp = await tempDir("flakegym-externalize-rust-");
  await writeFile(
    join(tmp.path, "Cargo.toml"),
    '[package]\nname = "calc"\nversion = "0.1.0"\nedition = "2021"\n',
  );
  await mkdir(join(tmp.path, "src"));
  await mkdir(join(tmp.path, "tests"));
  await writeFile(join(tmp.path, "src", "lib.rs"), impl);
  await writeFile(join(tmp.path, "tests", "calc.rs"), rewritten);
  const emit = join(tmp.path, "emit");
  using deadline = createDeadline({ timeout: { limit: "cargo test of the rewritten file", ms: 240_000 } });
  const r = await execa("cargo", ["test", "--offline", "--test", "calc", "--", "--test-threads=2"], {
    cwd: tmp.path,
    reject: false,
    cancelSignal: deadline.signal,
    env: { FLAKEGYM_EMIT: emit, CARGO_TARGET_DIR: join(tmp.path, "target") },
  });
  const passed = new Set([...r.stdout.matchAll(/^test (\S+) \.\.\. ok$/gm)].map((m) => m[1]!));
  if (!passed.size && r.exitCode !== 0 && !r.stdout.includes("FAILED"))
    throw new Error(r.stderr.slice(-2000));
  return { emitted: await readFile(emit, "utf8").catch(() => ""), passed };
}

describe("the Rust tokenizer and literals (scoring/externalize/rust-tokens.ts, rust-literal.ts)", () => {
  it("keeps raw strings, chars and lifetimes whole; drops nested comments; refuses what does not end", () => {
    const kinds = (s: string) => rustTokens(s)?.map((t) => `${t.kind}:${t.text}`);
    expect(kinds(`r#"a "quoted" )"# 'x' '\\n' 'a /* a /* b */ c */ b"(" 1_000u8`)).toEqual([
      'rawstr:r#"a "quoted" )"#',
      "char:'x'",
      "char:'\\n'",
      "lifetime:'a",
      'rawstr:b"("',
      "num:1_000u8",
    ]);
    for (const bad of ['"open', "/* open /* */", 'r#"open"']) expect(rustTokens(bad)).toBeUndefined();
  });

  it("renders literals as Debug does, and refuses what Debug may render otherwise", () => {
    const debug = (s: string) => {
      const t = rustTokens(s)!;
      return rustDebug(t, 0, t.length);
    };
    expect(debug('vec![Some("a\\"b"), None]')).toBe('[Some("a\\"b"), None]');
    expect(debug("&[1_000u32, -2]")).toBe("[1000, -2]");
    expect(debug("(4.0, 0.25, true)")).toBe("(4.0, 0.25, true)");
    expect(debug("(7,)")).toBe("(7,)");
    expect(debug("Ok('x')")).toBe("Ok('x')");
    // exponent forms, too many digits (f32 renders apart), escapes Debug rewrites, paths, calls
    for (const no of ["1e20", "0.1234567", '"\\u{1F600}"', '"é"', "Orientation::Vertical", "f(1)", 'r"x"'])
      expect(debug(no)).toBeUndefined();
  });
});

describe("the host's libtest rewriter (scoring/externalize/rust.ts)", () => {
  it("takes assert_eq! against literals; leaves computed ones, loops alone and tests with a return type", () => {
    const r = rewriteRustTests([{ path: "tests/calc.rs", text: TESTS }], GRADED);
    const text = r.files[0]!.text!;
    for (const gone of ["4.5", '"two"', "███", ", 3)"]) expect(text).not.toContain(gone);
    expect(text.startsWith("#![allow(clippy::all)]")).toBe(true);
    expect(text).toContain('assert_eq!(count(""), 0);');
    const per = (t: string) => r.sites.filter((s) => s.test === t).map((s) => [s.expected, s.count]);
    expect(per("literals")).toEqual([
      [{ t: "str", v: "4.5" }, "one"],
      [{ t: "str", v: 'Some("two")' }, "one"],
      [{ t: "str", v: '["█  ", "██ ", "███"]' }, "one"],
      [{ t: "str", v: "3" }, "one"],
    ]);
    expect(per("looped_and_computed")).toEqual([[{ t: "str", v: "None" }, "one"]]);
    expect(r.tests.looped_and_computed!.kept).toEqual(
      Array(2).fill("assert_eq! whose expected side is not a literal"),
    );
    expect(r.tests.early_return).toBeUndefined();
    // a file outside tests/ (its test ids carry module paths) stays
    expect(rewriteRustTests([{ path: "src/lib.rs", text: TESTS }], GRADED).files[0]!.text).toBeNull();
  });

  it.skipIf(noCargo !== undefined)(
    "the rewritten file runs: the right implementation holds outside the sandbox, a wrong one fails there though cargo passes it",
    async () => {
      const r = rewriteRustTests([{ path: "tests/calc.rs", text: TESTS }], GRADED);
      const rewritten = r.files[0]!.text!;
      const right = await runWith(RIGHT, rewritten);
      expect(externalVerdict(GRADED, r.sites, right.emitted)).toEqual(new Map());
      expect([...right.passed].sort()).toEqual([...GRADED, "not_graded"].sort());
      const wrong = await runWith(WRONG, rewritten);
      expect(wrong.passed.has("literals")).toBe(true);
      const v = externalVerdict(GRADED, r.sites, wrong.emitted);
      expect([...v.keys()]).toEqual(["literals"]);
      expect(v.get("literals")).toMatch(/failed outside the sandbox/);
    },
    480_000,
  );
});
