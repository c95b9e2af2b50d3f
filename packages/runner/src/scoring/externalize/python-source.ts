/**
 * The host half of externalized Python assertions (scoring/externalize), kept as text: the
 * REWRITER runs on the host over the trusted hidden test files (never the workspace) with
 * Python's own parser, and renders each expected value with the EMITTER's code
 * (python-emitter.ts), so both sides agree on the rendering. Its pytester, parametrized-case,
 * helper and pure-builtin parts are python-pytester.ts, python-params.ts, python-helpers.ts and
 * python-pure.ts.
 */
import { PYTHON_HELPERS } from "./python-helpers.js";
import { PYTHON_PARAMS } from "./python-params.js";
import { PYTHON_PURE } from "./python-pure.js";
import { PYTHON_PYTESTER } from "./python-pytester.js";

/** The rewriter's reading of literals, assertions and a test's body. */
const CORE = String.raw`
import ast, json, secrets, sys

EMITTER = sys.argv[1] if len(sys.argv) > 1 else ""
ns = {}
exec(EMITTER, ns)
canon = ns["_fg_canon"]

UNITTEST_EQ = {"assertEqual", "assertEquals", "assertListEqual", "assertTupleEqual", "assertDictEqual",
               "assertSetEqual", "assertMultiLineEqual"}
STR_METHODS = {"format", "join", "upper", "lower", "strip", "encode", "decode", "replace"}
BRANCHES = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.Try, ast.ExceptHandler, ast.IfExp)
if hasattr(ast, "Match"):
    BRANCHES = BRANCHES + (ast.Match,)
if hasattr(ast, "TryStar"):
    BRANCHES = BRANCHES + (ast.TryStar,)
MAX_EXPECTED = 64 * 1024


class NotConstant(Exception):
    pass


# names of the test function being read bound once to literals (name -> value node), usable as
# an expected side: "expected = [1, 2]" then "assert got == expected"
LOCAL = {}


def check_const(node):
    pure = pure_funcs(node)
    for n in ast.walk(node):
        if isinstance(n, ast.Call) and id(n.func) in pure or id(n) in pure:
            continue
        if isinstance(n, (ast.Constant, ast.List, ast.Tuple, ast.Set, ast.Dict, ast.Load, ast.keyword,
                          ast.UnaryOp, ast.USub, ast.UAdd, ast.BinOp, ast.Add, ast.Sub, ast.Mult,
                          ast.Div, ast.FloorDiv, ast.Mod)):
            continue
        if isinstance(n, ast.Pow):
            continue
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and \
                isinstance(n.func.value, ast.Constant) and isinstance(n.func.value.value, (str, bytes)) and \
                n.func.attr in STR_METHODS:
            continue
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Constant):
            continue
        if isinstance(n, ast.Name) and n.id in LOCAL:
            continue
        raise NotConstant(type(n).__name__)
    for n in ast.walk(node):
        if isinstance(n, ast.BinOp) and isinstance(n.op, (ast.Pow, ast.Mult)):
            r = n.right
            if not (isinstance(r, ast.Constant) and isinstance(r.value, int) and abs(r.value) <= 4096):
                raise NotConstant("large power or repetition")


def raw_value(node):
    """The Python value of an expression made of literals only (NotConstant otherwise)."""
    check_const(node)
    expr = ast.Expression(body=node)
    ast.fix_missing_locations(expr)
    try:
        names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and n.id in LOCAL}
        env = {k: eval(compile(ast.fix_missing_locations(ast.Expression(body=LOCAL[k])), "<expected>", "eval"), pure_env(), {}) for k in names}
        return eval(compile(expr, "<expected>", "eval"), pure_env(), env)
    except Exception as e:
        raise NotConstant("does not evaluate: " + type(e).__name__)


def const_value(node):
    """The rendering of an expression made of literals only (NotConstant otherwise)."""
    c = canon(raw_value(node))
    if len(json.dumps(c)) > MAX_EXPECTED:
        raise NotConstant("expected value too large")
    return c


def is_const(node):
    try:
        const_value(node)
        return True
    except NotConstant:
        return False


def call_name(node):
    f = node.func
    if isinstance(f, ast.Attribute):
        base = f.value.id if isinstance(f.value, ast.Name) else None
        return base, f.attr
    if isinstance(f, ast.Name):
        return None, f.id
    return None, None


def approx_of(node):
    """(expected canon, opts) when node is pytest.approx(<literals>, rel=, abs=)."""
    if not isinstance(node, ast.Call):
        return None
    base, name = call_name(node)
    if name != "approx" or base not in (None, "pytest") or len(node.args) != 1:
        return None
    opts = {}
    for k in node.keywords:
        if k.arg not in ("rel", "abs"):
            return None
        v = const_value(k.value)
        opts[k.arg] = v
    return const_value(node.args[0]), opts


def exc_names(node):
    items = node.elts if isinstance(node, ast.Tuple) else [node]
    out = []
    for it in items:
        parts = []
        n = it
        while isinstance(n, ast.Attribute):
            parts.append(n.attr)
            n = n.value
        if not isinstance(n, ast.Name):
            return None
        parts.append(n.id)
        if not parts[0][:1].isupper():
            # a variable (a parametrized exception, an exc_cls), not a class's own name: the
            # class is known only at run time, so the check stays
            return None
        if len(parts) > 1 and parts[0] == "Exception" and parts[-1] != "builtins":
            # an alias attribute (pytest.fail.Exception is _pytest.outcomes.Failed, a
            # BaseException): the class it names is known only at run time, so it stays
            return None
        out.append(".".join(reversed(parts)))
    return out or None


class Site:
    def __init__(self, kind, expected, computed, span, opts=None, exp=None, wrap=None):
        self.kind, self.expected, self.computed, self.span, self.opts = kind, expected, computed, span, opts or {}
        self.exp = exp
        self.pair = None
        # (emitter function, extra arguments): what the computed side is emitted through
        self.wrap = wrap
        # the case ids it runs in and those it does not (one side of an if on the parameters)
        self.cases = None
        # per case id (in the rewritten file): the expected value of a parametrized expected side
        self.bycase = None


def pair(site, want):
    """A site whose expected side the test computes: both sides emitted, compared outside."""
    site.pair = want
    return site


def truth_site(stmt, test, want=True):
    """assert x / assert not x (x not a comparison): x's truth is emitted, the polarity stays on the host."""
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, want = test.operand, not want
    if isinstance(test, ast.Compare) or is_const(test):
        return None
    return Site("truth", canon(want), test, stmt, None, None, ("_fg_truth", ""))


def compare_site(stmt, test):
    t = truth_site(stmt, test)
    if t:
        return t, None
    if not isinstance(test, ast.Compare) or len(test.ops) != 1:
        return None, "not a single comparison with a literal expected value"
    op, left, right = test.ops[0], test.left, test.comparators[0]
    if isinstance(op, (ast.Eq, ast.NotEq)):
        for comp, exp in ((left, right), (right, left)):
            ap = approx_of(exp) if isinstance(op, ast.Eq) else None
            if ap:
                return Site("approx", ap[0], comp, stmt, ap[1], exp), None
            if is_const(exp) and not is_const(comp):
                return Site("eq" if isinstance(op, ast.Eq) else "ne", const_value(exp), comp, stmt, None, exp), None
        return pair(Site("eq" if isinstance(op, ast.Eq) else "ne", None, left, stmt), right), None
    if isinstance(op, (ast.In, ast.NotIn)):
        if is_const(left) and not is_const(right):
            return Site("in" if isinstance(op, ast.In) else "notin", const_value(left), right, stmt, None, left), None
        return pair(Site("in" if isinstance(op, ast.In) else "notin", None, right, stmt), left), None
    if isinstance(op, (ast.Is, ast.IsNot)) and isinstance(right, ast.Constant) and right.value in (None, True, False):
        return Site("is" if isinstance(op, ast.Is) else "isnot", canon(right.value), left, stmt), None
    return None, "a comparison decoys or externalization do not handle (" + type(op).__name__ + ")"


def unittest_site(stmt, call):
    base, name = call_name(call)
    if base != "self" or call.keywords and name not in ("assertAlmostEqual",):
        pass
    args = call.args
    if name in UNITTEST_EQ or name in ("assertNotEqual", "assertSequenceEqual", "assertCountEqual"):
        if len(args) < 2:
            return None, None
        kind = {"assertNotEqual": "ne", "assertSequenceEqual": "seqeq", "assertCountEqual": "counteq"}.get(name, "eq")
        for comp, exp in ((args[0], args[1]), (args[1], args[0])):
            if is_const(exp) and not is_const(comp):
                return Site(kind, const_value(exp), comp, stmt, None, exp), None
        return pair(Site(kind, None, args[0], stmt), args[1]), None
    if name == "assertAlmostEqual" and len(args) >= 2:
        opts = {"places": {"t": "int", "v": "7"}}
        if len(args) >= 3:
            opts["places"] = const_value(args[2])
        for k in call.keywords:
            if k.arg in ("places", "delta"):
                opts = {k.arg: const_value(k.value)}
        for comp, exp in ((args[0], args[1]), (args[1], args[0])):
            if is_const(exp) and not is_const(comp):
                return Site("almost", const_value(exp), comp, stmt, opts, exp), None
        return None, "its expected side is computed (not made of literals)"
    if name in ("assertIn", "assertNotIn") and len(args) >= 2 and is_const(args[0]) and not is_const(args[1]):
        return Site("in" if name == "assertIn" else "notin", const_value(args[0]), args[1], stmt, None, args[0]), None
    if name in ("assertIn", "assertNotIn") and len(args) >= 2:
        return pair(Site("in" if name == "assertIn" else "notin", None, args[1], stmt), args[0]), None
    if name in ("assertTrue", "assertFalse") and len(args) >= 1:
        t = truth_site(stmt, args[0], name == "assertTrue")
        return (t, None) if t else (None, "self." + name + " of a comparison or a literal")
    if name in ("assertIsNone", "assertIsNotNone") and len(args) >= 1:
        return Site("is" if name == "assertIsNone" else "isnot", canon(None), args[0], stmt), None
    return None, None



def raises_site(item):
    call = item.context_expr
    if not isinstance(call, ast.Call):
        return None
    base, name = call_name(call)
    if (name == "raises" and base in ("pytest", None)) or (base == "self" and name == "assertRaises"):
        if len(call.args) != 1:
            return None
        match = None
        exp = None
        for k in call.keywords:
            if k.arg != "match":
                return None
            exp = k.value
            if not is_const(k.value):
                s = Site("raises", {"names": exc_names(call.args[0]) or [], "match": None}, None, call)
                return pair(s, k.value) if s.expected["names"] else None
            match = const_value(k.value)
    elif base == "self" and name in ("assertRaisesRegex", "assertRaisesRegexp"):
        if len(call.args) != 2 or call.keywords:
            return None
        match = const_value(call.args[1])
        exp = call.args[1]
    else:
        return None
    names = exc_names(call.args[0])
    if not names:
        return None
    return Site("raises", {"names": names, "match": match}, None, call, None, exp)


def test_functions(tree, path):
    out = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            out.append((path + "::" + node.name, node))
        elif isinstance(node, ast.ClassDef):
            for m in node.body:
                if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) and m.name.startswith("test"):
                    out.append((path + "::" + node.name + "::" + m.name, m))
    return out


def walk_body(fn):
    """Every node of fn's body with its parents (nested functions, lambdas and classes left out)."""
    stack = [(s, ()) for s in reversed(fn.body)]
    while stack:
        node, parents = stack.pop()
        yield node, parents
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        for child in reversed(list(ast.iter_child_nodes(node))):
            stack.append((child, parents + (node,)))



def conditional(parents, raises_withs):
    return any(isinstance(p, BRANCHES) or id(p) in raises_withs for p in parents)


def info_only_value(fn, item):
    """Whether the name a raises block binds (with ... as e) is read only as e.value / e.type: the
    stand-in that replaces pytest.raises has those two, not ExceptionInfo's str, match, traceback."""
    v = item.optional_vars
    if v is None:
        return True
    if not isinstance(v, ast.Name):
        return False
    ok = set()
    for n in ast.walk(fn):
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == v.id and n.attr in ("value", "type"):
            ok.add(id(n.value))
    return all(id(n) in ok or n is v for n in ast.walk(fn) if isinstance(n, ast.Name) and n.id == v.id)


def placed(s, fn, parents, node, raises_withs, cases):
    """Site s with how often it must be emitted, or None where it runs on one side of a branch
    whose side per case the host cannot evaluate (kept as written)."""
    if one_sided(parents):
        b = branch_cases(fn, parents, node, cases)
        if b is None:
            return None
        s.cases = {"run": b[0], "skip": b[1]}
        parents = b[2]
    s.count = "any" if conditional(parents, raises_withs) else "one"
    return s


def sites_of(fn):
    sites, kept = [], []
    raises_withs = set()
    cases = param_cases(fn)
    for node, parents in walk_body(fn):
        if isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                s = raises_site(item)
                if s and not info_only_value(fn, item):
                    kept.append("its pytest.raises result is read beyond .value and .type")
                    s = None
                if s and not placed(s, fn, parents, node, raises_withs, cases):
                    kept.append(ONE_SIDED_WHY)
                    s = None
                if s:
                    sites.append(s)
                    raises_withs.add(id(node))
        elif isinstance(node, ast.Assert):
            s, why = compare_site(node, node.test)
            if s and not placed(s, fn, parents, node, raises_withs, cases):
                s, why = None, ONE_SIDED_WHY
            if s:
                sites.append(s)
            else:
                kept.append(why)
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            base, name = call_name(node.value)
            if isinstance(node.value.func, ast.Attribute) and name in PYTESTER:
                s, why = pytester_site(node, node.value)
                if s and not placed(s, fn, parents, node, raises_withs, cases):
                    s, why = None, ONE_SIDED_WHY
                if s:
                    sites.append(s)
                else:
                    kept.append(why)
            elif base == "self" and name and name.startswith("assert"):
                try:
                    s, why = unittest_site(node, node.value)
                except NotConstant as e:
                    s, why = None, str(e)
                if s and not placed(s, fn, parents, node, raises_withs, cases):
                    s, why = None, ONE_SIDED_WHY
                if s:
                    sites.append(s)
                else:
                    kept.append(why or ("self." + name + " has no literal expected value"))
    return sites, kept


def const_locals(fn):
    """Names bound once in fn, at its top level, to an expression of literals: name -> Assign."""
    stores = {}
    for n in ast.walk(fn):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            stores[n.id] = stores.get(n.id, 0) + 1
    args = {a.arg for a in ast.walk(fn.args) if isinstance(a, ast.arg)}
    out = {}
    for st in fn.body:
        if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
            name = st.targets[0].id
            if stores.get(name) == 1 and name not in args and is_const(st.value):
                out[name] = st
    return out


def local_sites(fn):
    """sites_of(fn) with literal-bound names as expected sides, where every use of such a name is
    one (its assignment then loses the value: nothing in the file spells it)."""
    LOCAL.clear()
    cands = const_locals(fn)
    loads = {}
    for n in ast.walk(fn):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in cands:
            loads.setdefault(n.id, set()).add(id(n))
    for _ in range(3):
        LOCAL.clear()
        LOCAL.update({k: a.value for k, a in cands.items()})
        found, kept = sites_of(fn)
        used = {}
        for s in found:
            for n in ast.walk(s.exp) if s.exp is not None else ():
                if isinstance(n, ast.Name) and n.id in cands:
                    used.setdefault(n.id, set()).add(id(n))
        bad = [k for k in cands if k in used and used[k] != loads.get(k, set())]
        if not bad:
            LOCAL.clear()
            return found, kept, [cands[k] for k in used]
        for k in bad:
            del cands[k]
    LOCAL.clear()
    found, kept = sites_of(fn)
    return found, kept, []

`;

/** The rewrite of a file and the entry point (run last: every part is defined by then). */
const MAIN = String.raw`
def line_offsets(data):
    offs = [0]
    for i, b in enumerate(data):
        if b == 10:
            offs.append(i + 1)
    return offs


def span(offs, node):
    return offs[node.lineno - 1] + node.col_offset, offs[node.end_lineno - 1] + node.end_col_offset


def prelude_at(tree, offs):
    """Where the emitter goes: after the module docstring and __future__ imports."""
    at = 0
    for i, node in enumerate(tree.body):
        doc = i == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
        fut = isinstance(node, ast.ImportFrom) and node.module == "__future__"
        if not (doc or fut):
            break
        at = offs[node.end_lineno] if node.end_lineno < len(offs) else None
        if at is None:
            return -1
    return at


# pytest's node id of the running test, taken when its setup begins (before the test's code runs)
NODE_FIXTURE = """
try:
    import pytest as _fg_pytest

    @_fg_pytest.fixture(autouse=True)
    def _fg_current_node(request):
        _fg_cur[0] = request.node.nodeid
        yield
        _fg_cur[0] = None
except ImportError:
    pass
"""


def site_edit(s, sid, offs, data):
    """The edit that makes site s emit what it computed under sid (a Python expression of its id)."""
    a, b = span(offs, s.span)
    want = ""
    if s.pair is not None:
        pa, pb = span(offs, s.pair)
        want = ", (" + data[pa:pb].decode("utf-8") + ")"
    if s.kind == "raises":
        return (a, b, "_fg_raises(" + sid + want + ")")
    ca, cb = span(offs, s.computed)
    head = "_fg_emit2(" + sid + ', "' + s.kind + '", (' if want else "_fg_emit(" + sid + ", ("
    many = ", True" if s.count == "any" else ""
    got = data[ca:cb].decode("utf-8")
    if s.wrap:
        got = s.wrap[0] + "((" + got + ")" + s.wrap[1] + ")"
    return (a, b, head + got + ")" + want + many + ")")


def site_record(s, sid, test):
    """What the host keeps of site s (emitted under sid in test)."""
    site = {"site": sid, "test": test, "kind": s.kind, "expected": s.expected,
            "opts": s.opts, "count": s.count, "pair": s.pair is not None}
    if s.cases is not None:
        site["cases"] = s.cases
    if getattr(s, "bycase", None) is not None:
        site["byCase"] = s.bycase
    return site


def rewrite_file(path, text, graded_bases, bare=False, graded=(), run_ids=None, kept_bases=()):
    try:
        tree = ast.parse(text)
    except SyntaxError as e:
        return None, [], {b: {"sites": 0, "kept": ["the file does not parse on the host: " + str(e)]} for b in graded_bases}
    SHADOWED.clear()
    SHADOWED.update(bound_names(tree) & set(PURE))
    data = text.encode("utf-8")
    offs = line_offsets(data)
    edits, sites, tests, taken = [], [], {}, set()
    run_ids = {} if run_ids is None else run_ids
    for base, fn in test_functions(tree, path):
        if base not in graded_bases:
            continue
        if bare and fn.decorator_list:
            # SymPy's XFAIL expects the test to raise: with its assertions emitted it would pass
            tests[base] = {"sites": 0, "kept": ["a decorated test of a bare-name runner (XFAIL, slow) stays as written"]}
            continue
        found, kept, emptied = local_sites(fn)
        tests[base] = {"sites": len(found), "kept": kept}
        by_case = None if bare else param_expected(fn, base, found, graded, offs)
        if by_case:
            edits.extend(by_case[0])
            run_ids.update(by_case[1])
        for st in emptied:
            a, b = span(offs, st.value)
            edits.append((a, b, "None"))
        for s in found:
            sid = secrets.token_hex(8)
            edits.append(site_edit(s, '"' + sid + '"', offs, data))
            sites.append(site_record(s, sid, base))
            taken.add(id(s.span))
    if not bare:
        h_edits, h_records = helpers_of(tree, path, data, offs, graded_bases, taken, kept_bases)
        edits.extend(h_edits)
        for base, rec in h_records:
            sites.append(rec)
            tests[base]["sites"] += 1
    if bare:
        # a runner with bare test names: each site and test under its function's name
        for site in sites:
            site["test"] = site["test"].rsplit("::", 1)[-1]
        tests = {b.rsplit("::", 1)[-1]: t for b, t in tests.items()}
    if not edits:
        return None, sites, tests
    at = prelude_at(tree, offs)
    if at < 0:
        return None, [], {b: {"sites": 0, "kept": ["no line after the module's header to put the emitter on"]} for b in tests}
    edits.sort(key=lambda e: -e[0])
    for a, b, t in edits:
        data = data[:a] + t.encode("utf-8") + data[b:]
    static = "_fg_static.update(" + json.dumps({x["site"]: x["test"] for x in sites}) + ")\n" if bare else ""
    head = ("import os as _fg_os, json as _fg_json\n_fg_path = _fg_os.environ.get('FLAKEGYM_EMIT', '')\n" + EMITTER + "\n" + static + NODE_FIXTURE).encode("utf-8")
    data = data[:at] + head + data[at:]
    out = data.decode("utf-8")
    try:
        ast.parse(out)
    except SyntaxError as e:
        return None, [], {b: {"sites": 0, "kept": ["the rewritten file does not parse: " + str(e)]} for b in tests}
    return out, sites, tests


def bare_bases(files, graded):
    """A bare-name runner's graded ids as path::name, where exactly one hidden file defines the
    name as a top-level test function (a name defined twice is left out: its emissions could not
    be told apart)."""
    names = set(graded)
    where = {}
    for f in files:
        try:
            tree = ast.parse(f["text"])
        except SyntaxError:
            continue
        for n in tree.body:
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name in names:
                where.setdefault(n.name, []).append(f["path"])
    return {ps[0] + "::" + n for n, ps in where.items() if len(ps) == 1}


def main():
    req = json.load(sys.stdin)
    bare = req.get("bare", False)
    bases = bare_bases(req["files"], req["graded"]) if bare else {g.split("[", 1)[0] for g in req["graded"]}
    # graded tests kept as written (recorded opaque): a helper they call stays as written too
    kept = {g.split("[", 1)[0] for g in req.get("kept", [])}
    out = {"files": [], "sites": [], "tests": {}, "runIds": {}}
    for f in req["files"]:
        mine = {b for b in bases if b.startswith(f["path"] + "::")}
        text, sites, tests = rewrite_file(f["path"], f["text"], mine, bare, req["graded"], out["runIds"], kept) if mine else (None, [], {})
        out["files"].append({"path": f["path"], "text": text})
        out["sites"].extend(sites)
        out["tests"].update(tests)
    json.dump(out, sys.stdout)


main()
`;

/** Reads {files, graded} on stdin, prints {files, sites, tests}; argv[1] is the EMITTER. */
export const PYTHON_REWRITER = [CORE, PYTHON_PURE, PYTHON_PYTESTER, PYTHON_PARAMS, PYTHON_HELPERS, MAIN].join(
  "\n\n",
);
