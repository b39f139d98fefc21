"""Tokens per member and in total in the TUI roster and the notebook view (no key anywhere)."""

from __future__ import annotations

from pathlib import Path

import pytest

import wopdsl
from tests.llm.conftest import KEY
from tests.llm.test_cli import SENTINEL
from wopdsl.projections.notebook import run_html, run_markdown, run_view
from wopdsl.testing.model_server import ScriptedModelServer
from wopdsl.testing.review_answers import review_answer

REPO = Path(__file__).resolve().parents[2]
REVIEW = REPO / "councils" / "llm-review.toml"


async def test_notebook_view_shows_tokens(server: ScriptedModelServer, tmp_path: Path) -> None:
    server.default = review_answer
    run = await wopdsl.load(REVIEW).arun(store=str(tmp_path / "runs.db"))
    view = run_view(run)
    assert view.usage == "880 tokens"
    assert {m.id: m.usage for m in view.roster} == {"proposer": "600 tokens",
                                                    "critic": "280 tokens"}
    html = run_html(run)
    assert "model usage" in html and '<span class="wop-usage">880 tokens</span>' in html
    markdown = run_markdown(run)
    assert "| **proposer** | proposer | done | 2/2 | 600 tokens |" in markdown
    assert KEY not in html + markdown


async def test_tui_roster_shows_tokens_and_the_stream(server: ScriptedModelServer,
                                                      tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("textual")
    from wopdsl_tui import CouncilApp
    from wopdsl_tui.widgets import Roster

    from tests.tui.conftest import finished, settle
    from tests.tui.test_app import text_of

    monkeypatch.setenv("OPENAI_API_KEY", SENTINEL)
    server.default = review_answer
    app = CouncilApp(wopdsl.load(REVIEW), store=tmp_path / "runs.db", deterministic=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, finished(app))
        roster = text_of(app.query_one(Roster)).splitlines()
        assert roster[0].split() == ["proposer", "done"]
        assert roster[2].split() == ["600", "tokens"]
        assert roster[3].split() == ["critic", "done"]
        assert roster[5].split() == ["280", "tokens"]
        assert any(e.type == "output.chunk" for e in app.fold.events)
        screen = app.export_screenshot()
        assert SENTINEL not in screen and SENTINEL not in "\n".join(
            f"{e.type} {e.detail}" for e in app.fold.events)
        # While a turn is in flight, the roster shows the end of the text being written
        # (its posts' text, not the JSON; tests/tui/test_newcomer.py streams it for real).
        widget = app.query_one(Roster)
        widget.show_members(list(app.fold.members.values()), {"critic": "running"}, {},
                            {}, {"critic": '{"summary": "x", "posts": [{"roomId": "desk", '
                                           '"text": "Named the weakest'})
        await pilot.pause()
        lines = text_of(widget).splitlines()
        assert lines[lines.index(next(x for x in lines if x.startswith("critic"))) + 2] \
            .strip() == "▸ Named the weakest"
