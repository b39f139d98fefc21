"""``run_html`` / ``run_markdown``: what a run shows in a notebook, escaped and complete."""

from __future__ import annotations

from pathlib import Path

import pytest

import wopdsl
from tests.conftest import HUMAN, MakeCouncil
from wopdsl import Post, Reply, Turn
from wopdsl.projections.notebook import run_html, run_markdown

REPO = Path(__file__).resolve().parents[2]


async def test_completed_run_shows_rooms_roster_and_status(db_path: Path) -> None:
    run = await wopdsl.load(REPO / "councils" / "release-team.toml").arun(store=db_path)
    html = run_html(run)
    assert html == run._repr_html_()
    assert html.startswith('<div class="wop-run"') and html.endswith("</div>")
    assert f'data-run-id="{run.run_id}" data-status="completed"' in html
    assert "council <b>release-team</b>" in html and "17 events" in html
    assert 'data-member="writer" data-state="done"' in html
    assert 'vertical-align:top">2/2</td>' in html  # turns used of the cap
    assert '<section class="wop-room" data-room="review"' in html
    assert "(writer, reviewer) · closed · 2 messages" in html
    # Each message: sender, id, mentions, text, in saved order.
    first = html.index('data-id="team/writer/1/0"')
    second = html.index('data-id="team/reviewer/2/0"')
    assert first < second
    assert ('<b class="wop-sender">reviewer</b> ' in html
            and ">@writer</span>: <span class=\"wop-text\"" in html)
    assert "Reviewed team/writer/1/0: Please review: Prepare a release note." in html
    assert 'class="wop-error"' not in html and 'class="wop-waiting"' not in html


async def test_markdown_twin(db_path: Path) -> None:
    run = await wopdsl.load(REPO / "councils" / "release-team.toml").arun(store=db_path)
    assert run_markdown(run) == run._repr_markdown_()
    assert run_markdown(run) == (
        f"council **release-team** · run `{run.run_id}` · **completed** · 17 events\n"
        "\n"
        "| member | role | state | turns | last result |\n"
        "|---|---|---|---|---|\n"
        "| **writer** | writer | done | 2/2 | Finished after review team/reviewer/2/0: "
        "Prepare a release note. |\n"
        "| **reviewer** | reviewer | done | 1/2 | Draft checked. |\n"
        "\n"
        "#### room review (writer, reviewer) · closed · 2 messages\n"
        "\n"
        "- **writer** `team/writer/1/0` **@reviewer**: Please review: Prepare a release note.\n"
        "- **reviewer** `team/reviewer/2/0` **@writer**: Reviewed team/writer/1/0: Please "
        "review: Prepare a release note.\n"
    )


async def test_user_text_is_escaped_and_mentions_highlighted(
        make_council: MakeCouncil, db_path: Path) -> None:
    evil = "<script>alert('x')</script> & *bold* | @b, see @nobody\nline two"

    def a(turn: Turn) -> Reply:
        return Reply(summary="<i>sum</i>", posts=[Post(room="all", text=evil, mentions=["b"])])

    def b(turn: Turn) -> Reply:
        return Reply(summary="ok")

    run = await make_council({"a": a, "b": b}, waiting=["b"]).arun(store=db_path)
    html = run_html(run)
    assert "<script>" not in html and "<i>sum</i>" not in html
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; &amp; *bold* |" in html
    assert "&lt;i&gt;sum&lt;/i&gt;" in html
    # The real mention is highlighted in the text; a word that merely looks like one is not.
    assert '| <span class="wop-mention"' in html and ">@b</span>, see @nobody\nline two" in html
    markdown = run_markdown(run)
    assert "<script>" not in markdown
    assert ("&lt;script&gt;alert('x')&lt;/script&gt; &amp; \\*bold\\* \\| @b, see @nobody"
            "<br>line two") in markdown
    assert "| &lt;i&gt;sum&lt;/i&gt; |" in markdown


async def test_failed_run_shows_the_error_code(make_council: MakeCouncil, db_path: Path) -> None:
    def broken(turn: Turn) -> Reply:
        raise RuntimeError("model <unavailable>")

    run = await make_council({"broken": broken}).arun(store=db_path)
    assert run.status == "failed"
    html = run_html(run)
    assert 'data-status="failed"' in html
    assert '<div class="wop-error"' in html and "error[TEAM_NODE_FAILED]: " in html
    assert "&lt;unavailable&gt;" in html
    assert 'data-member="broken" data-state="failed"' in html
    assert "> **error\\[TEAM\\_NODE\\_FAILED\\]**: " in run_markdown(run)
    # The handler's traceback, recorded in node.failed.error.details, opens on demand.
    start = html.index('<details class="wop-traceback" data-member="broken"')
    block = html[start:html.index("</details>", start)]
    assert "<summary" in block and "traceback of <b>broken</b> (error[TEAM_NODE_FAILED])" in block
    assert "<details open" not in html  # collapsed until clicked
    assert "Traceback (most recent call last):" in block
    assert 'raise RuntimeError(&quot;model &lt;unavailable&gt;&quot;)' in block
    assert "RuntimeError: model &lt;unavailable&gt;" in block
    assert "<unavailable>" not in html


async def test_no_traceback_block_without_a_failure(db_path: Path) -> None:
    run = await wopdsl.load(REPO / "councils" / "release-team.toml").arun(store=db_path)
    assert "wop-traceback" not in run_html(run)


async def test_waiting_run_names_who_it_waits_for(make_council: MakeCouncil,
                                                  db_path: Path) -> None:
    def ask(turn: Turn) -> Reply:
        return Reply(summary="asked", posts=[Post(room="all", text="ok?", mentions=["me"])])

    run = await make_council({"ask": ask, "me": HUMAN}).arun(store=db_path)
    html = run_html(run)
    assert 'data-status="waiting-input"' in html
    assert "waiting for input from <b>me</b>" in html
    assert 'data-member="me" data-state="waiting"' in html and "(human)" in html
    assert "waiting for input from **me**" in run_markdown(run)


@pytest.mark.parametrize("tail", [None, 2])
async def test_tail_keeps_the_latest_messages(make_council: MakeCouncil, db_path: Path,
                                              tail: int | None) -> None:
    def talk(turn: Turn) -> Reply:
        posts = [Post(room="all", text=f"message {i}") for i in range(5)]
        return Reply(summary="talked", posts=posts)

    run = await make_council({"talk": talk}).arun(store=db_path)
    html, markdown = run_html(run, tail=tail), run_markdown(run, tail=tail)
    assert "5 messages" in html and "5 messages" in markdown
    shown = [i for i in range(5) if f"message {i}<" in html]
    assert shown == ([0, 1, 2, 3, 4] if tail is None else [3, 4])
    if tail:
        assert "… 3 earlier messages" in html and "- … 3 earlier messages" in markdown


async def test_empty_room_and_pending_run(make_council: MakeCouncil, db_path: Path) -> None:
    def quiet(turn: Turn) -> Reply:
        return Reply(summary="nothing to say")

    council = make_council({"quiet": quiet})
    run = council.start(store=db_path)
    assert 'data-status="pending"' in run_html(run) and "0 events" in run_html(run)
    await run.wait()
    assert "no messages yet" in run_html(run) and "_no messages yet_" in run_markdown(run)
