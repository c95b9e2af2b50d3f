import { describe, expect, it } from "vitest";
import {
  docsPathsNamed,
  extractBlocks,
  fillPlaceholders,
  namedPaths,
  ownFolders,
  parseMarker,
  relativeLinks,
  shellCommands,
} from "./extract.js";

const md = [
  "# T",
  "```sh",
  "npx flakegym a   # a comment",
  "```",
  "",
  "<!-- docs-test: skip needs Nix -->",
  "",
  "```sh",
  "nix build",
  "```",
  "<!-- docs-test: exit 2 -->",
  "```bash",
  "npx flakegym b --x \\",
  "  --y 1",
  "```",
  "```json",
  '{"a": 1}',
  "```",
  "<!-- docs-test: fixture api -->",
  "  ```ts",
  "  await f();",
  "  ```",
].join("\n");

describe("extractBlocks", () => {
  const blocks = extractBlocks("x.md", md);
  it("returns the shell, TypeScript and Python blocks with their line and marker; data fences are not examples", () => {
    expect(blocks.map((b) => [b.line, b.lang, b.marker])).toEqual([
      [2, "sh", { kind: "run", exit: 0 }],
      [8, "sh", { kind: "skip", reason: "needs Nix" }],
      [12, "sh", { kind: "run", exit: 2 }],
      [20, "ts", { kind: "fixture", name: "api" }],
    ]);
    expect(blocks[3]!.code).toBe("await f();");
  });
  it("an unmarked new block runs (a skip must be written, with its reason)", () => {
    expect(extractBlocks("n.md", "```sh\nnew-command\n```\n")[0]!.marker).toEqual({ kind: "run", exit: 0 });
  });
  it("an exit marker takes one code per command", () => {
    expect(parseMarker("<!-- docs-test: exit 0 1 -->", "x")).toEqual({ kind: "run", exit: 0, exits: [0, 1] });
  });
  it("a heavy marker keeps its reason (run by npm run docs:heavy only)", () => {
    expect(parseMarker("<!-- docs-test: heavy needs TRL -->", "x")).toEqual({
      kind: "heavy",
      reason: "needs TRL",
    });
  });
  it("a malformed marker is an error naming the file and line", () => {
    expect(() => parseMarker("<!-- docs-test: skip -->", "x.md:3")).toThrow(/x\.md:3: bad docs-test marker/);
    expect(() => parseMarker("<!-- docs-test: heavy -->", "x.md:4")).toThrow(/x\.md:4: bad docs-test marker/);
    expect(() => extractBlocks("y.md", "<!-- docs-test: exit two -->\n```sh\na\n```")).toThrow(/y\.md:2/);
  });
});

describe("shellCommands", () => {
  it("joins continuations, drops comments and blank lines, keeps a # inside a word", () => {
    const code =
      "# intro\nexport P=openai:http://h/v1#model   # or --policy\n\nnpx flakegym b --x \\\n  --y 1\n";
    expect(shellCommands({ line: 10, code })).toEqual([
      { line: 12, text: "export P=openai:http://h/v1#model" },
      { line: 14, text: "npx flakegym b --x --y 1" },
    ]);
  });
});

describe("fillPlaceholders", () => {
  it("fills <name> from the fixture values and drops [optional] parts", () => {
    expect(fillPlaceholders("view runs/<id> [--json] [--limit N]", { id: "r1" }, "x.md:1")).toBe(
      "view runs/r1",
    );
  });
  it("an unknown placeholder is an error naming it, the known ones and what to do", () => {
    expect(() => fillPlaceholders("show <task>", { id: "r1" }, "x.md:4")).toThrow(
      /x\.md:4: no value for the placeholder <task> \(known: <id>\).*skip reason/,
    );
  });
  it("leaves shell redirections alone", () => {
    expect(fillPlaceholders("./result > out.tar", {}, "x")).toBe("./result > out.tar");
  });
});

describe("namedPaths and ownFolders: which named paths must exist here", () => {
  it("finds inline paths outside fences and tells this repository's folders from other projects'", () => {
    const md = "See `scoring/diff.ts` and `atroposlib/envs/base.py`.\n```sh\ncat `nope/x.ts`\n```\n";
    expect(namedPaths(md)).toEqual(["scoring/diff.ts", "atroposlib/envs/base.py"]);
    const own = ownFolders(["packages/runner/src/scoring/reward.ts", "scripts/run-tests", "tests/e2e/a.ts"]);
    expect([...own].sort()).toEqual(["packages", "scoring", "scripts"]);
  });
});

describe("relativeLinks / docsPathsNamed", () => {
  it("keeps relative targets without anchors, drops URLs, anchors and fenced code", () => {
    const md =
      "[a](guides/x.md#y) [b](https://e.org/z.md) [c](#top) [d](../design/p.md)\n```sh\n[e](f.md)\n```";
    expect(relativeLinks(md)).toEqual(["guides/x.md", "../design/p.md"]);
  });
  it("finds docs/… paths named in code and prose, not another project's", () => {
    expect(docsPathsNamed("see docs/reference/tasks.md#x; `docs/guides/a.md`; swebench/docs/q.md")).toEqual([
      "docs/reference/tasks.md",
      "docs/guides/a.md",
    ]);
  });
});
