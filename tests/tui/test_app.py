"""The real app under Textual's Pilot: watch a council finish, join it, refused posts, keys."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("textual")

from textual.widgets import Log, Static
from wopdsl_tui import CouncilApp
from wopdsl_tui.widgets import Composer, ErrorDetails, Notice, Roster, StatusLine

import wopdsl
from tests.conftest import build_council
from tests.tui.conftest import (
    ADVISORY_BOARD,
    RELEASE_TEAM,
    drawn,
    finished,
    room_lines,
    room_texts,
    settle,
    waiting,
)


def text_of(widget: Notice | StatusLine | Roster) -> str:
    return str(widget.render())


async def test_watch_a_council_finish(db_path: Path) -> None:
    app = CouncilApp(wopdsl.load(RELEASE_TEAM), store=db_path, deterministic=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, finished(app))
        assert room_texts(app, "review") == [
            ("writer", "Please review: Prepare a release note."),
            ("reviewer", "Reviewed team/writer/1/0: Please review: Prepare a release note."),
        ]
        assert room_lines(app, "review")[0] == "writer @reviewer: Please review: Prepare a"
        status = text_of(app.query_one(StatusLine))
        run = wopdsl.attach(db_path, "release-team-1")
        assert status == f"release-team-1 │ completed │ batch 3 │ {len(run.events)} events"
        roster = text_of(app.query_one(Roster)).splitlines()
        assert roster[0].split() == ["writer", "done"]
        assert roster[1].split() == ["writer", "2/2", "turns"]
        assert roster[2].split() == ["reviewer", "done"]
        assert roster[3].split() == ["reviewer", "1/2", "turns"]
        # No human member: no composer, and no Reply key.
        assert not app.query_one("#composer-box").display
        assert app.check_action("focus_composer", ()) is False


async def test_the_fold_agrees_with_the_run_snapshot(db_path: Path) -> None:
    app = CouncilApp(wopdsl.load(ADVISORY_BOARD), store=db_path, deterministic=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, waiting(app))
        assert app.council_run is not None
        snapshot = app.council_run.snapshot()
        assert app.fold.status == snapshot["status"] == "waiting-input"
        for member in app.fold.members.values():
            node = snapshot["nodeStates"][member.id]
            assert (app.fold.phase(member.id), member.turns, member.cap) == (
                node["status"], node["turns"], node["maxTurns"])
        for room in app.fold.rooms.values():
            assert [m.id for m in room.messages] == [
                m["messageId"] for m in snapshot["channels"][room.id]]


async def test_join_when_the_run_asks_the_human(db_path: Path) -> None:
    app = CouncilApp(wopdsl.load(ADVISORY_BOARD), store=db_path, deterministic=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, waiting(app))
        # The turn was requested in the board room: that tab is active and typing goes
        # straight into the composer.
        composer = app.query_one(Composer)
        assert app.focused is composer
        assert app.active_room == "board"
        assert "founder → board · your turn:" in text_of(app.query_one(Notice))
        assert "waiting for founder" in text_of(app.query_one(StatusLine))
        assert text_of(app.query_one(Roster)).splitlines()[0].split() == [
            "founder", "waiting", "for", "input"]

        await pilot.press(*"Go @st")
        await pilot.press("tab")  # Completes the mention from the room's members.
        assert composer.value == "Go @strategist "
        await pilot.press(*"now", "enter")
        await settle(pilot, finished(app))

        assert composer.value == ""
        assert room_texts(app, "board")[-2:] == [
            ("founder", "Go @strategist now"),
            ("strategist", "Announcement drafted after the founder's call: Go @strategist now"),
        ]
        assert app.room_view("board").messages[-2].mentions == ["strategist"]
    assert wopdsl.attach(db_path, "advisory-board-1").status == "completed"


async def test_refused_posts_show_why_and_keep_the_text(db_path: Path) -> None:
    app = CouncilApp(wopdsl.load(ADVISORY_BOARD), store=db_path, deterministic=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, waiting(app))
        saved = app.fold.last_sequence
        composer = app.query_one(Composer)
        notice = app.query_one(Notice)

        # Not a member of the product room: the composer says so before anything is typed.
        await pilot.press(*"News?")
        await pilot.press("ctrl+n")
        assert app.active_room == "product"
        assert composer.disabled and app.focused is not composer
        assert text_of(notice) == ("founder is not in room product (strategist, engineer); "
                                   "Ctrl+N / Ctrl+P for another room.")
        await pilot.press(*"more", "enter")
        assert composer.value == "News?" and app.fold.last_sequence == saved

        # A mention of someone outside the room.
        await pilot.press("ctrl+p")
        assert app.active_room == "board"
        assert not composer.disabled
        assert "refused" not in text_of(notice)
        await pilot.press("ctrl+r", "ctrl+u", *"@ghost", "enter")
        await settle(pilot, lambda: "refused" in text_of(notice))
        assert "mention '@ghost' is not a member of room 'board'" in text_of(notice)
        assert composer.value == "@ghost"
        assert app.fold.last_sequence == saved  # Nothing was appended.
        assert app.run_status == "waiting-input"


async def test_turn_schema_and_closed_conversation_refusals(db_path: Path) -> None:
    council = wopdsl.Council("front-desk", task="Answer the desk.", max_turns_per_member=3)
    # The desk wants every post to mention someone.
    council.room("desk", members=["me", "helper"], turn_schema={
        "type": "object", "required": ["mentions"],
        "properties": {"mentions": {"type": "array", "minItems": 1}}})
    council.room("notes", members=["me", "helper"])
    council.human("me")
    council.add_member("helper", role="helper", engine="script", script=[
        {"summary": "Asked.", "posts": [
            {"room": "desk", "text": "What do you need?", "mentions": ["me"]}]},
        {"summary": "Helped.", "posts": [
            {"room": "desk", "text": "On it.", "mentions": ["me"]}]},
    ])
    app = CouncilApp(council, store=db_path, deterministic=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, waiting(app))
        notice = app.query_one(Notice)
        composer = app.query_one(Composer)
        assert app.focused is composer
        await pilot.press(*"hi", "enter")
        await settle(pilot, lambda: "refused" in text_of(notice))
        assert "breaks the turn_schema of room 'desk'" in text_of(notice)
        assert composer.value == "hi"

        # Close the notes room (RFC 0005 §E close): its composer says so, before any Enter.
        assert app.council_run is not None
        await app.council_run.close(room="notes", as_="me")
        await settle(pilot, lambda: app.fold.rooms["notes"].closed and drawn(app))
        await pilot.press("ctrl+n")
        assert app.active_room == "notes"
        assert composer.disabled
        assert text_of(notice) == "The conversation of room notes is closed."
        assert composer.value == "hi"

        await pilot.press("ctrl+p", "ctrl+r", "ctrl+u", *"@he", "tab", "enter")
        await settle(pilot, lambda: len(app.fold.rooms["desk"].messages) == 3
                     and waiting(app)())
        assert room_texts(app, "desk") == [
            ("helper", "What do you need?"), ("me", "@helper"), ("helper", "On it.")]
        assert composer.value == ""


async def test_keys_toggle_events_and_ids(db_path: Path) -> None:
    app = CouncilApp(wopdsl.load(RELEASE_TEAM), store=db_path, deterministic=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, finished(app))
        events = app.query_one("#events", Log)
        assert not events.display
        await pilot.press("ctrl+t")
        assert events.display
        assert events.lines[0].split() == ["0", "run.started", "release-team"]
        assert events.lines[-1].split() == [str(app.fold.last_sequence), "run.completed"]
        await pilot.press("ctrl+t")
        assert not events.display

        await pilot.press("ctrl+o")
        assert room_lines(app, "review")[0].startswith("writer team/writer/1/0 @reviewer:")
        await pilot.press("ctrl+o")
        assert room_lines(app, "review")[0].startswith("writer @reviewer:")


async def test_a_failed_run_shows_its_error_code(db_path: Path) -> None:
    def broken(turn: wopdsl.Turn) -> wopdsl.Reply:
        raise RuntimeError("no draft today")

    council = build_council({"writer": broken})
    app = CouncilApp(council, store=db_path, deterministic=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, finished(app, "failed"))
        status = text_of(app.query_one(StatusLine)).splitlines()
        assert status[0].startswith("team-1 │ failed │ batch 1 │")
        assert status[1].startswith("error[TEAM_NODE_FAILED] (writer): member writer failed")
        assert text_of(app.query_one(Roster)).splitlines()[0].split() == ["writer", "failed"]


async def test_a_council_without_rooms(db_path: Path) -> None:
    def solo(turn: wopdsl.Turn) -> wopdsl.Reply:
        return wopdsl.Reply(summary="Done alone.")

    app = CouncilApp(build_council({"solo": solo}, rooms={}), store=db_path, deterministic=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, finished(app))
        assert app.active_room is None
        assert text_of(app.query_one(Roster)).splitlines()[0].split() == ["solo", "done"]


async def test_the_error_details_show_a_failed_handlers_traceback(db_path: Path) -> None:
    def broken(turn: wopdsl.Turn) -> wopdsl.Reply:
        raise RuntimeError("no draft \x1b[2Jtoday")

    app = CouncilApp(build_council({"writer": broken}), store=db_path, deterministic=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, finished(app, "failed"))
        details = app.query_one(ErrorDetails)
        assert not details.display
        await pilot.press("ctrl+e")
        await pilot.pause()
        assert details.display
        shown = str(details.query_one("#error-text", Static).render())
        lines = shown.splitlines()
        assert lines[0] == "writer: error[TEAM_NODE_FAILED]: writer raised RuntimeError: no " \
                           "draft \\x1b[2Jtoday"
        assert lines[1] == "Traceback (most recent call last):"
        assert 'raise RuntimeError("no draft \\x1b[2Jtoday")' in shown
        end = lines.index("RuntimeError: no draft \\x1b[2Jtoday")
        # Then the run's own failure, which records no traceback.
        assert lines[end + 1] == ""
        assert lines[end + 2].startswith("writer: error[TEAM_NODE_FAILED]: member writer failed")
        assert "\x1b" not in shown  # Escaped: the handler's text never acts on the terminal.
        await pilot.press("ctrl+e")
        assert not details.display


async def test_the_errors_key_is_offered_only_after_a_failure(db_path: Path) -> None:
    app = CouncilApp(wopdsl.load(RELEASE_TEAM), store=db_path, deterministic=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, finished(app))
        assert app.check_action("toggle_errors", ()) is False
        await pilot.press("ctrl+e")
        assert not app.query_one(ErrorDetails).display
