import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { guardHidden } from "../../../src/scoring/decoys/guard-hidden.js";
import { tempDir } from "../../helpers/temp-dir.js";
import { GO_HELPER_FILE as COMMON, goSkipReason } from "../externalize/go-emit.js";

// go-humanize's shape: the test patch touches one file whose graded test calls a helper of another
// test file of the package (`testList.validate` in common_test.go, which names no graded test). The
// guard reads the package's other test files, so the helper is rewritten with its callers.

const GRADED_FILE = `package calc

import "testing"

func TestSizes(t *testing.T) {
	sizeList{{"1 KiB", Size(1024), "1 KiB"}}.validate(t)
}
`;

const noGo = goSkipReason();

describe.skipIf(noGo !== undefined)("the guard over a Go package", () => {
  it("reads the package's other test files: a helper there is rewritten with the graded test calling it", async () => {
    await using ws = await tempDir("flakegym-guard-go-pkg-");
    await mkdir(join(ws.path, "other"), { recursive: true });
    await writeFile(join(ws.path, "go.mod"), "module calc\n\ngo 1.16\n");
    await writeFile(join(ws.path, "common_test.go"), COMMON);
    // another package's test file naming no graded test stays out
    await writeFile(join(ws.path, "other", "x_test.go"), "package other\n");
    const installed = [{ path: "calc_test.go", content: Buffer.from(GRADED_FILE), executable: false }];
    const g = await guardHidden(
      { results: "gotest", failToPass: ["TestSizes"], passToPass: [] },
      installed,
      ws.path,
    );
    expect(g.report.externalized).toEqual(["TestSizes"]);
    const byPath = new Map(g.files.map((f) => [f.path, f.content.toString()]));
    expect([...byPath.keys()].sort()).toEqual(["calc_test.go", "common_test.go"]);
    expect(byPath.get("calc_test.go")).not.toContain('"1 KiB"');
    expect(byPath.get("common_test.go")).toContain("_fgEmit");
  }, 120_000);
});
