/**
 * The host rewriter's reading of parametrized tests (python-source.ts composes it into
 * PYTHON_REWRITER): pytest's id of every case, the side of an `if` on the parameters each case
 * takes, and parametrized expected sides that leave the decorator (fresh case ids). Python text;
 * it uses the rewriter's Site, raw_value, canon, span and NotConstant.
 */
export const PYTHON_PARAMS = String.raw`
# An assertion on one side of a branch (if, match, except) runs in some cases of a test and not in
# others (a parametrized test's if/else on its parameter). Where every such branch is an if whose
# test reads only the test's parameters (immutable literals of @pytest.mark.parametrize, never
# rebound) and pytest's case ids are known, the host evaluates the side per case: the site must be
# emitted in the cases that run it and must not be in the others (branch_cases). Otherwise it is
# kept as written: no emission in a case that took the other side could not be told from an
# emission the code under test suppressed.
ONE_SIDED = (ast.If, ast.IfExp, ast.ExceptHandler) + ((ast.Match,) if hasattr(ast, "Match") else ())
ONE_SIDED_WHY = "it runs on one side of an if, match or except whose side per case the host cannot evaluate (kept as written)"


def one_sided(parents):
    return any(isinstance(p, ONE_SIDED) for p in parents)


# A parametrized test's cases, where pytest's ids for them are known on the host: [(id, {arg:
# value})]. A value that is not made of literals is OPAQUE (its id is argname + index).
OPAQUE = object()
SAFE_ID = __import__("re").compile(r"[A-Za-z0-9_.+-]+")


def value_id(v, argname, idx, wide=False):
    """pytest's id of one parameter value (_idval), or None where it is not surely known. wide:
    pytest's likely id of any value (a str escaped as pytest escapes it, an object of unknown type
    by its argname and index): only where the graded ids confirm it (param_expected)."""
    if wide and v is OPAQUE:
        return argname + str(idx)
    if wide and type(v) is str and v:
        return v.encode("unicode_escape").decode("ascii")
    if v is OPAQUE:
        return None
    if v is None or type(v) in (bool, int, float):
        s = str(v)
    elif type(v) is str:
        s = v
    elif type(v) in (tuple, list, dict, set):
        return argname + str(idx)
    else:
        return None
    return s if SAFE_ID.fullmatch(s) else None


def literal_or_opaque(node):
    try:
        return raw_value(node)
    except NotConstant:
        return OPAQUE


def parametrize_sets(deco, wide=False):
    """[(id, {arg: value})] of one @pytest.mark.parametrize, or None where its ids are not known."""
    if not (isinstance(deco, ast.Call) and isinstance(deco.func, ast.Attribute) and deco.func.attr == "parametrize"):
        return None
    if len(deco.args) != 2 or deco.keywords:
        return None
    names = literal_or_opaque(deco.args[0])
    names = [n.strip() for n in names.split(",")] if isinstance(names, str) else names
    if not isinstance(names, (list, tuple)) or not names or not all(isinstance(n, str) and n for n in names):
        return None
    if not isinstance(deco.args[1], (ast.List, ast.Tuple)):
        return None
    out = []
    for idx, el in enumerate(deco.args[1].elts):
        pid = None
        if isinstance(el, ast.Call) and call_name(el)[1] == "param":
            for k in el.keywords:
                if k.arg == "id":
                    pid = literal_or_opaque(k.value)
                    if not (type(pid) is str and SAFE_ID.fullmatch(pid)):
                        return None
                elif k.arg != "marks":
                    return None
            vals = list(el.args)
        elif len(names) == 1:
            vals = [el]
        elif isinstance(el, (ast.List, ast.Tuple)):
            vals = list(el.elts)
        else:
            return None
        if len(vals) != len(names):
            return None
        env = {n: literal_or_opaque(v) for n, v in zip(names, vals)}
        ids = [value_id(env[n], n, idx, wide) for n in names]
        if pid is None and None in ids:
            return None
        out.append((pid or "-".join(ids), env))
    return out


def param_decos(fn):
    return [d for d in fn.decorator_list if isinstance(d, ast.Call) and isinstance(d.func, ast.Attribute) and d.func.attr == "parametrize"]


def param_cases(fn, wide=False, renamed=None):
    """Every case of fn as pytest ids it, nearest decorator first; None where not surely known.
    renamed: {decorator index: [fresh set ids]}, its sets ided by those instead (a 4th item: the
    case's id in the rewritten file)."""
    cases = [("", {}, "")]
    decos = param_decos(fn)
    if not decos:
        return None
    for i in reversed(range(len(decos))):
        sets = parametrize_sets(decos[i], wide)
        if sets is None:
            return None
        fresh = (renamed or {}).get(i) or [sid for sid, _ in sets]
        cases = [((cid + "-" if cid else "") + sid, {**cenv, **senv}, (rid + "-" if rid else "") + fresh[k])
                 for cid, cenv, rid in cases for k, (sid, senv) in enumerate(sets)]
    ids = [c[0] for c in cases]
    if len(set(ids)) != len(ids):
        return None
    return cases if renamed is not None else [(c, e) for c, e, _ in cases]


IMMUTABLE = (type(None), bool, int, float, str)
COND_NODES = (ast.Compare, ast.BoolOp, ast.UnaryOp, ast.Not, ast.And, ast.Or, ast.Name, ast.Load, ast.Constant,
              ast.Eq, ast.NotEq, ast.Is, ast.IsNot, ast.In, ast.NotIn, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Tuple)


def branch_cases(fn, parents, node, cases):
    """For an assertion under if-statements whose tests read only the test's parameters (immutable
    literals, never rebound): (the case ids it runs in, those it does not, the parents left), else None."""
    if cases is None:
        return None
    stored = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del))}
    conds, rest = [], []
    chain = list(parents) + [node]
    for i, p in enumerate(parents):
        if not isinstance(p, ONE_SIDED):
            rest.append(p)
            continue
        if not isinstance(p, ast.If) or not all(isinstance(n, COND_NODES) for n in ast.walk(p.test)):
            return None
        names = {n.id for n in ast.walk(p.test) if isinstance(n, ast.Name)}
        if names & stored:
            return None
        child = chain[i + 1]
        side = True if any(c is child for c in p.body) else False if any(c is child for c in p.orelse) else None
        if side is None:
            return None
        conds.append((p.test, names, side))
    run, skip = [], []
    for cid, env in cases:
        ok = True
        for test, names, side in conds:
            if not all(k in env and env[k] is not OPAQUE and isinstance(env[k], IMMUTABLE) for k in names):
                return None
            try:
                v = eval(compile(ast.fix_missing_locations(ast.Expression(body=test)), "<branch>", "eval"),
                         {"__builtins__": {}}, dict(env))
            except Exception:
                return None
            ok = ok and bool(v) == side
        (run if ok else skip).append(cid)
    return run, skip, tuple(rest)



def param_names(deco):
    names = literal_or_opaque(deco.args[0])
    return [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)


def entry_value(el, names, k):
    """The node of parameter k in one parametrize entry, or None (an entry with its own id)."""
    if isinstance(el, ast.Call) and call_name(el)[1] == "param":
        return None if any(kw.arg == "id" for kw in el.keywords) else el.args[k]
    return el if len(names) == 1 else el.elts[k]


def expected_params(fn, found, decos):
    """{parameter: decorator index} of the parameters read only as the expected side of pair sites."""
    out = {}
    body_names = [n for st in fn.body for n in ast.walk(st) if isinstance(n, ast.Name)]
    for name in {s.pair.id for s in found if isinstance(s.pair, ast.Name)}:
        uses = [n for n in body_names if n.id == name]
        wants = {id(s.pair) for s in found if isinstance(s.pair, ast.Name) and s.pair.id == name}
        if any(not isinstance(n.ctx, ast.Load) or id(n) not in wants for n in uses):
            continue
        holders = [i for i, d in enumerate(decos) if name in param_names(d)]
        if len(holders) == 1:
            out[name] = holders[0]
    return out


def param_expected(fn, base, found, graded, offs):
    """A parametrized test whose pair sites expect a bare parameter read nowhere else: the values
    of that parameter leave the file (None in their place), its decorator's sets get fresh random
    ids (the old ones may spell the values), and each site expects, per case (its id in the
    rewritten file), the value the host read from the decorator. Only where every graded id of the
    test is a case id computed here (pytest's ids then agree with the host's). Returns (edits,
    {graded id: id in the run}) or None."""
    decos = param_decos(fn)
    wide = param_cases(fn, True)
    mine = [g for g in graded if g.split("[", 1)[0] == base]
    if not decos or wide is None or not mine:
        return None
    # a graded id is a case's node id, or (SWE-bench's log parser) its first word, one case's only
    of = {}
    for c, _ in wide:
        node = base + "[" + c + "]"
        of.setdefault(node, []).append(c)
        if node.split(None, 1)[0] != node:
            of.setdefault(node.split(None, 1)[0], []).append(c)
    if any(len(of.get(g, ())) != 1 for g in mine):
        return None
    params = expected_params(fn, found, decos)
    if not params:
        return None
    edits, fresh = [], {}
    for i in sorted(set(params.values())):
        names, elts = param_names(decos[i]), decos[i].args[1].elts
        for name in [n for n, at in params.items() if at == i]:
            k = names.index(name)
            for el in elts:
                node = entry_value(el, names, k)
                if node is None:
                    return None
                edits.append(span(offs, node) + ("None",))
        fresh[i] = ["p" + secrets.token_hex(5) for _ in elts]
        end = span(offs, decos[i].args[1])[1]
        edits.append((end, end, ", ids=" + json.dumps(fresh[i])))
    cases = param_cases(fn, True, fresh)
    run = {c: r for c, _, r in cases}
    for s in found:
        if isinstance(s.pair, ast.Name) and s.pair.id in params:
            by = {r: canon(env[s.pair.id]) for _, env, r in cases}
            if any(env[s.pair.id] is OPAQUE for _, env, _ in cases) or len(json.dumps(by)) > MAX_EXPECTED:
                return None
            s.pair, s.bycase = None, by
    for s in found:
        if s.cases is not None:
            s.cases = {k: [run[c] for c in v] for k, v in s.cases.items()}
    return edits, {g: base + "[" + run[of[g][0]] + "]" for g in mine}
`;
