/**
 * Harbor's container paths inside a task's tests (`/tests`, `/logs/verifier`), pointed at the
 * workspace's hidden `.harbor/` where flakegym's verifier sees them, and put back on export. Pure.
 */

const normalize = (p: string) => p.replace(/\/+$/, "") || "/";

/** Container paths test.sh names, rewritten to the workspace's hidden `.harbor/` directory. */
export const HARBOR_DIR = ".harbor";

/**
 * test.sh with the container's /tests and /logs/verifier paths pointed at the workspace's hidden
 * `.harbor/` (the eval command sets HARBOR_ROOT). Its WORKDIR paths stay as written: the verifier
 * sees the workspace there (a value such as `grep -q /custom-workdir workdir.txt` is not a path to
 * move). Pure.
 */
export function rewriteTestScript(script: string): string {
  const at = (p: string) =>
    new RegExp(`(^|[\\s"'=(:;|&<>])${p.replaceAll("/", "\\/")}(?=[/\\s"';|&)<>]|$)`, "gm");
  return script
    .replace(at("/logs/verifier"), "$1$$HARBOR_ROOT/logs/verifier")
    .replace(at("/tests"), "$1$$HARBOR_ROOT/tests");
}

/** Harbor's own container paths a test file may name, and where the verifier sees them here. */
const TEST_FILE_PATHS = ["/tests/", "/logs/"] as const;
const TEST_PATH_BEFORE = `(^|[\\s"'(=,\\[])`;

/**
 * A test file other than test.sh with Harbor's `/tests/` and `/logs/` pointed at the workspace's
 * hidden `.harbor/` as the verifier sees it at the task's WORKDIR (bound there), e.g.
 * `Path("/tests/expected.json")` → `Path("/app/.harbor/tests/expected.json")`; undefined when
 * WORKDIR is `/` (no such path). Pure.
 */
export function rewriteTestFile(text: string, workdir: string): string | undefined {
  if (normalize(workdir) === "/") return undefined;
  let s = text;
  for (const p of TEST_FILE_PATHS)
    s = s.replace(new RegExp(`${TEST_PATH_BEFORE}${p}`, "gm"), `$1${normalize(workdir)}/${HARBOR_DIR}${p}`);
  return s;
}

/** A test file as Harbor runs it: what `rewriteTestFile` pointed at the workspace put back. Pure. */
export function restoreTestFile(text: string, workdir: string): string {
  let s = text;
  for (const p of TEST_FILE_PATHS) s = s.replaceAll(`${normalize(workdir)}/${HARBOR_DIR}${p}`, p);
  return s;
}

/** Why a test file other than test.sh cannot run in the workspace (absolute container paths), or undefined. */
export function testFileProblem(path: string, text: string): string | undefined {
  // the WORKDIR is bound at its own path (TaskSpec.workdir), so only Harbor's own mounts are missing
  const paths = ["/tests/", "/logs/"];
  const hit = paths.find((p) => new RegExp(`(^|[\\s"'(=,\\[])${p.replaceAll("/", "\\/")}`, "m").test(text));
  return hit
    ? `tests/${path} names the container path '${hit}', which does not exist in flakegym's workspace (only test.sh is rewritten)`
    : undefined;
}
