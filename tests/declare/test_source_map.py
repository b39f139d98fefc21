"""The private source map: where each key of a TOML text sits."""

from __future__ import annotations

import random
import tomllib

import pytest

from tests.declare.helpers import random_spec
from wopdsl.declare import to_toml
from wopdsl.declare._source_map import SourceMap, format_path, parse_path

TEXT = """\
# a comment with [brackets] and = signs
[council]
id = "c"   # trailing comment
"quoted key" = 'literal'
dotted.inner.leaf = 1

[[rooms]]
id = "a"
members = [
  "x",  # comment inside an array
  "y",
]

[[rooms]]
id = "b"
title = \"\"\"multi
line = not a key
[not.a.header]\"\"\"
members = []

[[members]]
id = "m"
script = [
  { summary = "s", posts = [{ room = "a", text = "t, with } and ]", mentions = ["x", "y"] }] },
  { summary = '''x''', data = { nested = { deep = [1, { k = "v" }] } } },
]

[[members.extra]]
k = 1

[[members]]
id = "n"

[members.table]
z = 1
"""


@pytest.fixture(scope="module")
def smap() -> SourceMap:
    return SourceMap(TEXT)


@pytest.mark.parametrize(
    ("path", "where"),
    [
        (("council",), (2, 1)),
        (("council", "id"), (3, 1)),
        (("council", "quoted key"), (4, 1)),
        (("council", "dotted"), (5, 1)),
        (("council", "dotted", "inner", "leaf"), (5, 14)),
        (("rooms", 0), (7, 1)),
        (("rooms", 0, "members", 0), (10, 3)),
        (("rooms", 0, "members", 1), (11, 3)),
        (("rooms", 1), (14, 1)),
        (("rooms", 1, "title"), (16, 1)),
        (("rooms", 1, "members"), (19, 1)),
        (("members", 0, "script", 0, "posts", 0, "room"), (24, 31)),
        (("members", 0, "script", 0, "posts", 0, "mentions", 1), (24, 86)),
        (("members", 0, "script", 1, "data", "nested", "deep", 1, "k"), (25, 57)),
        (("members", 0, "extra", 0, "k"), (29, 1)),
        (("members", 1, "id"), (32, 1)),
        (("members", 1, "table", "z"), (35, 1)),
    ],
)
def test_positions(smap: SourceMap, path: tuple[str | int, ...], where: tuple[int, int]) -> None:
    assert smap.position(path) == where


def test_headers_inside_strings_are_not_tables(smap: SourceMap) -> None:
    assert smap.position(("not",)) is None
    assert smap.position(("rooms", 1, "line")) is None


def test_locate_falls_back_to_the_nearest_enclosing_key(smap: SourceMap) -> None:
    assert smap.locate(("members", 1, "role")) == (31, 1)
    assert smap.locate(("members", 0, "script", 0, "posts", 0, "nope")) == (24, 29)
    assert smap.locate(("nothing",)) is None


def test_crlf_line_endings() -> None:
    smap = SourceMap('[council]\r\nid = "c"\r\n\r\n[[members]]\r\n  role = "r"\r\n')
    assert smap.position(("council", "id")) == (2, 1)
    assert smap.position(("members", 0, "role")) == (5, 3)


def test_duplicate_keys_are_recorded() -> None:
    smap = SourceMap("[t]\na = 1\nb.c = 2\nb.c = 3\n")
    assert smap.duplicates == [(("t", "b", "c"), (4, 1))]


def test_format_and_parse_paths() -> None:
    data = {"members": [{"id": "w"}, {"id": "a b"}], "rooms": [{"id": "r"}]}
    loc = ("members", 0, "script", 0, "data", "odd key", "$x", 2)
    text = format_path(loc, data)
    assert text == 'members[0] (w).script[0].data."odd key"."$x"[2]'
    assert parse_path(text) == loc
    assert format_path(("members", 1, "id"), data) == "members[1].id"
    assert parse_path("rooms (r).turn_schema", data) == ("rooms", 0, "turn_schema")
    assert parse_path("rooms (zz).turn_schema", data) == ("rooms", "turn_schema")


def _paths(node: object, prefix: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    found: list[tuple[str | int, ...]] = []
    items = (
        list(node.items())
        if isinstance(node, dict)
        else list(enumerate(node))
        if isinstance(node, list)
        else []
    )
    for key, value in items:
        found.append((*prefix, key))
        found += _paths(value, (*prefix, key))
    return found


@pytest.mark.parametrize("seed", range(40))
def test_every_key_of_an_exported_council_is_mapped(seed: int) -> None:
    spec = random_spec(random.Random(seed))
    text = to_toml(spec)
    smap = SourceMap(text)
    for path in _paths(tomllib.loads(text)):
        assert smap.position(path) is not None, (path, text)
