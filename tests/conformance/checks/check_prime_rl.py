"""prime-rl: not on PyPI (checked 2026-11: `pip index versions prime-rl` finds nothing; its
repository is on GitHub, which this machine cannot reach), so its `TrainingSample` cannot be built
here. The doc example (examples/trainers/prime_samples.py) still runs against the live server and
must give samples with exactly the fields of prime-rl's `TrainingSample` at the pinned commit
(docs/reference/trainers.md); where prime-rl is installed in the virtualenv (by hand) the struct is built
from each. Without it the result is a skip that says the example ran, never a pass."""

from conformance_common import INFERENCE, SERVE_URL, TASKS, finish, run, version

# prime-rl a608ad9: src/prime_rl/transports/rollouts/types.py, TrainingSample's fields in order
FIELDS = ["token_ids", "mask", "logprobs", "temperatures", "env_name", "advantages"]


def example_samples():
    from prime_samples import training_samples

    samples = training_samples(SERVE_URL, "prime-live", TASKS["whole"], INFERENCE, group_size=TASKS["group_size"])
    assert samples, "the example gave no sample"
    for d in samples:
        assert list(d) == FIELDS, list(d)
        n = len(d["token_ids"])
        assert n == len(d["mask"]) == len(d["logprobs"]) == len(d["temperatures"]) == len(d["advantages"])
        assert any(d["mask"]) and all(a == 0 for a, m in zip(d["advantages"], d["mask"]) if not m)
    return samples


if version("prime-rl") is None:
    try:
        got = example_samples()
    except Exception as err:  # noqa: BLE001 - the example itself failing is a failure, installable or not
        finish("prime-rl", None, "fail", "examples/trainers/prime_samples.py: %s: %s" % (type(err).__name__, err))
    finish("prime-rl", None, "skip", "prime-rl is not on PyPI (checked 2026-11): the example ran (%d samples with "
           "TrainingSample's fields); the struct itself is built only where prime-rl is installed by hand" % len(got))


def check():
    from prime_rl.transports.rollouts.types import TrainingSample

    samples = [TrainingSample(**d) for d in example_samples()]
    return "%d TrainingSamples from the example" % len(samples)


run("prime-rl", "prime-rl", check)
