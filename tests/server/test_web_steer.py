"""Steering and presence on the chat page (DESIGN.md §24), in real headless Chromiums.

Two browsers (two people: ann and bob) and the terminal UI (carol, attached to the same
store) share one room of a run `wop serve` drives: each sees who else is there and who is
typing; ann's **Interrupt** stops the drafter's long turn at once and it runs again with her
post; bob's half-written draft survives the messages that arrive meanwhile.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("textual")

from wopdsl_tui import CouncilApp
from wopdsl_tui.widgets import Roster

import wopdsl
from tests.server.web_browser import Page, host_path, screenshot_dir, wait_for
from tests.tui.conftest import settle

COUNCILS = Path(__file__).resolve().parent / "web_steer"


async def _in_thread(what: str, probe: Callable[[], Any], timeout: float = 20) -> Any:
    """:func:`wait_for` off the loop, so the terminal UI keeps running meanwhile."""
    return await asyncio.to_thread(wait_for, what, probe, timeout)


def _person(page: Page, member: str) -> None:
    from selenium.webdriver.support.select import Select

    wait_for("the composer", lambda: page.find("#speak-as option"))
    Select(page.find("#speak-as")).select_by_value(member)
    page.js("document.getElementById('speak-as').dispatchEvent(new Event('change'))")


async def test_two_browsers_and_a_terminal_share_a_room_see_each_other_and_steer(
        serve: Any, browser: Callable[..., Any], tmp_path: Path) -> None:
    served = serve(COUNCILS, env={"PYTHONPATH": host_path(COUNCILS)})
    shots = screenshot_dir(tmp_path)
    ann = Page(browser(), served, shots)
    bob = Page(browser(), served, shots)
    run_id = await asyncio.to_thread(ann.start, "huddle")
    await asyncio.to_thread(_person, ann, "ann")
    await asyncio.to_thread(bob.open, f"/runs/{run_id}")
    await asyncio.to_thread(_person, bob, "bob")
    carol = CouncilApp(wopdsl.attach(served.store, run_id), as_="carol")
    async with carol.run_test(size=(110, 32)) as pilot:
        def roster() -> str:
            return str(carol.query_one(Roster).render())

        # Each sees who else is watching: the pages, and the terminal.
        await _in_thread("ann sees bob and carol", lambda: ann.find("#presence").text ==
                         "Also here: bob, carol")
        await _in_thread("bob sees ann and carol", lambda: bob.find("#presence").text ==
                         "Also here: ann, carol")
        await settle(pilot, lambda: roster().count("watching") == 2)  # ann and bob

        # bob types in his page: ann's page and carol's terminal see it.
        await asyncio.to_thread(lambda: bob.find("#text").send_keys("half a thought"))
        await _in_thread("ann sees bob typing", lambda: "bob is typing…" in
                         ann.find("#presence").text)
        await settle(pilot, lambda: "typing" in roster() and roster().count("watching") == 1)
        # carol types in the terminal: the pages see it.
        await pilot.press("ctrl+r", *"on it")
        await _in_thread("ann sees carol typing", lambda: "carol is typing…" in
                         ann.find("#presence").text)
        ann.shot("web-presence")

        # ann interrupts the drafter's long first draft.
        def interrupt() -> None:
            ann.find("#text").send_keys("@drafter the budget is fixed at 2M")
            ann.find("#steer").click()

        await asyncio.to_thread(interrupt)
        await _in_thread("the redraft, on ann's page", lambda: any(
            t == "Redrafted: @drafter the budget is fixed at 2M" for t in ann.texts()))
        await _in_thread("the redraft, on bob's page", lambda: any(
            t.startswith("Redrafted:") for t in bob.texts()), timeout=10)
        assert not any(t == "Draft: 5M" for t in bob.texts())  # the stopped draft: nowhere
        assert await asyncio.to_thread(lambda: bob.find("#text").get_attribute("value")) == \
            "half a thought"  # bob's draft survived the messages that arrived
        assert ann.find("#text").get_attribute("value") == ""
        await settle(pilot, lambda: any(m.text.startswith("Redrafted:")
                                        for m in carol.fold.rooms["huddle"].messages))
        events = served.request("GET", f"/v1/runs/{run_id}/events")[1]["events"]
        assert [e["payload"]["lastError"]["code"] for e in events
                if e["type"] == "node.retried"] == ["STEERED"]
        steer = next(e["payload"]["turn"] for e in events if e["type"] ==
                     "conversation.exchanged" and e["payload"]["turn"]["role"] == "user")
        assert steer["content"] == {"text": "@drafter the budget is fixed at 2M",
                                    "mentions": ["drafter"], "steer": True}
        assert steer["speakerId"] == "host:ann"
        await pilot.press("ctrl+q")
