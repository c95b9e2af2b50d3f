"""prime-rl: not on PyPI (checked 2026-11), so its record type cannot be built here; where it is
installed in the conformance virtualenv (by hand), this check at least imports it."""

from conformance_common import finish, run, version

if version("prime-rl") is None:
    finish("prime-rl", None, "skip", "prime-rl is not on PyPI (checked 2026-11): install it into the virtualenv by hand")


def check():
    from prime_rl.transports.rollouts.types import TrainingSample  # noqa: F401

    return "importable"


run("prime-rl", "prime-rl", check)
