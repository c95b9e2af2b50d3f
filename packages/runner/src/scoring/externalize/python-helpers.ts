/**
 * The host rewriter's reading of helpers that assert (python-source.ts composes it into
 * PYTHON_REWRITER): a graded test's statement `check(a, 2)` / `self.check(a, code=2)` calls a
 * function of its own file whose body asserts (`assert f(a) == 3`, `assert got == code`). The
 * helper's assertions emit under `_fg_hs(<helper site>)`; each call statement in a graded test runs
 * under `_fg_at({<helper site>: <site of this call>})`, so the host keeps one site per helper
 * assertion and call (its count: once where both run unconditionally). A helper parameter read
 * only as an assertion's expected side (and in f-string messages) whose every call passes a
 * literal leaves the file at each call (`None` in its place): the host expects that call's value.
 * Python text; it uses the rewriter's local_sites, site_edit, site_record, span and canon.
 */
export const PYTHON_HELPERS = String.raw`
# what a with-statement's body may leave early through (a raise it expects)
RAISES_CTX = {"raises", "assertRaises", "assertRaisesRegex", "assertRaisesRegexp", "warns", "assertWarns",
              "assertWarnsRegex", "deprecated_call"}


def helper_defs(tree):
    """{(class name or None, name): (fn, index of the first parameter a call passes)}: the file's
    undecorated module-level functions and its classes' plain or static methods that are no tests."""
    out = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("test") and not node.decorator_list:
            out[(None, node.name)] = (node, 0)
        elif isinstance(node, ast.ClassDef):
            for m in node.body:
                if not isinstance(m, ast.FunctionDef) or m.name.startswith("test"):
                    continue
                decos = [d.id if isinstance(d, ast.Name) else None for d in m.decorator_list]
                if decos == ["staticmethod"]:
                    out[(node.name, m.name)] = (m, 0)
                elif not decos and (m.args.posonlyargs or m.args.args):
                    out[(node.name, m.name)] = (m, 1)
    return out


def helper_key(call, cls):
    f = call.func
    if isinstance(f, ast.Name):
        return (None, f.id)
    if cls and isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "self":
        return (cls, f.attr)
    return None


def tests_with_class(tree, path):
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            yield path + "::" + node.name, node, None
        elif isinstance(node, ast.ClassDef):
            for m in node.body:
                if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) and m.name.startswith("test"):
                    yield path + "::" + node.name + "::" + m.name, m, node.name


def leaves_early(parents):
    """Whether a statement under these parents may run any number of times (a branch, a loop, the
    body of a with that expects a raise)."""
    for p in parents:
        if isinstance(p, BRANCHES):
            return True
        if isinstance(p, (ast.With, ast.AsyncWith)) and any(
                isinstance(i.context_expr, ast.Call) and call_name(i.context_expr)[1] in RAISES_CTX for i in p.items):
            return True
    return False


def starts_line(data, offs, node):
    at = offs[node.lineno - 1]
    return data[at:at + node.col_offset].strip() == b""


def helper_calls(tree, path, defs, data, offs, graded_bases, taken, kept_bases=()):
    """{key: [(test base, call statement, count)]} of the helpers whose every reference in the file is
    a call statement of a test, on a line of its own, and no graded test the rewriter must keep as
    written (kept_bases: a test recorded opaque) calls; the others are left out. A graded test's
    calls run under _fg_at."""
    calls, bad, free = {}, set(), set()
    for base, fn, cls in tests_with_class(tree, path):
        for node, parents in walk_body(fn):
            if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)):
                continue
            key = helper_key(node.value, cls)
            if key not in defs:
                continue
            if base in kept_bases or id(node) in taken or not starts_line(data, offs, node):
                bad.add(key)
                continue
            if base not in graded_bases:
                # a test nothing grades (it may run, its result is not read): its call checks nothing
                free.add(id(node.value.func))
                continue
            # a call on one side of an if runs any number of times, as one in a loop does: where it
            # does not run nothing is checked, as in the file as written
            calls.setdefault(key, []).append((base, node, "any" if leaves_early(parents) else "one"))
    funcs = {id(n.value.func) for v in calls.values() for _, n, _ in v} | free
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and (None, n.id) in calls and id(n) not in funcs:
            bad.add((None, n.id))
        if isinstance(n, ast.Attribute) and id(n) not in funcs:
            bad.update(k for k in calls if k[0] is not None and k[1] == n.attr)
    return {k: v for k, v in calls.items() if k not in bad}


def param_arg(fn, first, name, call):
    """The node a call passes for parameter name (its default where it passes none), or None where
    that is not surely known (*args, **kwargs, a missing argument)."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return None
    pos = [a.arg for a in fn.args.posonlyargs + fn.args.args]
    for k in call.keywords:
        if k.arg == name:
            return k.value
    if name in pos and 0 <= pos.index(name) - first < len(call.args):
        return call.args[pos.index(name) - first]
    if name in pos:
        at = pos.index(name) - (len(pos) - len(fn.args.defaults))
        return fn.args.defaults[at] if at >= 0 else None
    kw = [a.arg for a in fn.args.kwonlyargs]
    return fn.args.kw_defaults[kw.index(name)] if name in kw else None


def expected_args(fn, first, found, calls):
    """{parameter: {id(call statement): canon, or None where the call computes it}} of the helper's
    parameters read only as the expected side of its pair sites (or in f-strings), with a literal
    at one call at least."""
    params = {a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs}
    wants = {}
    for s in found:
        if s.kind != "raises" and isinstance(s.pair, ast.Name) and s.pair.id in params:
            wants.setdefault(s.pair.id, set()).add(id(s.pair))
    in_fstr = {id(n) for j in ast.walk(fn) if isinstance(j, ast.JoinedStr) for n in ast.walk(j)}
    out = {}
    for name, ok in wants.items():
        uses = [n for n in ast.walk(fn) if isinstance(n, ast.Name) and n.id == name]
        if any(not isinstance(n.ctx, ast.Load) or (id(n) not in ok and id(n) not in in_fstr) for n in uses):
            continue
        nodes = {id(st): param_arg(fn, first, name, st.value) for _, st, _ in calls}
        if any(n is None for n in nodes.values()):
            continue
        by = {k: const_value(n) if is_const(n) else None for k, n in nodes.items()}
        if any(v is not None for v in by.values()) and len(json.dumps(list(by.values()))) <= MAX_EXPECTED:
            out[name] = by
    return out


def expected_arg_edits(fn, first, name, calls, by, offs):
    """The literal call arguments (and the default) of parameter name, each replaced by None."""
    edits = []
    for _, st, _ in calls:
        node = param_arg(fn, first, name, st.value)
        passed = any(node is a for a in st.value.args + [k.value for k in st.value.keywords])
        if passed and by[id(st)] is not None:
            edits.append(span(offs, node) + ("None",))
    for d in fn.args.defaults + [d for d in fn.args.kw_defaults if d is not None]:
        if param_default_of(fn, d) == name and is_const(d):
            edits.append(span(offs, d) + ("None",))
    return edits


def hemit_edit(s, hid, offs, data):
    """A helper's assertion whose expected side is its parameter: _fg_hemit emits the value alone
    at a call whose literal the host keeps, both sides at a call that computes it."""
    a, b = span(offs, s.span)
    ca, cb = span(offs, s.computed)
    pa, pb = span(offs, s.pair)
    got = data[ca:cb].decode("utf-8")
    if s.wrap:
        got = s.wrap[0] + "((" + got + ")" + s.wrap[1] + ")"
    many = ", True" if s.count == "any" else ""
    want = data[pa:pb].decode("utf-8")
    return (a, b, '_fg_hemit(_fg_hs("' + hid + '"), "' + s.kind + '", (' + got + "), (" + want + ")" + many + ")")


def param_default_of(fn, node):
    pos = [a.arg for a in fn.args.posonlyargs + fn.args.args]
    for i, d in enumerate(fn.args.defaults):
        if d is node:
            return pos[len(pos) - len(fn.args.defaults) + i]
    for a, d in zip(fn.args.kwonlyargs, fn.args.kw_defaults):
        if d is node:
            return a.arg
    return None


def helper_sites(fn, first, calls, offs, data):
    """(edits, [(test base, site record)]) of one helper whose calls are calls."""
    found, _, emptied = local_sites(fn)
    if not found or any(isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await)) for n in ast.walk(fn)):
        return [], []
    early = any(isinstance(n, ast.Return) for n, _ in walk_body(fn))
    by_arg = expected_args(fn, first, found, calls)
    edits = [span(offs, st.value) + ("None",) for st in emptied]
    for name, by in by_arg.items():
        edits.extend(expected_arg_edits(fn, first, name, calls, by, offs))
    ids = {}
    for s in found:
        arg = s.pair.id if s.kind != "raises" and isinstance(s.pair, ast.Name) and s.pair.id in by_arg else None
        hid = secrets.token_hex(8)
        ids[id(s)] = (hid, arg)
        edits.append(hemit_edit(s, hid, offs, data) if arg else site_edit(s, '_fg_hs("' + hid + '")', offs, data))
    records = []
    for base, st, count in calls:
        at = {}
        for s in found:
            hid, arg = ids[id(s)]
            pid = secrets.token_hex(8)
            rec = site_record(s, pid, base)
            rec["count"] = "one" if s.count == "one" and count == "one" and not early else "any"
            want = by_arg[arg][id(st)] if arg else None
            if want is not None:
                rec["expected"], rec["pair"] = want, False
            at[hid] = [pid] if arg and want is None else pid
            records.append((base, rec))
        a = span(offs, st)[0]
        edits.append((a, a, "with _fg_at(" + json.dumps(at) + "): "))
    return edits, records


def helpers_of(tree, path, data, offs, graded_bases, taken, kept_bases=()):
    """(edits, [(test base, site record)]) of every helper that asserts, called from graded tests."""
    defs = helper_defs(tree)
    edits, records = [], []
    for key, calls in helper_calls(tree, path, defs, data, offs, graded_bases, taken, kept_bases).items():
        fn, first = defs[key]
        e, r = helper_sites(fn, first, calls, offs, data)
        edits.extend(e)
        records.extend(r)
    return edits, records
`;
