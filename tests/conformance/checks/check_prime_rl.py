"""prime-rl: not on PyPI (checked 2026-11), so its TrainingSample cannot be built here."""

from conformance_common import run


def check():
    from prime_rl.transports.rollouts.types import TrainingSample  # noqa: F401

    return "importable"


run("prime-rl", "prime-rl", check)
