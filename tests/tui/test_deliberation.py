"""A deliberating council in the real app (Pilot): rounds, hidden posts, decisions, votes.

The launch board (councils/launch-board.toml) debates two blind, anonymous rounds and closes
two decisions before its chair answers; the vote board (tests/deliberation_councils) seats
the founder in a blind round, who votes from the composer with ``/vote`` (and ``ctrl+b``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("textual")

from wopdsl_tui import CouncilApp
from wopdsl_tui.widgets import Composer, DecisionsView, Notice, RoomPane

import wopdsl
from tests.cli.conftest import stored_events
from tests.tui.conftest import REPO, finished, room_lines, settle, waiting

LAUNCH_BOARD = REPO / "councils" / "launch-board.toml"
VOTE_BOARD = REPO / "tests" / "deliberation_councils" / "vote-board.toml"


def text_of(widget: object) -> str:
    return str(widget.render())  # type: ignore[attr-defined]


def round_bar(app: CouncilApp, room: str) -> str:
    pane = next(p for p in app.query(RoomPane) if p.room == room)
    return text_of(pane.bar) if pane.bar.display else ""


def founder_outputs(db_path: Path, run_id: str) -> list[object]:
    return [e["payload"]["outputs"] for e in stored_events(db_path, run_id)
            if e["type"] == "node.completed" and e.get("nodeId") == "founder"]


async def test_launch_board_shows_rounds_tally_dissent_and_the_answer(db_path: Path) -> None:
    app = CouncilApp(wopdsl.load(LAUNCH_BOARD), store=db_path, deterministic=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, finished(app))
        assert round_bar(app, "board") == \
            "2 of 2 rounds held · blind · anonymous · the debate is over"
        assert round_bar(app, "prep") == ""  # no rounds there
        lines = room_lines(app, "board")
        # The host's system turns are notes; the operator sees real names (not aliases).
        assert lines[0] == "-- Round 1 of 2 begins: 3 members answer."
        assert lines[1:5] == [
            "cmo: Hold: the campaign assets need another week.",
            "cfo: Hold. A launch week costs two weeks of runway, and the billing migration is not",
            "  done.",
            "cto: Ship. The release candidate passed every suite twice."]
        assert "-- Decision 'ship' closed: ship (ship 2, hold 1; 3 of 3 voted; 1 dissent)." \
            in lines
        assert not any("hidden until the round ends" in line for line in lines)
        panel = text_of(app.query_one(DecisionsView)).splitlines()
        assert panel == [
            "ship Ship v2 this week? [closed] ship (ship 2, hold 1; 3 of 3 voted)",
            "  dissent: cfo (hold): billing risk stands",
            "confidence How confident are we in this week's date (1-10)? [closed] 7 (median "
            "score; mean 6.33; 3 of 3 voted)",
            "  dissent: cfo (4): billing",
            "answer (chair): Decision: ship (ship 2, hold 1); confidence 7/10. Dissent: billing "
            "risk stands.",
        ]
        assert app.check_action("vote", ()) is False  # nobody at the screen votes here


async def test_the_founder_sees_hidden_posts_then_votes_with_slash_vote(db_path: Path) -> None:
    app = CouncilApp(wopdsl.load(VOTE_BOARD), store=db_path, deterministic=True)
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot, waiting(app))
        assert round_bar(app, "board") == "round 1 of 1 · blind · 2 of 3 answered"
        # The others' posts of the round are placeholders until it ends (as for a member).
        assert room_lines(app, "board") == [
            "-- Round 1 of 1 begins: 3 members answer.",
            "cfo answered round 1 — hidden until the round ends",
            "cto answered round 1 — hidden until the round ends",
        ]
        panel = text_of(app.query_one(DecisionsView))
        # The founder votes on it: no running tally to anchor on, only how many voted.
        assert panel.splitlines()[:2] == [
            "ship Ship v2 this week? [open] 2 of 3 voted · the votes show when it closes",
            "  vote: /vote ship ship|hold because …  (ctrl+b)",
        ]
        assert "speaks last, once every decision is closed" in panel
        composer = app.query_one(Composer)
        assert "/vote votes" in composer.placeholder
        assert app.check_action("vote", ()) is True

        # A refused vote says why, keeps the line, and saves nothing.
        before = len(stored_events(db_path, "vote-board-1"))
        await pilot.press(*"/vote ship later", "enter")
        await settle(pilot, lambda: "refused" in text_of(app.query_one(Notice)))
        assert "choice 'later' is not an option of decision 'ship' (ship, hold)" in \
            text_of(app.query_one(Notice))
        assert composer.value == "/vote ship later"
        assert len(stored_events(db_path, "vote-board-1")) == before
        composer.value = "/vote"
        await pilot.press("enter")
        await settle(pilot, lambda: "say what you vote" in text_of(app.query_one(Notice)))

        # ctrl+b starts the line; Tab completes the choice.
        composer.value = ""
        await pilot.press("ctrl+b")
        assert composer.value == "/vote ship " and app.focused is composer
        await pilot.press(*"ho", "tab", *"because billing risk", "enter")
        await settle(pilot, finished(app))

        assert founder_outputs(db_path, "vote-board-1") == [{
            "summary": "voted hold on ship",
            "votes": [{"decision": "ship", "choice": "hold", "reason": "billing risk"}]}]
        assert round_bar(app, "board") == "1 of 1 rounds held · blind · the debate is over"
        lines = room_lines(app, "board")
        assert lines[1:3] == ["cfo: Hold: the billing migration is not done.",
                              "cto: Ship: the release candidate passed every suite twice."]
        assert composer.value == ""
        assert text_of(app.query_one(DecisionsView)).splitlines() == [
            "ship Ship v2 this week? [closed] hold (ship 1, hold 2; 3 of 3 voted)",
            "  founder voted hold: billing risk",
            "  dissent: cto (ship): the candidate is green",
            "answer (chair): Decision: hold (ship 1, hold 2). Dissent: cto, the candidate is "
            "green.",
        ]
    assert wopdsl.attach(db_path, "vote-board-1").result["answer"] == \
        "Decision: hold (ship 1, hold 2). Dissent: cto, the candidate is green."


async def test_one_open_decision_needs_no_name(db_path: Path) -> None:
    app = CouncilApp(wopdsl.load(VOTE_BOARD), store=db_path, deterministic=True)
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot, waiting(app))
        await pilot.press(*"/vote SHIP because the suites are green", "enter")
        await settle(pilot, finished(app))
    assert founder_outputs(db_path, "vote-board-1") == [{
        "summary": "voted ship on ship",
        "votes": [{"decision": "ship", "choice": "ship", "reason": "the suites are green"}]}]
    assert wopdsl.attach(db_path, "vote-board-1").decisions[0]["outcome"] == "ship"
