"""Large council files of nested table headers: checked in linear time, refused with a place.

A header of two million dotted parts used to cost minutes twice over: the source map copied
every prefix of it (2·10¹² tuple items) and Python's TOML parser is quadratic in the parts of
one header. No time is asserted: the work is counted, and the `wop` subprocess runs under a
30 s CPU limit that the quadratic code could not meet by orders of magnitude.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from tests.bounded import bounded_wop
from wopdsl import DeclarationError
from wopdsl.declare import _source_map
from wopdsl.declare._source_map import MAX_DEPTH, SourceMap
from wopdsl.declare.toml import loads_declaration

HEAD = '[council]\nid = "big"\ntask = "t"\n'


def _long_header(parts: int, key: str = "a") -> str:
    return HEAD + "[" + ".".join([key] * parts) + "]\nv = 1\n"


def test_the_source_map_records_paths_down_to_a_bound() -> None:
    parts = 200_000  # Quadratic: 2·10¹⁰ items copied; linear: a few million.
    smap = SourceMap(_long_header(parts))
    offsets = smap._offsets
    assert max(len(path) for path in offsets) == MAX_DEPTH
    # Linear work: every recorded path is at most MAX_DEPTH long, and there are at most as
    # many as keys in the text (the old map recorded 200,000 paths of up to 200,000 items).
    assert sum(len(path) for path in offsets) <= MAX_DEPTH * MAX_DEPTH + 10
    assert smap.position(("a",) * 3) == (4, 1)  # A header's paths point at the header.
    assert smap.locate(("a",) * (MAX_DEPTH + 5)) == smap.position(("a",) * MAX_DEPTH)
    assert _source_map.MAX_DEPTH >= 2 * 32  # Twice the loader's nesting bound.


def test_deep_paths_keep_their_places_below_the_bound() -> None:
    text = HEAD + "[x.y]\nz.w = { k = [1, [2, { deep = 3 }]] }\n"
    smap = SourceMap(text)
    assert smap.position(("x", "y", "z", "w", "k", 1, 1, "deep")) == (5, 23)
    assert smap.duplicates == []
    dup = SourceMap(HEAD + "[x]\na.b = 1\na.b = 2\n")
    assert [path for path, _ in dup.duplicates] == [("x", "a", "b")]


def test_a_long_dotted_header_is_refused_before_the_parser_sees_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = tomllib.loads

    def counting(text: str, **kwargs: object) -> object:
        calls.append(len(text))
        return real(text, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(tomllib, "loads", counting)
    with pytest.raises(DeclarationError) as caught:
        loads_declaration(_long_header(2_000_000), "big.toml")
    (problem,) = caught.value.problems
    assert (problem.source, problem.line, problem.column) == ("big.toml", 4, 2)
    assert "more than 32 dotted parts" in problem.message
    assert "flatten" in (problem.hint or "")
    assert calls == []  # The quadratic parser never ran.
    # Quoted parts count too; a long dotted word inside a string is no key.
    with pytest.raises(DeclarationError, match="dotted parts"):
        loads_declaration(HEAD + "[" + ".".join(['"q"'] * 40) + "]\n", "q.toml")
    text = HEAD + 'note = "' + ".".join(["a"] * 40) + '"\n'
    with pytest.raises(DeclarationError) as other:
        loads_declaration(text, "s.toml")
    assert "dotted parts" not in str(other.value)
    assert calls  # That one was parsed (and refused for its unknown key).


def test_dotted_keys_within_the_bound_still_load() -> None:
    dotted = ".".join(f"k{i}" for i in range(20))
    text = HEAD + ('[[members]]\nid = "m"\nrole = "r"\nengine = "script"\n'
                   f'script = [{{ summary = "s", data = {{ {dotted} = 1 }} }}]\n')
    data = loads_declaration(text).spec.members[0].script[0].data
    for index in range(20):
        data = data[f"k{index}"]
    assert data == 1


@pytest.mark.slow
@pytest.mark.parametrize("shape", ["one-header", "many-headers"])
def test_wop_validate_on_a_4_mb_file_of_nested_headers_answers(tmp_path: Path,
                                                               shape: str) -> None:
    if shape == "one-header":
        text = _long_header(2_000_000)
    else:  # Two hundred thousand headers, each up to 31 levels deep.
        lines = [HEAD]
        size, index = 0, 0
        while size < 4_000_000:
            depth = 1 + index % 30
            line = "[x." + ".".join(f"k{j}" for j in range(depth)) + f".n{index}]\nv = 1\n"
            lines.append(line)
            size += len(line)
            index += 1
        text = "".join(lines)
    assert len(text) > 4_000_000
    (tmp_path / "big.toml").write_text(text, encoding="utf-8")
    done = bounded_wop("validate", "big.toml", cwd=tmp_path, timeout=300)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "error[DECLARATION_INVALID]" in done.stderr
    assert "big.toml:" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr) < 10_000
