"""A deliberating council in ``display(run)``: rounds, hidden posts, decisions, the answer."""

from __future__ import annotations

import re
from pathlib import Path

import wopdsl
from wopdsl import CouncilState
from wopdsl.jupyter.live import plain_text
from wopdsl.projections.notebook import run_html, run_markdown, run_view

REPO = Path(__file__).resolve().parents[2]
LAUNCH_BOARD = REPO / "councils" / "launch-board.toml"
VOTE_BOARD = REPO / "tests" / "deliberation_councils" / "vote-board.toml"


def text(html: str) -> str:
    """The HTML's text, tags removed (entities kept)."""
    return re.sub(r"<[^>]+>", "", html)


async def test_launch_board_shows_rounds_the_tally_the_dissent_and_the_answer(
        db_path: Path) -> None:
    run = await wopdsl.load(LAUNCH_BOARD).arun(store=db_path)
    html = run_html(run)
    shown = text(html)
    assert "· 2 of 2 rounds held · blind · anonymous · the debate is over" in shown
    # System turns are notes; the operator sees real names, and nothing is hidden any more.
    assert '<div class="wop-msg wop-system" data-id="' in html
    assert "— Round 2 of 2 begins: 3 members answer." in shown
    assert 'class="wop-msg wop-hidden"' not in html
    assert "<b class=\"wop-sender\">cfo</b>" in html
    assert 'data-decision="ship" data-open="false"' in html
    assert "ship Ship v2 this week? · closed · ship (ship 2, hold 1; 3 of 3 voted)" in shown
    assert "confidence How confident are we in this week&#x27;s date (1-10)? · closed · 7 " \
        "(median score; mean 6.33; 3 of 3 voted)" in shown
    assert '<div class="wop-dissent" data-voter="cfo"' in html
    assert "dissent: cfo (hold): billing risk stands" in shown
    assert "answer (chair): Decision: ship (ship 2, hold 1); confidence 7/10. Dissent: " \
        "billing risk stands." in shown
    markdown = run_markdown(run)
    assert "- **ship** Ship v2 this week? · closed · **ship (ship 2, hold 1; 3 of 3 voted)**\n" \
        "  - dissent: cfo (hold): billing risk stands\n" in markdown
    assert "#### room board (cfo, cto, cmo, chair) · closed · 12 messages · 2 of 2 rounds " \
        "held · blind · anonymous · the debate is over" in markdown
    assert "- _— Decision 'ship' closed: ship (ship 2, hold 1; 3 of 3 voted; 1 dissent)._" \
        in markdown
    assert "**answer** (chair): Decision: ship (ship 2, hold 1); confidence 7/10. Dissent: " \
        "billing risk stands." in markdown


async def test_a_blind_round_hides_others_posts_until_the_founder_has_voted(
        db_path: Path) -> None:
    run = await wopdsl.load(VOTE_BOARD).arun(store=db_path)
    assert run.status == "waiting-input"
    html = run_html(run)
    shown = text(html)
    assert "round 1 of 1 · blind · 2 of 3 answered" in shown
    assert "cfo answered round 1 — hidden until the round ends" in shown
    assert "cto answered round 1 — hidden until the round ends" in shown
    assert "billing migration" not in html and "release candidate" not in html
    # The founder votes on it: how many voted, not how (no anchoring), and how to vote.
    assert "ship Ship v2 this week? · open · 2 of 3 voted · the votes show when it " \
        "closes" in shown
    assert 'await run.vote("ship", "ship|hold", reason="…")' in html.replace("&quot;", '"')
    assert "chair (chair): speaks last, once every decision is closed" in shown
    assert "cfo answered round 1 — hidden until the round ends" in plain_text(run_view(run))
    assert "_cfo answered round 1 — hidden until the round ends_" in run_markdown(run)

    await run.vote("ship", "HOLD", reason="billing <b>risk</b>")
    await run.wait()

    html = run_html(run)
    shown = text(html)
    assert run.status == "completed"
    assert "Hold: the billing migration is not done." in shown  # revealed
    assert "hidden until the round ends" not in shown
    assert "founder voted hold: billing &lt;b&gt;risk&lt;/b&gt;" in shown  # escaped
    assert "ship Ship v2 this week? · closed · hold (ship 1, hold 2; 3 of 3 voted)" in shown
    assert "dissent: cto (ship): the candidate is green" in shown
    assert "answer (chair): Decision: hold (ship 1, hold 2). Dissent: cto, the candidate " \
        "is green." in shown
    view = plain_text(run_view(run))
    assert "decision ship: hold (ship 1, hold 2; 3 of 3 voted)\n  founder voted hold: billing " \
        "<b>risk</b>\n  dissent: cto (ship): the candidate is green\n" in view


async def test_an_observer_sees_the_running_tally(db_path: Path) -> None:
    # Nobody at the notebook votes on the launch board: an open decision shows its tally.
    run = await wopdsl.load(LAUNCH_BOARD).arun(store=db_path)
    events = run.events
    second_round = next(i for i, e in enumerate(events) if e["type"] ==
                        "conversation.exchanged" and "round" in e["payload"]["turn"]["content"]
                        and e["payload"]["turn"]["content"]["round"]["number"] == 2)
    shown = text(run_html(CouncilState.fold(events[:second_round])))
    assert "ship Ship v2 this week? · open · 3 of 3 voted · ship 1, hold 2" in shown
    assert "(1-10)? · open · 3 of 3 voted · 4 1, 5 1, 8 1" in shown  # scores in order
    assert "round 1 of 2 · blind · anonymous · 3 of 3 answered" in shown
