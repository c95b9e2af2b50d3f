"""Shared by the conformance checks (run by tests/conformance/run.ts, in the conformance virtualenv).

Each check ends by printing one JSON line: {"framework", "version", "status": pass|skip|fail,
"detail"}. A framework whose pip install failed is a skip that prints pip's error; one that is not
installed without a pip error, or that is installed and does not import, fails the suite.

The judged group (run.ts `MEMBERS`): a truncated reward-1 trajectory (several segments), a reward-0
and an untruncated reward-1 trajectory (fewer segments), an infra error and a first-call policy error. Every check
asserts, with its framework's own code, what was trained (every sampled token once, or what the
framework cannot take reported) and that equal rewards get equal advantages."""

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


MEMBERS = TASKS.get("members", {})


def served():
    """The served records of the judged group (what the policy sampled)."""
    return jsonl("records.jsonl")


def sampled_total(records):
    """Every token the policy sampled in the records."""
    return sum(m for r in records for s in r["segments"] for m in s["loss_mask"])


def notes(name):
    """What `flakegym export` reported for an export (`<format>-<segments>`): left out, placeholder, cut."""
    with open(os.path.join(EXPORT, name + ".notes.json")) as f:
        return json.load(f)


def reported_untrained(ns):
    return sum(n["sampled_tokens"] for n in ns)


def assert_members_reported(ns, records, what):
    """Issue 44 item 3: every member without a sample (the infra error: no reward; the turn-1 error:
    nothing sampled) is named in what the export reported, with its reason, never dropped silently."""
    said = {n["trajectory_id"]: n["reason"] for n in ns if n["handling"] in ("left_out", "placeholder")}
    for r in records:
        if r["reward"] is None:
            want = "no_reward"
        elif sampled_total([r]) == 0:
            want = "no_sample"
        else:
            continue
        assert said.get(r["trajectory_id"]) == want, "%s: member %s (%s) left out without a note saying %s: %s" % (
            what, r["index"], r["outcome"]["kind"], want, said)


def assert_defaults_train_all(records, default_rows_tokens):
    """Issue 44 item 1: the defaults train every sampled token exactly once — `flakegym export`'s
    default (`default_rows_tokens`: the tokens trained by a `<format>-default` export) and the
    adapters' `pieces(records)` — never `final`, which leaves the earlier segments' tokens out."""
    from flakegym_client import pieces
    want = sampled_total(records)
    assert default_rows_tokens == want, (
        "flakegym export's default segment policy trains %d of %d sampled tokens" % (default_rows_tokens, want))
    got = sum(sum(p["mask"]) for p in pieces(records))
    assert got == want, "the adapters' default pieces() train %d of %d sampled tokens" % (got, want)


def assert_credit(adv_by_index, records, what):
    """Every row of a trajectory has one advantage, and trajectories with equal rewards have equal
    advantages (the truncated reward-1 one and the untruncated reward-1 one, whatever their segments)."""
    one = {}
    for index, advs in adv_by_index.items():
        assert max(advs) - min(advs) < 1e-4, "%s: trajectory %s's rows disagree: %s" % (what, index, advs)
        one[index] = advs[0]
    t, o = MEMBERS["truncated"], MEMBERS["one"]
    reward = {r["index"]: r["reward"] for r in records}
    assert reward[t] == reward[o] == 1, reward
    assert abs(one[t] - one[o]) < 1e-4, "%s: equal rewards, unequal advantages: truncated %s vs one %s" % (
        what, one[t], one[o])
    assert one[MEMBERS["zero"]] < 0 < one[o], one
    return one


def run(framework, dist, check):
    """Runs `check()` (which returns a detail string). Not installed: a skip printing pip's error when
    its install failed, else a failure; an ImportError or anything else that raises: a failure."""
    if version(dist) is None:
        failed = "; ".join("%s: %s" % (k, v) for k, v in INSTALL_FAILED.items() if dist in k)
        if failed:
            finish(framework, None, "skip", "%s is not installable here: pip said: %s" % (dist, failed))
        finish(framework, None, "fail", "%s is not installed, and no pip install of it failed" % dist)
    try:
        detail = check()
    except ImportError as err:
        traceback.print_exc()
        finish(framework, dist, "fail", "%s is installed and does not import: %s" % (dist, err))
    except Exception as err:  # noqa: BLE001 - every other fault is the check failing
        traceback.print_exc()
        finish(framework, dist, "fail", "%s: %s" % (type(err).__name__, err))
    finish(framework, dist, "pass", detail)
