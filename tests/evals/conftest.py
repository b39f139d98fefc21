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
