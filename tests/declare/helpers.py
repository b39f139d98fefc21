"""Shared helpers for the declaration tests."""

from __future__ import annotations

import random
import textwrap

import pytest

from wopdsl.declare import loads_spec
from wopdsl.errors import DeclarationError, Problem
from wopdsl.model.spec import (
    CouncilSettings,
    CouncilSpec,
    MemberSpec,
    RoomSpec,
    ScriptPost,
    ScriptStep,
)

BASE = """\
[council]
id = "release-team"
task = "Prepare a release note."

[[rooms]]
id = "review"
members = ["writer", "reviewer"]

[[members]]
id = "writer"
role = "writer"
engine = "script"
script = [
  { summary = "asked", posts = [{ room = "review", text = "Please review", mentions = ["reviewer"] }] },
]

[[members]]
id = "reviewer"
role = "reviewer"
initial_turn = false
"""  # noqa: E501


def declaration_error(text: str) -> DeclarationError:
    """Load ``text`` and return the DeclarationError it must raise."""
    with pytest.raises(DeclarationError) as caught:
        loads_spec(textwrap.dedent(text), source="council.toml")
    return caught.value


def only_problem(text: str) -> Problem:
    error = declaration_error(text)
    assert len(error.problems) == 1, str(error)
    return error.problems[0]


def assert_at(problem: Problem, line: int, column: int, path: str, *fragments: str) -> None:
    """The problem sits at line:column, names the path, and its text has every fragment."""
    rendered = problem.render()
    assert (problem.line, problem.column) == (line, column), rendered
    assert problem.path == path, rendered
    assert rendered.startswith(f"council.toml:{line}:{column}: {path}: "), rendered
    for fragment in fragments:
        assert fragment in rendered, rendered
    assert problem.hint, rendered


# -- random valid councils (stdlib random, so runs are reproducible by seed) -----------

_ALPHABET = "aZ09._-"
_TEXT_CHARS = [
    "a",
    " ",
    "\n",
    "\r",
    "\t",
    '"',
    "'",
    "\\",
    "#",
    "=",
    "[",
    "{",
    "é",
    "🎉",
    "\x00",
    "\x1f",
    "\x7f",
    '"""',
    "'''",
]


def _ident(rng: random.Random) -> str:
    while True:
        ident = "".join(rng.choice(_ALPHABET) for _ in range(rng.randint(1, 8)))
        if ident not in (".", ".."):
            return ident


def _text(rng: random.Random) -> str:
    return "".join(rng.choice(_TEXT_CHARS) for _ in range(rng.randint(0, 12)))


def _json(rng: random.Random, depth: int = 0) -> object:
    kind = rng.randint(0, 7 if depth < 3 else 4)
    if kind == 0:
        return rng.randint(-(2**63), 2**63 - 1)
    if kind == 1:
        return rng.choice([0.0, -1.5, 1e300, 3.141592653589793, -2.5e-8])
    if kind == 2:
        return rng.random() < 0.5
    if kind in (3, 4):
        return _text(rng)
    if kind == 5:
        return [_json(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {_text(rng): _json(rng, depth + 1) for _ in range(rng.randint(0, 3))}


def random_spec(rng: random.Random) -> CouncilSpec:
    """A random council that passes every check (ids, rooms, scripts, mentions)."""
    ids = list(dict.fromkeys(_ident(rng) for _ in range(rng.randint(0, 5))))
    rooms = []
    for room_id in dict.fromkeys(_ident(rng) for _ in range(rng.randint(0, 3))):
        inside = rng.sample(ids, rng.randint(0, len(ids)))
        schema: dict[str, object] | None = None
        if rng.random() < 0.4:
            schema = {_text(rng): _json(rng) for _ in range(rng.randint(0, 4))}
        title = _text(rng) if rng.random() < 0.3 else None
        rooms.append(RoomSpec(id=room_id, members=inside, title=title, turn_schema=schema))
    members = []
    for member_id in ids:
        engine = rng.choice(["python", "script", "human"])
        extra: dict[str, object] = {}
        if engine == "script":
            own = [room for room in rooms if member_id in room.members]
            steps = []
            for _ in range(rng.randint(1, 3)):
                posts = []
                for room in rng.sample(own, rng.randint(0, len(own))):
                    mentions = rng.sample(room.members, rng.randint(0, len(room.members)))
                    posts.append(ScriptPost(room=room.id, text=_text(rng), mentions=mentions))
                data = _json(rng) if rng.random() < 0.5 else None
                steps.append(ScriptStep(summary=_text(rng), data=data, posts=posts))
            extra["script"] = steps
        elif engine == "python" and rng.random() < 0.5:
            extra["handler"] = "pkg.mod:fn"
        for key in ("max_turns", "turn_timeout_ms", "max_input_bytes", "max_output_bytes"):
            if rng.random() < 0.3:
                extra[key] = rng.randint(1, 1000)
        members.append(
            MemberSpec(
                id=member_id,
                role=_text(rng),
                brief=_text(rng),
                initial_turn=rng.random() < 0.5,
                engine=engine,  # type: ignore[arg-type]
                **extra,  # type: ignore[arg-type]
            )
        )
    settings = CouncilSettings(
        id=_ident(rng),
        task=_text(rng),
        version=rng.randint(1, 3),
        global_concurrency=rng.randint(1, 4),
        max_turns_per_member=rng.randint(1, 10),
        tail_messages=rng.randint(1, 30),
        timeout_ms=rng.choice([None, 1, 10_000]),
    )
    return CouncilSpec(council=settings, rooms=rooms, members=members)
