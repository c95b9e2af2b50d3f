/**
 * The host rewriter's pure builtins (python-source.ts composes it into PYTHON_REWRITER): an
 * expected side made of literals and calls of builtins whose value on literals is itself a literal
 * (requests' `keys = frozenset(["Spam", "Eggs"])`, `sorted((2, 1))`, `dict(a=1)`) is evaluated on
 * the host and leaves the file, where the test file binds none of those names (an assignment, a
 * def, an import, a parameter, a star import: then the name may be anything at run time).
 */
export const PYTHON_PURE = `
PURE = {"frozenset": frozenset, "set": set, "tuple": tuple, "list": list, "dict": dict, "sorted": sorted,
        "str": str, "int": int, "float": float, "bool": bool, "len": len, "abs": abs, "min": min,
        "max": max, "sum": sum}

# the PURE names the file being rewritten binds (they are not the builtins there)
SHADOWED = set()


def bound_names(tree):
    """Every name the module binds anywhere; all of PURE where it star-imports."""
    out = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            out.add(n.id)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(n.name)
        elif isinstance(n, ast.arg):
            out.add(n.arg)
        elif isinstance(n, (ast.Global, ast.Nonlocal)):
            out.update(n.names)
        elif isinstance(n, ast.alias):
            if n.name == "*":
                out.update(PURE)
            out.add((n.asname or n.name).split(".")[0])
    return out


def pure_funcs(node):
    """ids of the Name nodes under node that call a PURE builtin the file does not rebind."""
    return {id(n.func) for n in ast.walk(node) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
            and n.func.id in PURE and n.func.id not in SHADOWED and n.func.id not in LOCAL}


def pure_env():
    return {"__builtins__": {}, **{k: v for k, v in PURE.items() if k not in SHADOWED}}
`;
