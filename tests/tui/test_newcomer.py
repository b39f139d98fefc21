"""What a newcomer meets in `wop tui`, driven with a real Textual Pilot: a model member's
text while it streams (not its JSON), a composer that says up front where nobody may post,
and roles shown whole."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("textual")

from wopdsl_tui import CouncilApp
from wopdsl_tui.widgets import Composer, Notice, Roster

import wopdsl
from tests.tui.conftest import ADVISORY_BOARD, finished, phase, settle, waiting
from tests.tui.test_app import text_of

POST = "The weakest claim is that feature flags remove all merge risk."


async def test_a_streaming_model_member_shows_the_text_it_writes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("openai", reason="the llm extra (wopdsl[llm]) is not installed")
    from wopdsl.testing.model_server import Answer, ScriptedModelServer

    council = wopdsl.Council("critique", task="Review the plan.")
    council.model("m", model="test-model")
    council.room("desk", members=["critic"])
    council.add_member("critic", role="critic", engine="llm", model="m")
    answer = {"summary": "Named the weakest claim.",
              "posts": [{"roomId": "desk", "text": POST, "mentions": []}]}
    with ScriptedModelServer([Answer(answer, chunks=16, chunk_delay_s=0.3)]) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        # The real clock: a fixed one never lets 50 ms pass between chunk events.
        app = CouncilApp(council, store=tmp_path / "runs.db")
        async with app.run_test(size=(100, 30)) as pilot:
            roster = app.query_one(Roster)

            def writing() -> str:
                lines = [line.strip() for line in text_of(roster).splitlines()]
                return next((line[2:] for line in lines if line.startswith("▸ ")), "")

            # Mid-answer: the words of the post so far, never the JSON around them.
            await settle(pilot, lambda: len(writing()) > 12 and phase(app, "critic")
                         == "running")
            seen = writing()
            # The roster shows the end of the text so far (as much as fits): under load more
            # than that may have streamed by now, so the words are a part of the post.
            assert seen.rstrip("…") in POST, seen
            assert not any(mark in seen for mark in ('{', '"', "summary", "roomId"))
            chunks = [e for e in app.fold.events if e.type == "output.chunk"]
            assert chunks and app.fold.streams["critic"].startswith('{"summary"')
            await settle(pilot, finished(app))
            assert writing() == ""  # The turn landed: the message is in the room.
            assert [m.text for m in app.fold.rooms["desk"].messages] == [POST]


async def test_the_composer_is_closed_for_an_ended_run(db_path: Path) -> None:
    app = CouncilApp(wopdsl.load(ADVISORY_BOARD), store=db_path, deterministic=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, waiting(app))
        composer = app.query_one(Composer)
        assert not composer.disabled
        await pilot.press(*"Ship it @strategist", "enter")
        await settle(pilot, finished(app))
        assert composer.disabled and app.focused is not composer
        assert text_of(app.query_one(Notice)) == (
            "The run has completed; it takes no more messages.")
    # Attached later, the same: nothing to type into, and why.
    again = CouncilApp(wopdsl.attach(db_path, "advisory-board-1"))
    async with again.run_test(size=(80, 24)) as pilot:
        await settle(pilot, finished(again))
        assert again.query_one(Composer).disabled
        assert text_of(again.query_one(Notice)).startswith("The run has completed")
        await pilot.press("ctrl+r", *"late", "enter")
        assert again.query_one(Composer).value == ""


async def test_roles_are_shown_whole_in_the_roster(db_path: Path) -> None:
    council = wopdsl.Council("desk", task="Plan the release.")
    council.room("plan", members=["lead", "me"])
    council.add_member("lead", role="principal engineer for release tooling and docs",
                       engine="script", script=[{"summary": "Planned."}])
    council.human("me", role="product owner who signs off")
    app = CouncilApp(council, store=db_path, deterministic=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, finished(app))
        lines = text_of(app.query_one(Roster)).splitlines()
        shown = " ".join(" ".join(lines).split())
        assert "principal engineer for release tooling and docs" in shown
        assert "product owner who signs off · human" in shown
        assert "…" not in shown
        assert lines[0].split() == ["lead", "done"]
        assert lines[-1].split()[-2:] == ["0/8", "turns"]
