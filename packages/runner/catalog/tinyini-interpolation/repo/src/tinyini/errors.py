"""Errors raised by tinyini."""


class ConfigError(Exception):
    """Base class of every tinyini error."""


class ParseError(ConfigError):
    """The text is not valid INI. `line` is 1-based."""

    def __init__(self, message: str, line: int) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line


class MissingKeyError(ConfigError, KeyError):
    """A section or key that was asked for does not exist."""

    def __init__(self, section: str, key: str | None = None) -> None:
        what = f"section [{section}]" if key is None else f"key '{key}' in section [{section}]"
        super().__init__(f"no {what}")
        self.section = section
        self.key = key

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0])
