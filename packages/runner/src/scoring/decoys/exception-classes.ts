import type { Lang } from "./scan.js";

/**
 * Which classes an exception decoy may expect instead of the real one (issue 42). Decoys once drew
 * only six fixed built-ins, so a test expecting a class of the repository's own was always the real
 * copy (red-team oracle, rule "custom exception"). Now a decoy of a repository class expects another
 * class of the repository, one the test file itself names (so it resolves where the real one does),
 * and never one a correct answer would also satisfy: not the real class's ancestor (read from the
 * `class X(Base)` / `class X extends Base` lines of the repository and the hidden files, and the
 * language's built-in hierarchy). A class the repository does not define yet (the change adds it)
 * has unknown bases: then no class another one derives from, nor a built-in a repository exception
 * derives from, is drawn. Pure.
 */

/** Each class's direct bases (last name segment), from every `class` line of `texts`. */
export type ClassBases = ReadonlyMap<string, readonly string[]>;

const PY_CLASS = /^[ \t]*class[ \t]+([A-Za-z_]\w*)[ \t]*\(([^)]*)\)[ \t]*:/gm;
const JS_CLASS = /\bclass[ \t]+([A-Za-z_$][\w$]*)[ \t]+extends[ \t]+([A-Za-z_$][\w$.]*)/g;

const lastSegment = (s: string) => s.trim().split(".").at(-1) ?? "";

/** The classes `texts` define and their bases. Pure. */
export function classBases(texts: readonly string[], lang: Lang): ClassBases {
  const out = new Map<string, string[]>();
  const re = lang === "python" ? PY_CLASS : lang === "js" ? JS_CLASS : undefined;
  if (!re) return out;
  for (const t of texts)
    for (const m of t.matchAll(re)) {
      const bases = m[2]!
        .split(",")
        .filter((b) => !b.includes("="))
        .map(lastSegment)
        .filter(Boolean);
      out.set(m[1]!, [...new Set([...(out.get(m[1]!) ?? []), ...bases])]);
    }
  return out;
}

/** Python's built-in exceptions a decoy may name, each with its parent. */
const PY_PARENT: Readonly<Record<string, string>> = {
  BaseException: "",
  Exception: "BaseException",
  ArithmeticError: "Exception",
  ZeroDivisionError: "ArithmeticError",
  OverflowError: "ArithmeticError",
  AttributeError: "Exception",
  LookupError: "Exception",
  IndexError: "LookupError",
  KeyError: "LookupError",
  RuntimeError: "Exception",
  NotImplementedError: "RuntimeError",
  RecursionError: "RuntimeError",
  TypeError: "Exception",
  ValueError: "Exception",
  UnicodeError: "ValueError",
  OSError: "Exception",
  FileNotFoundError: "OSError",
  PermissionError: "OSError",
  StopIteration: "Exception",
  AssertionError: "Exception",
  ImportError: "Exception",
  ModuleNotFoundError: "ImportError",
  NameError: "Exception",
  EOFError: "Exception",
  Warning: "Exception",
  UserWarning: "Warning",
  DeprecationWarning: "Warning",
};
const JS_PARENT: Readonly<Record<string, string>> = {
  Error: "",
  TypeError: "Error",
  RangeError: "Error",
  SyntaxError: "Error",
  ReferenceError: "Error",
  URIError: "Error",
  EvalError: "Error",
};
/**
 * Built-in classes unrelated to each other and rarely the base of a library's own errors (the
 * decoys' only pool before issue 42); one that is an ancestor of the real class is left out.
 */
const UNRELATED: Partial<Record<Lang, readonly string[]>> = {
  python: ["TypeError", "ZeroDivisionError", "AttributeError", "IndexError", "RuntimeError", "ValueError"],
  js: ["TypeError", "RangeError", "SyntaxError", "ReferenceError", "URIError", "EvalError"],
};
const parents = (lang: Lang) => (lang === "python" ? PY_PARENT : lang === "js" ? JS_PARENT : {});

/** `name` and every ancestor of it the repository and the built-ins tell. Pure. */
export function lineage(name: string, bases: ClassBases, lang: Lang): Set<string> {
  const builtIn = parents(lang);
  const seen = new Set<string>();
  const todo = [lastSegment(name)];
  while (todo.length) {
    const n = todo.pop()!;
    if (!n || seen.has(n)) continue;
    seen.add(n);
    todo.push(...(bases.get(n) ?? []), builtIn[n] ?? "");
  }
  return seen;
}

/** Whether `name` is an exception class: a built-in one, or derived from one (or named like one). */
function isException(name: string, bases: ClassBases, lang: Lang): boolean {
  const builtIn = parents(lang);
  return [...lineage(name, bases, lang)].some(
    (n) => Object.hasOwn(builtIn, n) || /(Error|Exception)$/.test(n),
  );
}

/**
 * Classes a decoy of `original` may expect: the repository's exception classes the test file names
 * (`written`: its words), then built-ins, neither an ancestor of `original` (see the module note),
 * each list in the repository's order. Pure.
 */
export function decoyClasses(
  original: string,
  lang: Lang,
  bases: ClassBases,
  written: ReadonlySet<string>,
): { own: string[]; builtIn: string[] } {
  const name = lastSegment(original);
  const known = bases.has(name) || Object.hasOwn(parents(lang), name);
  const above = lineage(name, bases, lang);
  // a class the change adds: any class another derives from may be its base, and so may a built-in
  // a repository exception derives from
  const baseNames = new Set([...bases.values()].flat());
  // nor a class derived from it: a correct answer raising that subclass would pass its decoy
  const risky = (c: string) =>
    above.has(c) || lineage(c, bases, lang).has(name) || (!known && baseNames.has(c));
  const own = [...bases.keys()].filter(
    (c) =>
      c !== name &&
      written.has(c) &&
      !Object.hasOwn(parents(lang), c) &&
      isException(c, bases, lang) &&
      !risky(c),
  );
  const builtIn = (UNRELATED[lang] ?? []).filter((c) => c !== name && !risky(c));
  return { own, builtIn };
}

/** Whether `name` (its last segment) is one of the language's built-in exception classes. Pure. */
export const isBuiltInClass = (name: string, lang: Lang): boolean =>
  Object.hasOwn(parents(lang), lastSegment(name));
