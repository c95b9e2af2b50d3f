"""Turns INI text into a dict of sections, each a dict of raw string values."""

from __future__ import annotations

from .errors import ParseError

DEFAULT_SECTION = "DEFAULT"


def parse(text: str) -> dict[str, dict[str, str]]:
    """Parses INI text. Keys are lower-cased; values keep their inner whitespace.

    A line that starts with whitespace continues the previous value (joined with a newline).
    """
    sections: dict[str, dict[str, str]] = {DEFAULT_SECTION: {}}
    current = sections[DEFAULT_SECTION]
    last_key: str | None = None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip()
        stripped = line.strip()
        if not stripped or stripped[0] in "#;":
            continue
        if raw[0] in " \t" and last_key is not None:
            current[last_key] += "\n" + stripped
            continue
        if stripped.startswith("["):
            if not stripped.endswith("]") or len(stripped) < 3:
                raise ParseError(f"malformed section header {stripped!r}", number)
            name = stripped[1:-1].strip()
            current = sections.setdefault(name, {})
            last_key = None
            continue
        for sep in ("=", ":"):
            if sep in stripped:
                key, value = stripped.split(sep, 1)
                break
        else:
            raise ParseError(f"expected 'key = value', got {stripped!r}", number)
        key = key.strip().lower()
        if not key:
            raise ParseError("empty key", number)
        current[key] = value.strip()
        last_key = key
    return sections
