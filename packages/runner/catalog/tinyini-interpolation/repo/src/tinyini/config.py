"""The Config object: typed access to parsed sections."""

from __future__ import annotations

from pathlib import Path

from .errors import ConfigError, MissingKeyError
from .parser import DEFAULT_SECTION, parse

_TRUE = {"1", "yes", "true", "on"}
_FALSE = {"0", "no", "false", "off"}
_MISSING = object()


class Config:
    """Parsed configuration. Every section inherits the keys of `DEFAULT`."""

    def __init__(self, sections: dict[str, dict[str, str]]) -> None:
        self._sections = sections

    @classmethod
    def from_string(cls, text: str) -> Config:
        return cls(parse(text))

    @classmethod
    def from_file(cls, path: str | Path) -> Config:
        return cls.from_string(Path(path).read_text(encoding="utf-8"))

    def sections(self) -> list[str]:
        """Section names in file order, without DEFAULT."""
        return [s for s in self._sections if s != DEFAULT_SECTION]

    def has_section(self, section: str) -> bool:
        return section in self._sections

    def keys(self, section: str) -> list[str]:
        merged = dict(self._sections[DEFAULT_SECTION])
        merged.update(self._section(section))
        return list(merged)

    def _section(self, section: str) -> dict[str, str]:
        try:
            return self._sections[section]
        except KeyError:
            raise MissingKeyError(section) from None

    def _raw(self, section: str, key: str) -> str:
        values = self._section(section)
        k = key.lower()
        if k in values:
            return values[k]
        if k in self._sections[DEFAULT_SECTION]:
            return self._sections[DEFAULT_SECTION][k]
        raise MissingKeyError(section, key)

    def get(self, section: str, key: str, default: object = _MISSING) -> str:
        """The value of `key` in `section` (or DEFAULT). Raises MissingKeyError unless a default is given."""
        try:
            return self._raw(section, key)
        except MissingKeyError:
            if default is _MISSING:
                raise
            return default  # type: ignore[return-value]

    def get_int(self, section: str, key: str) -> int:
        value = self.get(section, key)
        try:
            return int(value, 0)
        except ValueError:
            raise ConfigError(f"[{section}] {key} = {value!r} is not an integer") from None

    def get_bool(self, section: str, key: str) -> bool:
        value = self.get(section, key).lower()
        if value in _TRUE:
            return True
        if value in _FALSE:
            return False
        raise ConfigError(f"[{section}] {key} = {value!r} is not a boolean (yes/no, true/false, on/off, 1/0)")

    def get_list(self, section: str, key: str, sep: str = ",") -> list[str]:
        """Splits a value on `sep` (and newlines), dropping empty items."""
        value = self.get(section, key)
        items = []
        for line in value.split("\n"):
            items.extend(part.strip() for part in line.split(sep))
        return [item for item in items if item]
