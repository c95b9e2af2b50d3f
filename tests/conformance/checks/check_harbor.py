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
    for f in files:
        with open(os.path.join(d, f)) as fh:
            t = Trajectory.model_validate(json.load(fh))
        assert [s.source for s in t.steps[:2]] == ["system", "user"]
        assert any(s.tool_calls for s in t.steps if s.source == "agent")
        assert any(s.observation for s in t.steps if s.source == "agent")
        with open(os.path.join(d, f[:-5] + ".verifier.json")) as fh:
            v = VerifierResult.model_validate(json.load(fh))
        assert v.rewards is not None and "reward" in v.rewards
    return "%d ATIF trajectories and their verifier results validate" % len(files)


run("harbor", "harbor", check)
