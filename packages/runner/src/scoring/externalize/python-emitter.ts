/**
 * The Python half of externalized assertions that goes into every rewritten hidden test file
 * (scoring/externalize): it renders what the test computed, canonically and type-tagged, and
 * appends it to the file `$FLAKEGYM_EMIT` names. The host's rewriter (python-source.ts) renders
 * each expected value with this same code, so both sides agree on the rendering.
 */

/** Renders values (`_fg_canon`), exceptions (`_fg_exc`) and writes emissions (`_fg_emit`, `_fg_raises`). */
export const PYTHON_EMITTER = String.raw`
def _fg_canon(v, _d=0):
    if _d > 64:
        return {"t": "deep"}
    if v is None:
        return {"t": "none"}
    t = type(v)
    if str.startswith(t.__module__ if isinstance(t.__module__, str) else "", "sympy."):
        # a SymPy value has its own == (an Integer equals its int; a PolyElement, a dict subclass,
        # equals a constant): an Integer renders as its int, any other as an object the host does
        # not compare (gold's are recorded at validation, any other fails closed)
        if getattr(v, "is_Integer", False) is True:
            return {"t": "int", "v": int.__repr__(int(v))}
        return {"t": "obj", "type": t.__module__ + "." + t.__qualname__, "repr": "?"}
    if isinstance(v, bool):
        return {"t": "bool", "v": v is True}
    if isinstance(v, int):
        return {"t": "int", "v": int.__repr__(int.__int__(v))}
    if isinstance(v, float):
        return {"t": "float", "v": float.__repr__(float.__float__(v))}
    if isinstance(v, complex):
        c = complex.__complex__(v)
        return {"t": "complex", "v": [float.__repr__(c.real), float.__repr__(c.imag)]}
    if isinstance(v, str):
        return {"t": "str", "v": str.__str__(v)}
    if isinstance(v, (bytes, bytearray)):
        return {"t": "bytes", "v": bytes(v).hex()}
    if isinstance(v, list):
        return {"t": "list", "v": [_fg_canon(x, _d + 1) for x in list.__iter__(v)]}
    if isinstance(v, tuple):
        return {"t": "tuple", "v": [_fg_canon(x, _d + 1) for x in tuple.__iter__(v)]}
    if isinstance(v, dict):
        return {"t": "dict", "v": [[_fg_canon(k, _d + 1), _fg_canon(x, _d + 1)] for k, x in dict.items(v)]}
    if isinstance(v, (set, frozenset)):
        return {"t": "set", "v": [_fg_canon(x, _d + 1) for x in (set.__iter__(v) if isinstance(v, set) else frozenset.__iter__(v))]}
    # a dict's keys or items view compares (==, in) as the set of its keys or pairs does
    if type(v) is type({}.keys()) or type(v) is type({}.items()):
        return {"t": "set", "v": [_fg_canon(x, _d + 1) for x in v]}
    # a numpy scalar or one-element array (a plotting or numeric library's result) compares in an
    # assertion as its one Python value does: an equality of a one-element array is truthy exactly
    # when its element's is (this text goes into hidden test files: no literal values here)
    _np = __import__("sys").modules.get("numpy")
    if _np is not None and (isinstance(v, _np.generic) or (isinstance(v, _np.ndarray) and v.size == 1)):
        return _fg_canon(v.item(), _d + 1)
    t = type(v)
    try:
        r = repr(v)[:200]
    except BaseException:
        r = "?"
    return {"t": "obj", "type": t.__module__ + "." + t.__qualname__, "repr": r}


def _fg_exc(e):
    if e is None:
        return {"t": "noexc"}
    try:
        msg = str(e)
    except BaseException:
        msg = ""
    mro = [c.__module__ + "." + c.__qualname__ for c in type(e).__mro__]
    return {"t": "exc", "mro": mro, "msg": msg}


_fg_seen = set()


def _fg_write(site, value, want=None, many=False):
    if site is None:
        # a helper's assertion called from no graded call site (_fg_hs): nothing is graded there
        return
    rec = {"s": site, "n": _fg_node(site), "v": value}
    if want is not None:
        rec["w"] = want
    try:
        line = _fg_json.dumps(rec, ensure_ascii=True, allow_nan=False) + "\n"
    except BaseException:
        line = _fg_json.dumps({"s": site, "n": _fg_node(site), "v": {"t": "unrenderable"}}) + "\n"
    if many:
        # a site that may run any number of times (in a loop) holds when each value it emitted
        # holds: the same line again says nothing new (a loop over gc.get_objects() emits 30 000)
        if line in _fg_seen:
            return
        _fg_seen.add(line)
    fd = _fg_os.open(_fg_path, _fg_os.O_WRONLY | _fg_os.O_APPEND | _fg_os.O_CREAT, 0o600)
    try:
        _fg_os.write(fd, line.encode("ascii"))
    finally:
        _fg_os.close(fd)


_fg_cur = [None]


# A helper that asserts, called from a graded test: the call statement runs under _fg_at({helper
# site: site of this call}), and the helper's assertions emit under _fg_hs(helper site), the
# site the host keeps for that call (its expected value may be the call's own argument)
_fg_ctx = []


class _fg_at:
    def __init__(self, ids):
        self.ids = ids

    def __enter__(self):
        _fg_ctx.append(self.ids)

    def __exit__(self, t, e, tb):
        if _fg_ctx and _fg_ctx[-1] is self.ids:
            _fg_ctx.pop()
        return False


def _fg_hs(h):
    return _fg_ctx[-1].get(h) if _fg_ctx else None


_fg_static = {}


def _fg_node(site=None):
    # a runner that is not pytest (SymPy's bin/test): the test each site is in, written by the
    # host rewriter (the ids are bare names, one test per name)
    if site in _fg_static:
        return _fg_static[site]
    # the node pytest said it runs when the test's setup began (_fg_current_node): code under
    # test may drop or rewrite PYTEST_CURRENT_TEST later (an in-process inner pytest run does)
    if _fg_cur[0] is not None:
        return _fg_cur[0]
    n = _fg_os.environ.get("PYTEST_CURRENT_TEST", "")
    return n.rsplit(" (", 1)[0] if n.endswith(")") else n


def _fg_emit(site, value, many=False):
    try:
        c = _fg_canon(value)
    except BaseException as e:
        c = {"t": "unrenderable", "why": type(e).__name__}
    _fg_write(site, c, None, many)


def _fg_hemit(site, op, value, want, many=False):
    # a helper's assertion whose expected side is its parameter: a call that passed a literal
    # (the host keeps it; site is the call's id) emits the value, one that computed it ([id]) both
    if isinstance(site, list):
        _fg_emit2(site[0], op, value, want, many)
    else:
        _fg_emit(site, value, many)


def _fg_opaque(c):
    if c["t"] in ("obj", "deep", "unrenderable"):
        return True
    v = c.get("v")
    if c["t"] == "dict":
        return any(_fg_opaque(k) or _fg_opaque(x) for k, x in v)
    return isinstance(v, list) and c["t"] != "complex" and any(_fg_opaque(x) for x in v)


def _fg_emit2(site, op, value, want, many=False):
    try:
        c, w = _fg_canon(value), _fg_canon(want)
    except BaseException as e:
        c, w = {"t": "unrenderable", "why": type(e).__name__}, {"t": "unrenderable"}
    if _fg_opaque(c) or _fg_opaque(w):
        # a value the rendering cannot carry (a datetime, an object of the code under test): both
        # sides are the test's own, so Python compares them here, as the assertion did
        try:
            ok = {"eq": lambda: value == want, "ne": lambda: value != want,
                  "in": lambda: want in value, "notin": lambda: want not in value}[op]()
            c, w = {"t": "inproc", "ok": bool(ok) is True}, {"t": "inproc"}
        except BaseException as e:
            c, w = {"t": "unrenderable", "why": type(e).__name__}, {"t": "unrenderable"}
    _fg_write(site, c, w, many)


def _fg_lines(m):
    # a pytester LineMatcher's lines (fnmatch_lines and its kin): the patterns stay on the host
    return [str.__str__(str(x)) for x in m.lines]


def _fg_outcomes(r, keys):
    # a pytester RunResult's outcome counts under assert_outcomes' keys (pytest < 6 says error)
    d = {}
    for k, v in dict.items(r.parseoutcomes()):
        k = {"error": "errors", "warning": "warnings"}.get(k, k)
        d[k] = d.get(k, 0) + v
    return {k: d.get(k, 0) for k in keys}


def _fg_truth(v):
    # what an assert of a bare expression reads (its truth); which truth was asserted is known
    # only to the host
    return True if v else False


def _fg_outcome3(rec):
    # a HookRecorder's (passed, skipped, failed) counts, as assertoutcome compares them
    return [len(x) for x in rec.listoutcomes()]


class _fg_raises:
    def __init__(self, site, *want):
        self.want = want
        self.site = site
        self.value = None
        self.type = None

    def __enter__(self):
        return self

    def __exit__(self, t, e, tb):
        if t is not None and issubclass(t, (KeyboardInterrupt, GeneratorExit)):
            return False
        if t is not None and e is None:
            e = t()
        self.value = e
        self.type = t
        _fg_write(self.site, _fg_exc(e), _fg_canon(self.want[0]) if self.want else None)
        return True
`;
