"""slime: not on PyPI (checked 2026-11), so its record type cannot be built here; where it is
installed in the conformance virtualenv (by hand), this check at least imports it."""

from conformance_common import finish, run, version

if version("slime") is None:
    finish("slime", None, "skip", "slime is not on PyPI (checked 2026-11): install it into the virtualenv by hand")


def check():
    from slime.utils.types import Sample  # noqa: F401

    return "importable"


run("slime", "slime", check)
