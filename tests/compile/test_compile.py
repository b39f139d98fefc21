"""compile(): a checked declaration in, the immutable graph the engine runs out."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.published import RELEASE_TEAM_TOML, decorated_release_team
from wopdsl import Council, DeclarationError, compile, load
from wopdsl.declare import loads_spec


def test_the_published_council_compiles_to_its_graph() -> None:
    graph = compile(loads_spec(RELEASE_TEAM_TOML))

    assert list(graph.members) == ["writer", "reviewer"]
    assert list(graph.rooms) == ["review"]
    writer = graph.members["writer"]
    assert (writer.cap, writer.rooms, writer.index) == (2, ("review",), 0)
    assert graph.members["reviewer"].spec.initial_turn is False
    assert graph.digest == loads_spec(RELEASE_TEAM_TOML).digest()
    assert graph.unbound() == []


def test_every_problem_is_reported_together(tmp_path: Path) -> None:
    text = RELEASE_TEAM_TOML.replace('brief = "Draft the release note."',
                                     'brief = "{{ broken "')
    text = text.replace('brief = "Check the draft."', 'brief = "{% if %}"')
    path = tmp_path / "council.toml"
    path.write_text(text, encoding="utf-8")

    with pytest.raises(DeclarationError) as caught:
        load(path).compile()

    problems = caught.value.problems
    assert [p.path.split(".")[-1] for p in problems] == ["brief", "brief"]
    lines = text.splitlines()
    expected = [lines.index('brief = "{{ broken "') + 1, lines.index('brief = "{% if %}"') + 1]
    assert [p.line for p in problems] == expected
    assert all(p.source == str(path) for p in problems)


def test_a_handler_bound_to_no_member_is_refused() -> None:
    council = decorated_release_team()
    council.bind("ghost")(lambda turn: {"summary": "boo"})

    with pytest.raises(DeclarationError, match="a handler is bound to 'ghost'"):
        council.compile()


def test_a_council_compiles_once_until_it_changes() -> None:
    council = Council.from_spec(loads_spec(RELEASE_TEAM_TOML))
    first = council.compile()
    assert council.compile() is first
    council.bind("writer")(lambda turn: {"summary": "again"})
    assert council.compile() is not first
