/**
 * The host rewriter's reading of pytester's checks (python-source.ts composes it into
 * PYTHON_REWRITER): `fnmatch_lines` and its kin, `assert_outcomes`, `assertoutcome`. Python text;
 * it uses the rewriter's Site, raw_value, canon and NotConstant.
 */
export const PYTHON_PYTESTER = String.raw`
# pytester's checks of a run's output and outcome (LineMatcher, RunResult, HookRecorder): the
# patterns and counts are literals, so they stay on the host and the test emits the lines or counts
LINE_CHECKS = {"fnmatch_lines": ("fnmatch", False), "re_match_lines": ("re", False),
               "no_fnmatch_line": ("fnmatch", True), "no_re_match_line": ("re", True)}
OUTCOME_KEYS = ("passed", "skipped", "failed", "errors", "xpassed", "xfailed")
OUTCOME_EXTRA = ("warnings", "deselected")
PYTESTER = set(LINE_CHECKS) | {"assert_outcomes", "assertoutcome"}
# Python re constructs a JavaScript RegExp reads the same way (the host searches with one)
RE_GROUPS = ("(?:", "(?P<", "(?P=", "(?=", "(?!", "(?<=", "(?<!")


def int_count(node):
    v = raw_value(node)
    if type(v) is not int:
        raise NotConstant("an outcome count that is not an int literal")
    return v


def patterns_of(arg, how, absent):
    v = raw_value(arg)
    if isinstance(v, str) and not absent:
        # pytest reads a str of patterns as Source(text).strip().lines: dedented, blank lines at
        # either end dropped (an indented one-liner loses its indent too)
        lines = __import__("textwrap").dedent(v).split("\n")
        while lines and not lines[0].strip():
            lines.pop(0)
        while lines and not lines[-1].strip():
            lines.pop()
        v = lines
    pats = [v] if isinstance(v, str) else list(v) if isinstance(v, (list, tuple)) and not absent else None
    if pats is None or not pats or not all(type(p) is str for p in pats):
        raise NotConstant("line patterns that are not a str or a list of str literals")
    for p in pats:
        if how == "re" and any(p.startswith("(?", i) and not p.startswith(RE_GROUPS, i) for i in range(len(p))):
            raise NotConstant("a regular expression group a JavaScript RegExp reads otherwise")
    return pats


def lines_site(stmt, call, attr):
    how, absent = LINE_CHECKS[attr]
    if len(call.args) != 1:
        return None, attr + " with other than one argument"
    opts = {"match": canon(how), "absent": canon(absent), "consecutive": canon(False)}
    for k in call.keywords:
        if k.arg == "consecutive" and not absent and isinstance(k.value, ast.Constant) and type(k.value.value) is bool:
            opts["consecutive"] = canon(k.value.value)
        else:
            return None, "an " + attr + " keyword externalization does not handle"
    pats = patterns_of(call.args[0], how, absent)
    return Site("lines", canon(pats), call.func.value, stmt, opts, call.args[0], ("_fg_lines", "")), None


def outcomes_site(stmt, call, attr):
    if attr == "assertoutcome":
        names = ["passed", "skipped", "failed"]
        if len(call.args) > 3:
            return None, "assertoutcome with more than three counts"
        want = dict.fromkeys(names, 0)
        for i, a in enumerate(call.args):
            want[names[i]] = int_count(a)
        for k in call.keywords:
            if k.arg not in names:
                return None, "an assertoutcome keyword externalization does not handle"
            want[k.arg] = int_count(k.value)
        return Site("eq", canon([want[n] for n in names]), call.func.value, stmt, None, call, ("_fg_outcome3", "")), None
    if call.args:
        return None, "assert_outcomes with positional counts"
    want = {}
    for k in call.keywords:
        name = {"error": "errors", "warning": "warnings"}.get(k.arg, k.arg)
        if name not in OUTCOME_KEYS + OUTCOME_EXTRA:
            return None, "an assert_outcomes keyword externalization does not handle"
        want[name] = int_count(k.value)
    keys = list(OUTCOME_KEYS) + [k for k in OUTCOME_EXTRA if k in want]
    extra = ", (" + ", ".join(repr(k) for k in keys) + ",)"
    return Site("eq", canon({k: want.get(k, 0) for k in keys}), call.func.value, stmt, None, call, ("_fg_outcomes", extra)), None


def pytester_site(stmt, call):
    attr = call.func.attr
    try:
        return lines_site(stmt, call, attr) if attr in LINE_CHECKS else outcomes_site(stmt, call, attr)
    except NotConstant as e:
        return None, str(e)
`;
