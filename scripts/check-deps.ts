/**
 * Enforces the package dependency direction: runner → {cline-vendor, nomad-jobs, profiles}, never
 * back, and the three leaves depend on no other flakegym package. Reads package.json dependencies
 * and every import in each package's src/ and test/ (including relative paths that climb into
 * another package). Usage: `npm run check-deps [-- <repo-root>]`; exits 1 listing violations.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";

/** Which flakegym packages each package may depend on. */
export const ALLOWED: Readonly<Record<string, readonly string[]>> = {
  profiles: [],
  "nomad-jobs": [],
  "cline-vendor": [],
  runner: ["cline-vendor", "nomad-jobs", "profiles"],
};

/**
 * The runner's folder layers, from the ground up (`packages/runner/src/<folder>`, a top-level file
 * by its name without extension). A folder may import its own layer's files and any folder of a
 * LOWER layer; an import of a folder in its own layer or above is a violation, and so is a folder
 * that is not listed (add it where its imports put it). docs/design/ARCHITECTURE.md explains each layer.
 */
export const RUNNER_LAYERS: readonly (readonly string[])[] = [
  ["errors", "version", "cache-root"],
  ["text", "redact", "doctor", "gc", "nix", "safe-read"],
  ["run-format"],
  ["tasks", "policy", "progress"],
  ["workers", "contract"],
  ["snapshots", "scoring"],
  ["images", "gateway", "emit"],
  ["export"],
  ["rollout"],
  ["eval", "api"],
  ["serve", "view"],
  ["cli"],
  ["index"],
];

/**
 * Folder imports that may break {@link RUNNER_LAYERS} for the length of a move made in steps, each
 * `from -> to`: the check passes over exactly these and fails on any other, and on one of these
 * that no longer occurs (so the list only shrinks). Empty: the runner has no loop and no import up.
 */
export const RUNNER_LAYER_PENDING: readonly string[] = [
  // tasks/harbor-oracle.ts runs a Harbor task's solve.sh in bubblewrap at import; the sandbox's
  // argument builder is to move below tasks (or the oracle above workers) in the next step
  "tasks -> workers",
];

/** One import between two folders of the runner's src. */
export interface FolderImport {
  readonly from: string;
  readonly to: string;
  /** `<file>:<line> imports '<spec>'` */
  readonly where: string;
}

export interface Violation {
  readonly from: string;
  readonly to: string;
  readonly where: string;
}

function walk(dir: string): string[] {
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch {
    return [];
  }
  return entries.flatMap((name) => {
    if (name === "node_modules" || name === "dist") return [];
    const p = join(dir, name);
    return statSync(p).isDirectory() ? walk(p) : /\.(m|c)?[jt]s$/.test(name) ? [p] : [];
  });
}

const IMPORT_RE =
  /(?:import|export)\s[^'"]*?from\s*["']([^"']+)["']|import\s*\(\s*["']([^"']+)["']\s*\)|import\s+["']([^"']+)["']/g;

/** Every violation under `root`; `pending` as in {@link RUNNER_LAYER_PENDING}. */
export function findViolations(root: string, pending: readonly string[] = RUNNER_LAYER_PENDING): Violation[] {
  const out: Violation[] = [];
  const pkgsDir = join(root, "packages");
  for (const from of Object.keys(ALLOWED)) {
    const allowed = new Set([from, ...ALLOWED[from]!]);
    const pkgDir = join(pkgsDir, from);
    const manifest = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8")) as Record<
      string,
      Record<string, string> | undefined
    >;
    for (const field of ["dependencies", "devDependencies", "peerDependencies", "optionalDependencies"]) {
      for (const dep of Object.keys(manifest[field] ?? {})) {
        const m = /^@flakegym\/(.+)$/.exec(dep);
        if (m && !allowed.has(m[1]!))
          out.push({ from, to: m[1]!, where: `packages/${from}/package.json ${field}` });
      }
    }
    for (const file of [...walk(join(pkgDir, "src")), ...walk(join(pkgDir, "test"))]) {
      const text = readFileSync(file, "utf8");
      for (const m of text.matchAll(IMPORT_RE)) {
        const spec = m[1] ?? m[2] ?? m[3]!;
        let to: string | undefined;
        const scoped = /^@flakegym\/([^/]+)/.exec(spec);
        if (scoped) to = scoped[1]!;
        else if (spec.startsWith(".")) {
          const target = relative(pkgsDir, resolve(file, "..", spec));
          if (!target.startsWith("..")) to = target.split(sep)[0];
          else to = "(outside packages/)";
        }
        if (to !== undefined && !allowed.has(to)) {
          const line = text.slice(0, m.index).split("\n").length;
          out.push({ from, to, where: `${relative(root, file)}:${line} imports '${spec}'` });
        }
      }
    }
  }
  return [...out, ...findRunnerLayerViolations(root, pending)];
}

/** The folder (or top-level file, without extension) of `packages/runner/src` a path lies in. */
const folderOf = (src: string, path: string): string => {
  const parts = relative(src, path).split(sep);
  return parts.length === 1 ? parts[0]!.replace(/\.(m|c)?[jt]s$/, "") : parts[0]!;
};

/** Every relative import between two different folders of the runner's src. */
export function runnerFolderImports(root: string): FolderImport[] {
  const src = join(root, "packages", "runner", "src");
  const out: FolderImport[] = [];
  for (const file of walk(src)) {
    const from = folderOf(src, file);
    const text = readFileSync(file, "utf8");
    for (const m of text.matchAll(IMPORT_RE)) {
      const spec = m[1] ?? m[2] ?? m[3]!;
      if (!spec.startsWith(".")) continue;
      const target = resolve(file, "..", spec);
      if (relative(src, target).startsWith("..")) continue;
      const to = folderOf(src, target);
      if (to === from) continue;
      const line = text.slice(0, m.index).split("\n").length;
      out.push({ from, to, where: `${relative(root, file)}:${line} imports '${spec}'` });
    }
  }
  return out;
}

/**
 * Pure: the folder imports that break the layer order — an import into the importer's own layer or
 * above, or from or to a folder the order does not list — except the `from -> to` pairs in
 * `pending`; plus each pending pair that no import uses any more (to be struck from the list).
 */
export function layerViolations(
  imports: readonly FolderImport[],
  layers: readonly (readonly string[])[],
  pending: readonly string[] = [],
): Violation[] {
  const level = new Map(layers.flatMap((names, i) => names.map((n) => [n, i] as const)));
  const out: Violation[] = [];
  const seen = new Set<string>();
  for (const imp of imports) {
    const pair = `${imp.from} -> ${imp.to}`;
    seen.add(pair);
    const [a, b] = [level.get(imp.from), level.get(imp.to)];
    const ok = a !== undefined && b !== undefined && b < a;
    if (ok || pending.includes(pair)) continue;
    const why =
      a === undefined || b === undefined
        ? `${a === undefined ? imp.from : imp.to} is not in RUNNER_LAYERS (add it to the layer its imports put it in)`
        : b === a
          ? "same layer"
          : "an import up the layer order";
    out.push({ from: `runner/${imp.from}`, to: `runner/${imp.to}`, where: `${imp.where}: ${why}` });
  }
  for (const pair of pending.filter((p) => !seen.has(p))) {
    const [from, to] = pair.split(" -> ");
    out.push({
      from: `runner/${from}`,
      to: `runner/${to}`,
      where: "RUNNER_LAYER_PENDING lists it but no import uses it any more: strike it",
    });
  }
  return out;
}

/**
 * Pure: the loops among folders (strongly connected components of more than one folder, each
 * sorted), found whatever the layer order says, so a loop is named as a loop.
 */
export function folderLoops(imports: readonly FolderImport[]): string[][] {
  const next = new Map<string, Set<string>>();
  for (const { from, to } of imports) {
    if (!next.has(from)) next.set(from, new Set());
    next.get(from)!.add(to);
    if (!next.has(to)) next.set(to, new Set());
  }
  // Tarjan's algorithm; the graph is a few dozen folders, so recursion depth is no concern.
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const loops: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of next.get(v)!) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1) loops.push(component.sort());
  };
  for (const v of [...next.keys()].sort()) if (!index.has(v)) visit(v);
  return loops.sort((x, y) => x[0]!.localeCompare(y[0]!));
}

/** The runner's folder imports checked against {@link RUNNER_LAYERS} and for loops. */
export function findRunnerLayerViolations(root: string, pending: readonly string[]): Violation[] {
  const imports = runnerFolderImports(root);
  const skip = new Set(pending);
  const loops = folderLoops(imports.filter((i) => !skip.has(`${i.from} -> ${i.to}`))).map((loop) => ({
    from: `runner/{${loop.join(", ")}}`,
    to: "one another",
    where: "a folder loop: move what they share into a folder below all of them",
  }));
  return [...layerViolations(imports, RUNNER_LAYERS, pending), ...loops];
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const root = resolve(process.argv[2] ?? join(fileURLToPath(import.meta.url), "..", ".."));
  const violations = findViolations(root);
  for (const v of violations) {
    console.error(`dependency direction: ${v.from} → ${v.to} is not allowed (${v.where})`);
  }
  if (violations.length) {
    console.error(
      "allowed: runner → {cline-vendor, nomad-jobs, profiles}; the leaves depend on no flakegym package; inside the runner, a folder imports only lower layers of RUNNER_LAYERS in scripts/check-deps.ts (docs/design/ARCHITECTURE.md)",
    );
    process.exit(1);
  }
  console.log(
    "dependency direction ok: runner → {cline-vendor, nomad-jobs, profiles}; runner folders follow RUNNER_LAYERS",
  );
}
