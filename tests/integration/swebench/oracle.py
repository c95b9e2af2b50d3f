"""Asks the installed `swebench` package (PyPI) how its harness reads logs and which specs it keeps.

Input (a JSON file named by argv[1]): {"cases": [{"repo": "owner/name", "log": "..."}]}.
Output (stdout, JSON): the package version, each Python repository's parser function name, the
status map its parser gives each case, and MAP_REPO_VERSION_TO_SPECS_PY when this release has it.
Only reads the package; nothing of it is copied into flakegym.
"""
import importlib
import importlib.metadata
import json
import sys


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as f:
        cases = json.load(f)["cases"]
    parsers = importlib.import_module("swebench.harness.log_parsers.python").MAP_REPO_TO_PARSER_PY
    maps = []
    for case in cases:
        parse = parsers[case["repo"]]
        # the Python parsers ignore their test_spec argument
        maps.append(parse(case["log"], None))
    try:
        specs = importlib.import_module("swebench.harness.constants.python").MAP_REPO_VERSION_TO_SPECS_PY
    except ModuleNotFoundError:
        specs = None
    json.dump(
        {
            "version": importlib.metadata.version("swebench"),
            "parsers": {repo: fn.__name__ for repo, fn in parsers.items()},
            "maps": maps,
            "specs": specs,
        },
        sys.stdout,
    )


main()
