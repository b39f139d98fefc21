"""Eval files for the tests: councils, cases and evals written into a temporary folder."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

SOLO = """\
[council]
id = "solo"
task = "placeholder"

[[rooms]]
id = "desk"
members = ["solver"]

[[members]]
id = "solver"
role = "solver"
engine = "script"
script = [{ summary = "{{ task }} = 4" }]
"""

BOARD = """\
[council]
id = "board"
task = "placeholder"
chair = "chair"

[[rooms]]
id = "board"
members = ["a", "b", "c", "chair"]
rounds = 1
blind = true

[[decisions]]
id = "pick"
room = "board"
question = "Which?"
options = ["x", "y"]

[[members]]
id = "a"
role = "a"
engine = "script"

[[members.script]]
summary = "x"
posts = [{ room = "board", text = "x" }]
votes = [{ decision = "pick", choice = "x", reason = "because" }]

[[members]]
id = "b"
role = "b"
engine = "script"

[[members.script]]
summary = "x"
posts = [{ room = "board", text = "x" }]
votes = [{ decision = "pick", choice = "x", reason = "because" }]

[[members]]
id = "c"
role = "c"
engine = "script"

[[members.script]]
summary = "y"
posts = [{ room = "board", text = "y" }]
votes = [{ decision = "pick", choice = "y", reason = "contrary" }]

[[members]]
id = "chair"
role = "chair"
engine = "script"
script = [{ summary = "{{ task }} = 4 (x)" }]
"""


SOLO_HALF = SOLO.replace("{{ task }} = 4", "{% if task == '2+2' %}4{% else %}5{% endif %}")
"""The solo council, right on 2+2 and wrong on 1+3 (the board gets both right)."""


def board_vs_solo(eval_id: str, *, settings: str = "", tail: str = "") -> str:
    """An eval file: cases c1 (2+2) and c2 (1+3), both expecting 4; arms ``board`` and
    ``solo`` (board.toml, solo.toml); the check ``correct`` (the answer contains 4).

    ``settings``: more ``[eval]`` lines; ``tail``: more tables at the end.
    """
    return f"""\
[eval]
id = "{eval_id}"
{settings}
[[cases]]
id = "c1"
task = "2+2"
expected = "4"

[[cases]]
id = "c2"
task = "1+3"
expected = "4"

[[arms]]
id = "board"
council = "board.toml"

[[arms]]
id = "solo"
council = "solo.toml"

[[checks]]
id = "correct"
kind = "contains"
value = "{{{{ case.expected }}}}"
{tail}"""


def write(folder: Path, name: str, text: str) -> Path:
    """Write ``text`` (dedented) to ``folder/name``; return the path."""
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


@pytest.fixture
def councils(tmp_path: Path) -> Path:
    """``solo.toml`` and ``board.toml`` (script councils) in ``tmp_path``."""
    write(tmp_path, "solo.toml", SOLO)
    write(tmp_path, "board.toml", BOARD)
    return tmp_path
