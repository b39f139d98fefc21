"""The live view and reply box in-process (real ipywidgets objects, no kernel)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from tests.conftest import HUMAN, MakeCouncil
from wopdsl import Post, Reply, Turn
from wopdsl.jupyter import INSTALL_HINT, LiveView, show


def asker(turn: Turn) -> Reply:
    if not turn.triggers:
        return Reply(summary="asked", posts=[Post(room="all", text="ok?", mentions=["me"])])
    return Reply(summary="done: " + turn.triggers[-1].text)


async def test_view_follows_a_background_run(make_council: MakeCouncil, db_path: Path) -> None:
    gate = asyncio.Event()

    async def slow(turn: Turn) -> Reply:
        await gate.wait()
        return Reply(summary="slow", posts=[Post(room="all", text="finally")])

    run = make_council({"slow": slow}).start(store=db_path)
    view = LiveView(run)
    view.follow()
    assert view.following and view.status == "pending" and view.reply_box is None
    gate.set()
    assert await view.wait() == "completed"
    assert view.status == "completed" and "finally" in view.html
    assert view.last_sequence == len(run.events) - 1
    await asyncio.wait_for(asyncio.shield(view._task), 5)  # type: ignore[arg-type]
    assert not view.following  # a run that ended is not followed any more


async def test_reply_box_refuses_with_reason_then_sends(make_council: MakeCouncil,
                                                        db_path: Path) -> None:
    run = await make_council({"asker": asker, "me": HUMAN}).arun(store=db_path)
    view = LiveView(run)
    box = view.reply_box
    assert box is not None and view.widget.children[-1] is box.widget
    assert box.room.value == "all" and not box.button.disabled

    box.text.value = "   "
    assert await box.send() is None and "type a message first" in box.error.value

    box.text.value = "fine by me @ghost"
    assert await box.send() is None
    assert "error[validation_error]" in box.error.value and "@ghost" in box.error.value
    assert box.text.value == "fine by me @ghost"  # kept, to fix and send again
    assert len(run.messages) == 1

    box.text.value = "fine @asker"
    assert await box.send() == "team/me/2/0"
    assert box.text.value == "" and box.error.value == "" and box.sent == ["team/me/2/0"]
    assert await view.wait() == "completed"
    assert box.button.disabled and box.text.disabled  # nothing more to say to a finished run


async def test_reply_box_click_posts_in_a_task(make_council: MakeCouncil, db_path: Path) -> None:
    run = await make_council({"asker": asker, "me": HUMAN}).arun(store=db_path)
    box = LiveView(run).reply_box
    assert box is not None
    box.text.value = "go @asker"
    box.button.click()
    assert box.pending is not None and await box.pending == "team/me/2/0"
    assert await run.wait() == "completed"


async def test_reply_box_picks_member_and_room(make_council: MakeCouncil, db_path: Path) -> None:
    run = await make_council({"asker": asker, "me": HUMAN, "you": HUMAN},
                             rooms={"all": ["asker", "me", "you"], "side": ["me", "you"]}
                             ).arun(store=db_path)
    box = LiveView(run).reply_box
    assert box is not None
    assert list(box.member.options) == ["me", "you"] and box.member.layout.display == ""
    assert list(box.room.options) == ["all", "side"]
    assert box.room.value == "all"  # where the waiting member was asked
    box.member.value = "you"
    box.text.value = "psst @me"
    box.room.value = "side"
    assert await box.send() == "team/you/2/0"


async def test_no_reply_box_when_asked_not_to(make_council: MakeCouncil, db_path: Path) -> None:
    run = await make_council({"asker": asker, "me": HUMAN}).arun(store=db_path)
    assert LiveView(run, reply=False).reply_box is None


async def test_without_ipywidgets_the_view_says_how_to_install(
        make_council: MakeCouncil, db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = await make_council({"asker": asker, "me": HUMAN}).arun(store=db_path)
    monkeypatch.setitem(sys.modules, "ipywidgets", None)
    view = LiveView(run)
    assert view.widget is None and view.reply_box is None
    assert INSTALL_HINT == "pip install 'wopdsl[jupyter]'"
    assert "for a reply box install the jupyter extra" in view.html
    assert "pip install &#x27;wopdsl[jupyter]&#x27;" in view.html
    with pytest.raises(ImportError, match="widgets need ipywidgets: pip install"):
        LiveView(run, use_widgets=True)


async def test_show_without_ipython_names_the_extra(
        make_council: MakeCouncil, db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = await make_council({"asker": asker, "me": HUMAN}).arun(store=db_path)
    monkeypatch.setitem(sys.modules, "IPython.display", None)
    with pytest.raises(ImportError, match=r"run.show\(\) needs the jupyter extra: pip install"):
        show(run)
    with pytest.raises(ImportError, match="wopdsl\\[jupyter\\]"):
        run.show()


async def test_reply_box_opens_on_the_room_the_human_was_asked_in(
        make_council: MakeCouncil, db_path: Path) -> None:
    def ask_aside(turn: Turn) -> Reply:
        return Reply(summary="asked", posts=[Post(room="side", text="psst", mentions=["me"])])

    run = await make_council({"ask_aside": ask_aside, "me": HUMAN},
                             rooms={"all": ["ask_aside", "me"], "side": ["ask_aside", "me"]}
                             ).arun(store=db_path)
    box = LiveView(run).reply_box
    assert box is not None and list(box.room.options) == ["all", "side"]
    assert box.room.value == "side"
    box.room.value = "all"  # the user's pick is kept on later renders
    box.set_open(True, waiting=("me",))
    assert box.room.value == "all"
