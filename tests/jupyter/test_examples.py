"""The example notebooks, executed on a real ``python3`` kernel, show what they promise."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.jupyter.conftest import RunNotebook
from tests.jupyter.helpers import cell, displays, live_view, result, stdout

pytestmark = pytest.mark.slow

REVIEWED = "Reviewed team/writer/1/0: Please review: Prepare a release note."


def test_quickstart(run_notebook: RunNotebook, workdir: Path) -> None:
    nb = run_notebook(workdir / "examples" / "quickstart.ipynb", workdir / "examples")

    # Top-level await runs the TOML council on the kernel's loop; the run renders itself.
    html = result(nb, "arun", "text/html")
    assert 'data-status="completed"' in html
    assert REVIEWED in html
    assert '<section class="wop-room" data-room="review"' in html
    assert 'data-member="writer" data-state="done"' in html
    assert "<td" in html and "2/2" in html  # turns used of the cap
    markdown = result(nb, "arun", "text/markdown")
    assert "**completed**" in markdown and "| **reviewer** | reviewer | done | 1/2 |" in markdown
    assert "completed\ncouncil release-team: completed" in stdout(nb, "transcript")

    # The sync twin refuses inside the kernel's running loop and names the async call.
    assert "can't be called inside a running event loop" in stdout(nb, "sync")
    assert "await council.arun()" in stdout(nb, "sync")

    # start() + show(): one live view, which ends showing the completed run; the cell that
    # waits shows it too, so the saved notebook shows the end under that cell.
    assert result(nb, "wait") == "'completed'"
    (waited,) = displays(nb, "wait")
    assert 'data-status="completed"' in waited.data["text/html"]
    assert waited.data["text/plain"].startswith("council release-team · run ")
    assert REVIEWED in waited.data["text/plain"]
    view_html, models = live_view(nb, "show")
    assert 'data-status="completed"' in view_html and REVIEWED in view_html
    assert not any(m["model_name"] == "ButtonModel" for m in models)  # no human: no reply box

    # A decorator council with handlers defined in notebook cells works the same.
    decorated = result(nb, "decorators", "text/html")
    assert 'data-status="completed"' in decorated
    assert "How about Aurora?" in decorated and "Aurora works, " in decorated
    assert "'summary': 'Settled: Aurora works, @proposer.'" in result(nb, "result")


def test_human_in_the_loop(run_notebook: RunNotebook, workdir: Path) -> None:
    nb = run_notebook(workdir / "examples" / "human_in_the_loop.ipynb", workdir / "examples")

    # arun() returned instead of blocking on the person.
    waiting = result(nb, "arun", "text/html")
    assert 'data-status="waiting-input"' in waiting
    assert "waiting for input from <b>me</b>" in waiting
    assert 'data-member="me" data-state="waiting"' in waiting
    assert '>@me</span>?' in waiting  # the mention in the draft is highlighted
    assert result(nb, "waiting") == "('waiting-input', ['me'])"

    # A refused post says why.
    refused = stdout(nb, "refused")
    assert refused.startswith("error[validation_error]: ")
    assert "'@reviewer' is not a member of room 'review'" in refused

    # The live view offers a reply box, and ended showing the completed run.
    view_html, models = live_view(nb, "show")
    names = [m["model_name"] for m in models]
    assert "ButtonModel" in names and "TextModel" in names and "DropdownModel" in names
    button = next(m for m in models if m["model_name"] == "ButtonModel")
    assert button["state"]["description"] == "Send"
    room = next(m for m in models if m["state"].get("description") == "room")
    assert room["state"]["_options_labels"] == ["review"]
    assert 'data-status="completed"' in view_html and "Ship it" in view_html

    # The reply is saved, the run goes on, and completes.
    assert result(nb, "reply") == "'team/me/2/0'"
    assert result(nb, "wait") == "'completed'"
    final = result(nb, "final", "text/html")
    assert 'data-status="completed"' in final
    assert 'Ship it <span class="wop-mention"' in final
    assert "Shipped after review: Ship it @writer" in final
    assert 'class="wop-error"' not in final


def test_attach(run_notebook: RunNotebook, workdir: Path) -> None:
    nb = run_notebook(workdir / "examples" / "attach.ipynb", workdir / "examples")

    assert stdout(nb, "elsewhere") == "reviewer is working\n"
    # Attached while the other process runs the reviewer's turn.
    running = result(nb, "attach", "text/html")
    assert 'data-status="running"' in running
    assert 'data-member="reviewer" data-state="running"' in running
    assert "Please review: Prepare a release note." in running
    assert "Reviewed " not in running

    # The live view follows the other process's events to the end.
    assert result(nb, "go") == "'completed'"
    assert result(nb, "exit") == "0"
    view_html, _ = live_view(nb, "show")
    assert 'data-status="completed"' in view_html and REVIEWED in view_html
    final = result(nb, "final", "text/html")
    assert 'data-status="completed"' in final and REVIEWED in final
    assert "council release-team: completed" in stdout(nb, "transcript")
    assert len(displays(nb, "show")) == 1
    assert cell(nb, "show").source == "view = run.show()"


def test_llm_members(run_notebook: RunNotebook, workdir: Path) -> None:
    pytest.importorskip("openai", reason="the llm extra (wopdsl[llm]) is not installed")
    nb = run_notebook(workdir / "examples" / "llm_members.ipynb", workdir / "examples")

    assert result(nb, "server") == "True"
    html = result(nb, "arun", "text/html")
    assert 'data-status="completed"' in html
    assert '<span class="wop-usage">880 tokens</span>' in html
    assert "The weakest claim is that feature flags remove all merge risk" in html
    assert " ".join(result(nb, "usage").split()).endswith(
        "'total': {'calls': 3, 'inputTokens': 700, 'outputTokens': 180, 'totalTokens': 880}}")
    assert " ".join(result(nb, "events").split()).startswith(
        "['node.started', 'prompt.composed', 'output.chunk'")
    assert " ".join(result(nb, "requests").split()) == (
        "[('proposer', 'gpt-4o-mini', 'json_schema'), ('critic', 'gpt-4o-mini', 'json_schema'), "
        "('proposer', 'gpt-4o-mini', 'json_schema')]")
    view_html, _models = live_view(nb, "show")
    assert 'data-status="completed"' in view_html and "880 tokens" in view_html
    assert result(nb, "wait") == "'completed'"


def test_deliberation(run_notebook: RunNotebook, workdir: Path) -> None:
    nb = run_notebook(workdir / "examples" / "deliberation.ipynb", workdir / "examples")

    # The launch board: rounds, the host's notes, each decision's tally and dissent, the answer.
    html = result(nb, "arun", "text/html")
    assert 'data-status="completed"' in html
    assert "2 of 2 rounds held · blind · anonymous · the debate is over" in html
    assert "— Round 1 of 2 begins: 3 members answer." in html
    assert 'data-decision="ship" data-open="false"' in html
    assert "ship (ship 2, hold 1; 3 of 3 voted)" in html
    assert "dissent: cfo (hold): billing risk stands" in html
    assert "Decision: ship (ship 2, hold 1); confidence 7/10. Dissent: billing risk stands." \
        in html
    markdown = result(nb, "arun", "text/markdown")
    assert "**ship (ship 2, hold 1; 3 of 3 voted)**" in markdown
    assert result(nb, "decisions") == "([('ship', 'ship'), ('confidence', 7)], {'ship': 2, " \
        "'hold': 1})"
    assert stdout(nb, "dissent") == ("ship: cfo voted hold: billing risk stands\n"
                                     "confidence: cfo voted 4: billing\n")
    assert result(nb, "answer").startswith("'Decision: ship (ship 2, hold 1)")
    assert result(nb, "metrics") == ("({'cfo': (0, 1.0), 'cto': (0, 1.0), 'cmo': (2, 0.0)}, "
                                     "'hold')")

    # A seat for a person: the others' posts are hidden until the round ends, no tally yet.
    waiting = result(nb, "waiting", "text/html")
    assert 'data-status="waiting-input"' in waiting
    assert "round 1 of 1 · blind · 2 of 3 answered" in waiting
    assert waiting.count("answered round 1 — hidden until the round ends") == 2
    assert "billing is not migrated" not in waiting and "every suite is green" not in waiting
    assert "2 of 3 voted · the votes show when it closes" in waiting

    # The live view's vote box cast the founder's vote; the run completed.
    view_html, models = live_view(nb, "show")
    decision = next(m for m in models if m["state"].get("description") == "vote on")
    assert decision["state"]["_options_labels"] == []  # saved at the end: nothing open
    assert any(m["model_name"] == "ButtonModel" and m["state"]["description"] == "Vote"
               for m in models)
    assert result(nb, "vote") == "True"
    assert result(nb, "wait") == "'completed'"
    assert 'data-status="completed"' in view_html
    final = result(nb, "final", "text/html")
    assert "Hold: billing is not migrated." in final  # revealed
    assert "founder voted hold: billing first, then the launch" in final
    assert "hold (ship 1, hold 2; 3 of 3 voted)" in final
    assert "dissent: cto (ship): the candidate is green" in final
    assert "Decision: hold {&#x27;ship&#x27;: 1, &#x27;hold&#x27;: 2}. Dissent: cto: the " \
        "candidate is green." in final
