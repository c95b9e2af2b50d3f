import { describe, expect, it } from "vitest";
import { jobLine, parseAnswer, runHostCommand, shQuote } from "../../src/gc/command-coprocess.js";

describe("the command coprocess's wire (pure)", () => {
  it("quotes any argument for sh, single quotes included", () => {
    expect(shQuote("a b")).toBe("'a b'");
    expect(shQuote("it's; rm -rf /")).toBe("'it'\\''s; rm -rf /'");
    expect(jobLine(7, ["umount", "/x y"], 30)).toContain("'timeout' '30' 'umount' '/x y'");
  });

  it("reads an answer once it is whole, leaving the next for later", () => {
    const whole = Buffer.from("3 1 5\nhello4 0 0\n");
    const a = parseAnswer(whole)!;
    expect([a.id, a.result]).toEqual([3, { exitCode: 1, output: "hello" }]);
    const b = parseAnswer(a.rest)!;
    expect([b.id, b.result, b.rest.length]).toEqual([4, { exitCode: 0, output: "" }, 0]);
    expect(parseAnswer(Buffer.from("5 0 10\nshort"))).toBeUndefined();
    expect(parseAnswer(Buffer.from("5 0"))).toBeUndefined();
    expect(() => parseAnswer(Buffer.from("junk\n"))).toThrow(/unreadable answer head/);
  });
});

describe("runHostCommand (a real sh)", () => {
  it("runs commands in order with their exit codes and output, hostile arguments as plain data", async () => {
    const [ok, fail, hostile, bytes] = await Promise.all([
      // sh's builtins only: the Nix check's replay has sh and coreutils' timeout and sleep, not echo
      runHostCommand(["sh", "-c", ":"], 10),
      runHostCommand(["sh", "-c", "echo oops >&2; exit 3"], 10),
      runHostCommand(["sh", "-c", 'printf "%s" "$1"', "sh", "$(id) `id` ';' \"q\" 'x'"], 10),
      runHostCommand(["sh", "-c", 'printf "%s" "$1"', "sh", "héllo\nwörld"], 10),
    ]);
    expect(ok).toEqual({ exitCode: 0, output: "" });
    expect(fail).toEqual({ exitCode: 3, output: "oops" });
    expect(hostile.output).toBe("$(id) `id` ';' \"q\" 'x'");
    expect(bytes.output).toBe("héllo\nwörld");
  });

  it("runs commands side by side in several sh: most do not wait behind a slow one", async () => {
    let slowDone = false;
    const slow = runHostCommand(["sleep", "1"], 10).then((r) => {
      slowDone = true;
      return r;
    });
    const quick = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        runHostCommand(["sh", "-c", 'printf "%s\\n" "$1"', "sh", String(i)], 10).then((r) => ({
          out: r.output.trim(),
          beforeSlow: !slowDone,
        })),
      ),
    );
    expect(quick.map((r) => r.out)).toEqual(Array.from({ length: 20 }, (_, i) => String(i)));
    // the slow one's own sh may hold a share of them; the other sh answer the rest at once
    expect(quick.filter((r) => r.beforeSlow).length).toBeGreaterThanOrEqual(10);
    expect((await slow).exitCode).toBe(0);
  });

  it("bounds a command by its timeout (timeout's 124), and answers a missing one (127)", async () => {
    const slow = await runHostCommand(["sleep", "5"], 1);
    expect(slow.exitCode).toBe(124);
    expect((await runHostCommand(["no-such-command-flakegym"], 5)).exitCode).toBe(127);
  });
});
