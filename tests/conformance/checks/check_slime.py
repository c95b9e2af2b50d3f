"""slime: not on PyPI (checked 2026-11: the PyPI name `slime` is an unrelated 4.5 kB 0.0.0 sdist;
THUDM/slime is on GitHub, which this machine cannot reach), so its `Sample` cannot be built here.
The doc example (examples/trainers/slime_generate.py) still runs against the live server, filling
a stand-in with slime's `Sample` fields and `Status` values at the pinned commit
(docs/reference/trainers.md); where slime is installed in the virtualenv (by hand) it fills slime's own
`Sample`. Without slime the result is a skip that says the example ran, never a pass."""

import asyncio
import enum
from dataclasses import dataclass, field

from conformance_common import INFERENCE, SERVE_URL, TASKS, finish, run, version


@dataclass
class StandInSample:
    """slime 624b824 slime/utils/types.py `Sample`: the fields the generate function sets or reads."""

    class Status(enum.Enum):
        PENDING = "pending"
        COMPLETED = "completed"
        TRUNCATED = "truncated"
        ABORTED = "aborted"
        FAILED = "failed"

    index: int = 0
    tokens: list = field(default_factory=list)
    response_length: int = 0
    loss_mask: list = None
    rollout_log_probs: list = None
    reward: float = None
    status: "StandInSample.Status" = Status.PENDING
    metadata: dict = field(default_factory=dict)


def run_example(sample_type):
    from slime_generate import make_generate

    generate = make_generate(SERVE_URL, lambda args: INFERENCE)
    sample = sample_type(index=0, metadata={"task": TASKS["whole"]})
    sample = asyncio.run(generate(None, sample, {"temperature": 1.0}))
    assert sample.response_length == len(sample.loss_mask) == len(sample.rollout_log_probs) > 0
    assert sample.tokens and isinstance(sample.status, sample_type.Status) and sample.reward is not None
    return sample


if version("slime") is None:
    try:
        got = run_example(StandInSample)
    except Exception as err:  # noqa: BLE001 - the example itself failing is a failure, installable or not
        finish("slime", None, "fail", "examples/trainers/slime_generate.py: %s: %s" % (type(err).__name__, err))
    finish("slime", None, "skip", "slime is not on PyPI (checked 2026-11): the example ran (a sample of %d "
           "response tokens, status %s) into a stand-in with slime's fields" % (got.response_length, got.status.value))


def check():
    from slime.utils.types import Sample

    s = run_example(Sample)
    return "the example filled slime's Sample (%d response tokens)" % s.response_length


run("slime", "slime", check)
