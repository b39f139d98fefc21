"""The event fold, the line wrapper and the mention completer, without a screen."""

from __future__ import annotations

import pytest

pytest.importorskip("textual")

from wopdsl_tui.bridge import RunFold, follow
from wopdsl_tui.widgets import MentionSuggester
from wopdsl_tui.widgets.messages import wrap_ranges

import wopdsl
from tests.tui.conftest import ADVISORY_BOARD


async def test_the_fold_follows_a_run_that_pauses_and_resumes() -> None:
    run = await wopdsl.load(ADVISORY_BOARD).arun(store="memory:", deterministic=True)
    fold = RunFold()
    seen = []
    following = follow(run, fold)
    async for event in following:
        seen.append(event["sequence"])
        if fold.status == "waiting-input" and fold.last_sequence == len(run.events) - 1:
            break
    await following.aclose()
    assert seen == list(range(len(run.events)))
    assert fold.waiting_for == ["founder"]
    assert fold.last_mention["founder"] == "board"
    assert [m.sender for m in fold.rooms["product"].messages] == ["strategist", "engineer"]

    await run.reply("Ship it. @strategist", room="board")
    async for _ in follow(run, fold):  # Resumes after fold.last_sequence; ends with the run.
        pass
    assert fold.terminal == "completed"
    assert fold.last_sequence == len(run.events) - 1
    assert [m.id for m in fold.rooms["board"].messages][-2:] == [
        "team/founder/6/0", "team/strategist/7/0"]
    assert {m: fold.phase(m) for m in fold.members} == {
        m: n["status"] for m, n in run.snapshot()["nodeStates"].items() if ":" not in m}
    assert fold.batch == 5
    assert str(fold.events[0]).split() == ["0", "run.started", "advisory-board"]


def test_wrap_breaks_at_spaces_with_a_hanging_indent() -> None:
    text = "writer @reviewer: please review the release note"
    lines = [text[a:b] for a, b in wrap_ranges(text, 20)]
    assert lines == ["writer @reviewer:", "please review the", "release note"]
    assert all(len(line) <= 18 for line in lines[1:])


def test_wrap_handles_newlines_long_words_and_wide_characters() -> None:
    assert [("a\nb c")[a:b] for a, b in wrap_ranges("a\nb c", 10)] == ["a", "b c"]
    word = "x" * 25
    assert [len(word[a:b]) for a, b in wrap_ranges(word, 10)] == [10, 8, 7]
    wide = "日本語のテキスト 日本語"
    assert [wide[a:b] for a, b in wrap_ranges(wide, 12)] == ["日本語のテキ", "スト", "日本語"]


async def test_mentions_complete_from_the_room_members() -> None:
    suggester = MentionSuggester()
    suggester.members = ("strategist", "engineer", "counsel")
    assert await suggester.get_suggestion("Over to @st") == "Over to @strategist"
    assert await suggester.get_suggestion("@") == "@strategist"
    assert await suggester.get_suggestion("mail a@st") is None  # Not a mention.
    assert await suggester.get_suggestion("@strategist") is None  # Already complete.
    assert await suggester.get_suggestion("@zed") is None
