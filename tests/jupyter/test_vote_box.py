"""The live view's vote box in-process (real ipywidgets objects, no kernel)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

import wopdsl
from wopdsl.jupyter import LiveView

pytest.importorskip("ipywidgets")

VOTE_BOARD = Path(__file__).resolve().parents[2] / "tests" / "deliberation_councils" / \
    "vote-board.toml"


async def test_the_box_offers_the_open_decision_and_hides_once_it_closed(db_path: Path) -> None:
    run = await wopdsl.load(VOTE_BOARD).arun(store=db_path)
    assert LiveView(run, reply=False).vote_box is None
    view = LiveView(run)
    box = view.vote_box
    assert box is not None and box.widget in view.widget.children
    assert list(box.decision.options) == ["ship"] and box.decision.value == "ship"
    assert list(box.choice.options) == ["ship", "hold"]
    assert box.member.value == "founder" and box.member.layout.display == "none"
    assert box.widget.layout.display == "" and not box.button.disabled

    await run.vote("ship", "hold")  # voted elsewhere: the round ends, the decision closes
    await run.wait()
    view.refresh()
    assert box.widget.layout.display == "none" and box.button.disabled
    assert await box.send() is False
    assert "no decision is open for you" in box.error.value


async def test_a_click_votes_and_a_refusal_keeps_the_reason(db_path: Path) -> None:
    council = wopdsl.load(VOTE_BOARD)
    run = await council.arun(store=db_path)
    box = LiveView(run).vote_box
    assert box is not None
    box.choice.value = "hold"
    box.reason.value = "billing risk"
    await run.cancel("a test")  # the run ended meanwhile: the vote is refused, and said
    assert await box.send() is False
    assert "error[validation_error]" in box.error.value and "has ended" in box.error.value
    assert box.reason.value == "billing risk"  # kept

    run = await council.arun(store=db_path, run_id="second")
    box = LiveView(run).vote_box
    assert box is not None
    box.choice.value = "hold"
    box.reason.value = "billing risk"
    box.button.click()  # in a task on the running loop, as a click in the notebook
    assert box.pending is not None and await asyncio.wait_for(box.pending, 10) is True
    assert box.cast == [("ship", "hold")] and box.reason.value == "" and box.error.value == ""
    await run.wait()
    assert run.decisions[0]["outcome"] == "hold"
    assert run.decisions[0]["votes"][-1] == {"voter": "founder", "choice": "hold",
                                             "reason": "billing risk"}
