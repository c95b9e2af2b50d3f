/**
 * Lists the functions longer than a bound (default 100 lines) in TypeScript sources, longest first,
 * as `<lines> <file>:<line> <name>`, and says which carry a stated reason (a comment holding
 * "long:" right above the function). Usage: `npx tsx scripts/long-functions.ts [dir] [min-lines]`
 * (default packages/runner/src 100). A report, not a gate: the issue asks for no function over ~100
 * lines without a stated reason.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

export interface LongFunction {
  readonly lines: number;
  readonly where: string;
  readonly name: string;
  /** A comment right above it says why it is long (`long: …`). */
  readonly reasoned: boolean;
}

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    if (statSync(p).isDirectory()) return n === "node_modules" ? [] : walk(p);
    return /\.(m?ts)$/.test(n) && !n.endsWith(".d.ts") && !n.endsWith(".d.mts") ? [p] : [];
  });
}

function nameOf(n: ts.FunctionLikeDeclaration): string {
  if (n.name) return n.name.getText();
  const p = n.parent;
  if (ts.isVariableDeclaration(p) || ts.isPropertyAssignment(p) || ts.isPropertyDeclaration(p))
    return p.name.getText();
  return "(anonymous)";
}

/** The node whose leading comment documents `n`: the statement declaring it, or `n` itself. */
function holderOf(n: ts.Node): ts.Node {
  const decl = n.parent;
  if (
    decl &&
    ts.isVariableDeclaration(decl) &&
    decl.parent?.parent &&
    ts.isVariableStatement(decl.parent.parent)
  )
    return decl.parent.parent;
  return n;
}

/** The long functions of one source text (pure). */
export function longFunctionsOf(file: string, text: string, min: number): LongFunction[] {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const out: LongFunction[] = [];
  const visit = (n: ts.Node): void => {
    if (
      ts.isFunctionDeclaration(n) ||
      ts.isFunctionExpression(n) ||
      ts.isArrowFunction(n) ||
      ts.isMethodDeclaration(n)
    ) {
      const start = sf.getLineAndCharacterOfPosition(n.getStart()).line;
      const lines = sf.getLineAndCharacterOfPosition(n.end).line - start + 1;
      if (lines > min) {
        const holder = holderOf(n);
        const comments = ts.getLeadingCommentRanges(text, holder.getFullStart()) ?? [];
        const reasoned = comments.some((c) => /\blong:/.test(text.slice(c.pos, c.end)));
        out.push({ lines, where: `${file}:${start + 1}`, name: nameOf(n), reasoned });
      }
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return out;
}

/** The long functions under `dir`, longest first. */
export function longFunctions(dir: string, min = 100): LongFunction[] {
  return walk(dir)
    .flatMap((f) => longFunctionsOf(relative(process.cwd(), f), readFileSync(f, "utf8"), min))
    .sort((a, b) => b.lines - a.lines || a.where.localeCompare(b.where));
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const dir = process.argv[2] ?? "packages/runner/src";
  const min = Number(process.argv[3] ?? 100);
  const found = longFunctions(dir, min);
  for (const f of found)
    console.log(`${f.lines} ${f.where} ${f.name}${f.reasoned ? " (reason stated)" : ""}`);
  console.log(`${found.length} function(s) over ${min} lines under ${dir}`);
}
