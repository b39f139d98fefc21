"""A room with 10,000 messages: the list is virtualised, keys and typing still work."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("textual")

from wopdsl_tui import CouncilApp
from wopdsl_tui.widgets import Composer

import wopdsl
from tests.tui.conftest import settle, waiting

MESSAGES = 10_000
PER_TURN = 500


async def fill_a_room(db_path: Path) -> str:
    """Run a council whose member posts 10,000 short messages in 20 turns, then asks the
    human; return its id (the run waits for input: the composer takes text)."""
    council = wopdsl.Council("chatty", task="Talk a lot.", max_turns_per_member=MESSAGES)
    council.room("lobby", members=["chatter", "me"])
    council.human("me")

    @council.member(role="talks", max_output_bytes=1_000_000)
    def chatter(turn: wopdsl.Turn) -> wopdsl.Reply:
        base = (turn.turn - 1) * PER_TURN
        posts = [wopdsl.Post(room="lobby", text=f"line {base + i}") for i in range(PER_TURN)]
        # Mention itself to take another turn; at the end, ask the human.
        more = base + PER_TURN < MESSAGES
        posts[-1] = wopdsl.Post(room="lobby", text=f"line {base + PER_TURN - 1}",
                                mentions=["chatter" if more else "me"])
        return wopdsl.Reply(summary=f"Said {PER_TURN} more.", posts=posts)

    run = await council.arun(store=db_path, deterministic=True)
    assert run.status == "waiting-input"
    return run.run_id


async def test_ten_thousand_messages_scroll_and_type(db_path: Path) -> None:
    app = CouncilApp(wopdsl.attach(db_path, await fill_a_room(db_path)))
    async with app.run_test(size=(80, 24)) as pilot:
        app.animation_level = "none"
        await settle(pilot, waiting(app))
        view = app.room_view("lobby")
        height = view.size.height
        assert view.count == MESSAGES
        assert view.virtual_size.height == MESSAGES  # One line each at this width.
        assert view.line_text(MESSAGES - 1) == "chatter @me: line 9999"

        view.focus()
        await pilot.press("home")
        assert view.scroll_y == 0
        await pilot.press("pagedown", "pagedown")
        assert view.scroll_y == 2 * height
        await pilot.press("end")
        assert view.scroll_y == view.max_scroll_y == MESSAGES - height
        # Virtualised: only the lines that were on screen were ever rendered.
        assert view.rendered_lines <= 4 * height

        await pilot.press("ctrl+r", *"hi @ch")
        composer = app.query_one(Composer)
        assert app.focused is composer
        assert composer.value == "hi @ch"
