"""Harbor 0.25.0: every exported ATIF file validated by harbor's own Trajectory model, and its
reward file by harbor's VerifierResult."""

import json
import os

from conformance_common import EXPORT, run


def check():
    from harbor.models.trajectories.trajectory import Trajectory
    from harbor.models.verifier.result import VerifierResult

    d = os.path.join(EXPORT, "atif")
    files = sorted(f for f in os.listdir(d) if f.endswith(".json") and not f.endswith(".verifier.json"))
    assert files
    unsampled = 0
    for f in files:
        with open(os.path.join(d, f)) as fh:
            raw = json.load(fh)
        t = Trajectory.model_validate(raw)
        with open(os.path.join(d, f[:-5] + ".verifier.json")) as fh:
            v = VerifierResult.model_validate(json.load(fh))
        if not any(s.source == "agent" for s in t.steps):
            # no model call answered (an infra error: the task prompt only; a first-call policy error:
            # the system prompt of the refused call too) and the outcome, nothing sampled; an infra
            # error has no reward
            assert [s.source for s in t.steps] in (["user"], ["system", "user"]), [s.source for s in t.steps]
            kind = raw["extra"]["outcome"]["kind"]
            assert kind in ("infra_error", "policy_error"), kind
            assert (v.rewards is None) == (kind == "infra_error"), (kind, v.rewards)
            unsampled += 1
            continue
        assert [s.source for s in t.steps[:2]] == ["system", "user"]
        # the live random-weight model writes no tool call: each answered call is an agent step with its text
        assert all(s.message is not None for s in t.steps if s.source == "agent")
        assert v.rewards is not None and "reward" in v.rewards
    assert unsampled == 2, unsampled  # the infra and the first-call error members
    return "%d ATIF trajectories and their verifier results validate (%d without a model answer)" % (
        len(files), unsampled)


run("harbor", "harbor", check)
