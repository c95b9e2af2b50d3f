"""slime: not on PyPI (checked 2026-11), so its Sample cannot be built here."""

from conformance_common import run


def check():
    from slime.utils.types import Sample  # noqa: F401

    return "importable"


run("slime", "slime", check)
