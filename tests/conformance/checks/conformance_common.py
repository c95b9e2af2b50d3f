"""Shared by the conformance checks (run by tests/conformance/run.ts, in the conformance virtualenv).

Each check ends by printing one JSON line: {"framework", "version", "status": pass|skip|fail,
"detail"}. A framework that cannot be installed or imported is a skip with the reason, never a
pass."""

import importlib.metadata
import json
import os
import sys
import traceback

EXPORT = os.environ.get("FLAKEGYM_CONFORMANCE_EXPORT", "")
SERVE_URL = os.environ.get("FLAKEGYM_SERVE_URL", "")
TASKS = json.loads(os.environ.get("FLAKEGYM_CONFORMANCE_TASKS", "{}"))
TOKENIZER = os.environ.get("FLAKEGYM_CONFORMANCE_TOKENIZER", "")
INSTALL_FAILED = json.loads(os.environ.get("FLAKEGYM_CONFORMANCE_INSTALL_FAILED", "{}"))
INFERENCE = {"base_url": "http://127.0.0.1:9/v1", "model": "Qwen/Qwen3-8B"}


def version(dist):
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def jsonl(name):
    with open(os.path.join(EXPORT, name)) as f:
        return [json.loads(line) for line in f if line.strip()]


def finish(framework, dist, status, detail=""):
    print(json.dumps({"framework": framework, "version": version(dist) if dist else None,
                      "status": status, "detail": detail}))
    sys.exit(0 if status != "fail" else 1)


def run(framework, dist, check):
    """Runs `check()` (which returns a detail string): an ImportError is a skip, anything else that
    raises is a failure."""
    if version(dist) is None:
        failed = "; ".join("%s: %s" % (k, v) for k, v in INSTALL_FAILED.items() if dist in k)
        finish(framework, None, "skip", "%s is not installed%s" % (dist, (" (" + failed + ")") if failed else ""))
    try:
        detail = check()
    except ImportError as err:
        traceback.print_exc()
        finish(framework, dist, "skip", "%s does not import here: %s" % (dist, err))
    except Exception as err:  # noqa: BLE001 - every other fault is the check failing
        traceback.print_exc()
        finish(framework, dist, "fail", "%s: %s" % (type(err).__name__, err))
    finish(framework, dist, "pass", detail)
