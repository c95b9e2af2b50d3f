import pytest

from tinyini import Config, MissingKeyError, ParseError

SAMPLE = """
# a comment
name = demo

[server]
Host = example.org
port: 8080
debug = yes
paths = /a, /b,
    /c

[empty]
"""


def test_sections_in_order():
    assert Config.from_string(SAMPLE).sections() == ["server", "empty"]


def test_keys_are_case_insensitive():
    cfg = Config.from_string(SAMPLE)
    assert cfg.get("server", "HOST") == "example.org"


def test_default_section_is_inherited():
    cfg = Config.from_string(SAMPLE)
    assert cfg.get("server", "name") == "demo"
    assert cfg.get("empty", "name") == "demo"


def test_typed_getters():
    cfg = Config.from_string(SAMPLE)
    assert cfg.get_int("server", "port") == 8080
    assert cfg.get_bool("server", "debug") is True
    assert cfg.get_list("server", "paths") == ["/a", "/b", "/c"]


def test_missing_key_names_section_and_key():
    cfg = Config.from_string(SAMPLE)
    with pytest.raises(MissingKeyError) as err:
        cfg.get("server", "nope")
    assert str(err.value) == "no key 'nope' in section [server]"
    assert cfg.get("server", "nope", default="x") == "x"


def test_parse_error_has_line_number():
    with pytest.raises(ParseError) as err:
        Config.from_string("[ok]\njust text\n")
    assert err.value.line == 2
