"""The composer's ``/vote`` line: parsed, and completed word by word."""

from __future__ import annotations

import pytest

pytest.importorskip("textual")

from wopdsl_tui.votes import VoteCommand, complete_vote, is_vote, parse_vote

BALLOTS = {"ship": ("ship", "hold"), "confidence": tuple(str(n) for n in range(1, 11))}


@pytest.mark.parametrize(("line", "vote"), [
    ("/vote ship hold because billing risk", VoteCommand("ship", "hold", "billing risk")),
    ("/vote ship hold Because: billing\nrisk", VoteCommand("ship", "hold", "billing\nrisk")),
    ("/vote ship hold", VoteCommand("ship", "hold", "")),
    ("/vote confidence 7 tests green", VoteCommand("confidence", "7", "tests green")),
    ("  /vote ship ship   because   green  ", VoteCommand("ship", "ship", "green")),
])
def test_parse(line: str, vote: VoteCommand) -> None:
    assert is_vote(line)
    assert parse_vote(line, BALLOTS, BALLOTS) == vote


def test_one_open_decision_may_go_unnamed() -> None:
    only = {"ship": ("ship", "hold")}
    assert parse_vote("/vote hold because billing", {"ship", "other"}, only) == \
        VoteCommand("ship", "hold", "billing")
    with pytest.raises(ValueError, match=r"'hold' is not a decision; say which one: "
                       r"/vote DECISION CHOICE because REASON \(open for you: ship, confidence\)"):
        parse_vote("/vote hold because billing", BALLOTS, BALLOTS)


@pytest.mark.parametrize(("line", "problem"), [
    ("/vote", "say what you vote: /vote DECISION CHOICE because REASON (open for you: ship, "
              "confidence)"),
    ("/vote ship", "say your choice: /vote ship ship|hold because REASON"),
])
def test_incomplete_lines_say_how(line: str, problem: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_vote(line, BALLOTS, BALLOTS)
    assert str(caught.value) == problem


def test_not_a_vote() -> None:
    assert not is_vote("/voters are people")
    assert not is_vote("I /vote ship")


@pytest.mark.parametrize(("typed", "completed"), [
    ("/v", "/vote"),
    ("/vote s", "/vote ship"),
    ("/vote c", "/vote confidence"),
    ("/vote ship H", "/vote ship hold"),
    ("/vote confidence 1", "/vote confidence 10"),
    ("/vote ship hold", None),   # complete already
    ("/vote ship hold x", None),  # the reason is free text
    ("/vote x", None),
    ("/note", None),
])
def test_completion(typed: str, completed: str | None) -> None:
    assert complete_vote(typed, BALLOTS) == completed


def test_nothing_to_complete_without_an_open_decision() -> None:
    assert complete_vote("/v", {}) is None
