"""tinyini: a small INI-style configuration reader."""

from .config import Config
from .errors import ConfigError, MissingKeyError, ParseError

__all__ = ["Config", "ConfigError", "MissingKeyError", "ParseError"]
__version__ = "0.4.1"
