"""A deliberating council on the chat page, in a real headless Chromium on a real `wop serve`.

The launch board (councils/launch-board.toml) debates two blind, anonymous rounds and closes
two decisions before its chair answers; the vote board (tests/deliberation_councils) seats
the founder in a blind round: the page hides the others' posts until the round ends and
votes over the interrupt endpoint with ``content.votes``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.server.conftest import REPO, Served
from tests.server.web_browser import Page, screenshot_dir, wait_for

pytestmark = pytest.mark.slow

LAUNCH_BOARD = REPO / "councils" / "launch-board.toml"
VOTE_BOARD = REPO / "tests" / "deliberation_councils"

_DECISIONS_JS = """return [...document.querySelectorAll('#decisions .decision')].map(d => [
  d.dataset.decision, d.dataset.open, d.querySelector('.state').textContent,
  [...d.querySelectorAll('.dissent, .mine')].map(n => n.textContent),
  Boolean(d.querySelector('form.ballot button.vote'))]);"""


@pytest.fixture
def board(tmp_path: Path, serve: Callable[..., Served],
          browser: Callable[..., Any]) -> Page:
    served = serve(VOTE_BOARD, LAUNCH_BOARD)
    return Page(browser(), served, screenshot_dir(tmp_path))


def _round(p: Page) -> str:
    bar = p.find("#round")
    return str(bar.text) if bar.is_displayed() else ""


def _answer(p: Page) -> str:
    found = p.finds("#decisions .answer")
    return str(found[0].text) if found else ""


def test_the_launch_board_shows_rounds_tally_dissent_and_answer(board: Page) -> None:
    p = board
    run_id = p.start("launch-board")
    wait_for("the run's end", lambda: p.status() == "completed", timeout=60)
    wait_for("the answer", lambda: _answer(p).startswith("answer (chair): Decision: ship"))
    assert _round(p) == "2 of 2 rounds held · blind · anonymous · the debate is over"
    texts = p.texts()
    assert texts[0] == "Round 1 of 2 begins: 3 members answer."
    assert "Hold: the campaign assets need another week." in texts  # revealed, real names
    assert "Decision 'ship' closed: ship (ship 2, hold 1; 3 of 3 voted; 1 dissent)." in texts
    assert p.finds("#list .msg.hidden") == []
    assert len(p.finds("#list .msg.system")) == 6
    assert p.js(_DECISIONS_JS) == [
        ["ship", "false", "ship (ship 2, hold 1; 3 of 3 voted)",
         ["dissent: cfo (hold): billing risk stands"], False],
        ["confidence", "false", "7 (median score; mean 6.33; 3 of 3 voted)",
         ["dissent: cfo (4): billing"], False],
    ]
    assert _answer(p) == ("answer (chair): Decision: ship (ship 2, hold 1); confidence 7/10. "
                          "Dissent: billing risk stands.")
    p.shot("web-launch-board")
    # A room without rounds has no round line.
    p.click('#tabs button[data-room="prep"]')
    wait_for("the prep room", lambda: "Anything blocking a release this week?" in p.texts())
    assert _round(p) == ""
    # A reload replays the log: the same view.
    p.driver.refresh()
    wait_for("the decisions again", lambda: len(p.js(_DECISIONS_JS)) == 2 and
             p.js(_DECISIONS_JS)[0][2] == "ship (ship 2, hold 1; 3 of 3 voted)")
    assert run_id == p.run_id()


def test_the_founder_votes_from_the_page(board: Page) -> None:
    p = board
    run_id = p.start("vote-board")
    wait_for("the run to wait for the founder", lambda: p.status() == "waiting-input")
    wait_for("the round line", lambda: _round(p) == "round 1 of 1 · blind · 2 of 3 answered")
    # The others' posts of the round are placeholders until it ends.
    hidden = wait_for("the hidden posts", lambda: [
        m for m in p.messages() if m[2].endswith("hidden until the round ends")])
    assert [(m[1], m[2]) for m in hidden] == [
        ("cfo", "answered round 1 — hidden until the round ends"),
        ("cto", "answered round 1 — hidden until the round ends")]
    assert "Hold: the billing migration is not done." not in p.driver.page_source
    (ship,) = p.js(_DECISIONS_JS)
    assert ship == ["ship", "true", "open · 2 of 3 voted · the votes show when it closes", [],
                    True]
    assert _answer(p) == "chair (chair): speaks last, once every decision is closed"

    form = p.find('#decisions .decision[data-decision="ship"] form.ballot')
    assert [o.text for o in form.find_elements("css selector", "select.choice option")] == \
        ["ship", "hold"]
    assert not form.find_element("css selector", "select.voter").is_displayed()  # only one
    form.find_element("css selector", 'select.choice option[value="hold"]').click()
    form.find_element("css selector", "input.reason").send_keys("billing <b>first</b>")
    p.shot("web-deliberation-ballot")
    form.find_element("css selector", "button.vote").click()

    wait_for("the run's end", lambda: p.status() == "completed", timeout=30)
    wait_for("the closed decision", lambda: p.js(_DECISIONS_JS)[0][1] == "false")
    (ship,) = p.js(_DECISIONS_JS)
    assert ship == ["ship", "false", "hold (ship 1, hold 2; 3 of 3 voted)",
                    ["founder voted hold: billing <b>first</b>",
                     "dissent: cto (ship): the candidate is green"], False]
    assert p.finds("#decisions .mine b") == []  # the reason is text, never markup
    wait_for("the revealed posts", lambda: "Hold: the billing migration is not done." in
             p.texts())
    assert p.finds("#list .msg.hidden") == []
    assert _round(p) == "1 of 1 rounds held · blind · the debate is over"
    wait_for("the answer", lambda: _answer(p) == (
        "answer (chair): Decision: hold (ship 1, hold 2). Dissent: cto, the candidate is "
        "green."))
    p.shot("web-deliberation")
    # The vote landed in the log once, as the founder's turn, with no post.
    status, page, _ = p.served.request("GET", f"/v1/runs/{run_id}/events")
    assert status == 200, page
    founder = [e["payload"]["outputs"] for e in page["events"]
               if e["type"] == "node.completed" and e.get("nodeId") == "founder"]
    assert founder == [{"summary": "voted hold on ship", "votes": [
        {"decision": "ship", "choice": "hold", "reason": "billing <b>first</b>"}]}]
    assert not [e for e in page["events"] if e["type"] == "conversation.exchanged"
                and e["payload"]["turn"]["messageId"].startswith("team/founder/")]
