import { spawnSync } from "node:child_process";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { execa } from "execa";
import { tempDir } from "../../helpers/temp-dir.js";

const hostGo = () => process.env.FLAKEGYM_HOST_GO || "go";

/** Why the host's Go cannot run the rewriter here (undefined when it can); printed once per file. */
export function goSkipReason(): string | undefined {
  const r = spawnSync(hostGo(), ["version"], { stdio: "ignore", timeout: 15_000 });
  const why =
    r.error || r.status !== 0
      ? `the host's Go (${hostGo()}) is not on PATH; install Go 1.21+ or set FLAKEGYM_HOST_GO`
      : undefined;
  if (why) console.log(`skipped the Go rewriter's runs: ${why}`);
  return why;
}

/**
 * Writes `files` as module `calc` into a fresh directory and runs `go test -json` there with the
 * emission channel (`FLAKEGYM_EMIT`) pointed at a file: what the rewritten tests printed to the
 * host, and the tests go test passed.
 */
export async function goTestEmitting(
  files: Readonly<Record<string, string | Uint8Array>>,
): Promise<{ emitted: string; passed: Set<string> }> {
  await using tmp = await tempDir("flakegym-externalize-go-");
  const dir = tmp.path;
  await writeFile(join(dir, "go.mod"), "module calc\n\ngo 1.16\n");
  for (const [path, content] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), content);
  }
  const emit = join(dir, "emit");
  const r = await execa(hostGo(), ["test", "-json", "."], {
    cwd: dir,
    reject: false,
    env: { FLAKEGYM_EMIT: emit, GOFLAGS: "", GOTOOLCHAIN: "local" },
  });
  const passed = new Set<string>();
  for (const line of r.stdout.split("\n")) {
    if (!line.startsWith("{")) continue;
    const j = JSON.parse(line) as { Action?: string; Test?: string };
    if (j.Action === "pass" && j.Test) passed.add(j.Test);
  }
  return { emitted: await readFile(emit, "utf8").catch(() => ""), passed };
}

/**
 * go-humanize's shape of a helper that asserts (`testList.validate` in common_test.go): a table
 * type's method compares each row's got and exp, in a test file that names no graded test.
 */
export const GO_HELPER_FILE = `package calc

import "testing"

type sizeList []struct {
	name, got, exp string
}

func (l sizeList) validate(t *testing.T) {
	for _, c := range l {
		if c.got != c.exp {
			t.Errorf("On %v, expected %q, got %q", c.name, c.exp, c.got)
		}
	}
}
`;
