"""The run comparison (``wopdsl.projections.diff``): alignment bounds, 10,000-message runs,
``Run.diff`` and its notebook rendering.

Speed is measured in ``bench/diff.py``; here the bounds are structural: the alignment's item
comparisons are counted on adversarial inputs, and the memory a diff allocates is measured
(tracemalloc) at two sizes to show it grows linearly, not quadratically.
"""

from __future__ import annotations

import importlib.util
import itertools
import math
import sys
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wopdsl import Council, Post, Reply, SqliteStore, Turn
from wopdsl.projections.diff import RunDiff, align, diff_runs
from wopdsl.protocol import RunEventDoc

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _workload() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_workload", BENCH / "workload.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("bench_workload", module)
    spec.loader.exec_module(module)
    return module


def _apply(a: list[Any], b: list[Any], ops: list[tuple[str, int, int, int, int]]) -> list[Any]:
    out: list[Any] = []
    i = j = 0
    for tag, i1, i2, j1, j2 in ops:
        assert (i1, j1) == (i, j), "opcodes must be contiguous"
        if tag == "equal":
            assert a[i1:i2] == b[j1:j2]
        out.extend(b[j1:j2])
        i, j = i2, j2
    assert (i, j) == (len(a), len(b))
    return out


@given(st.lists(st.integers(0, 6), max_size=200), st.lists(st.integers(0, 6), max_size=200))
def test_opcodes_turn_a_into_b(a: list[int], b: list[int]) -> None:
    ops = align(a, b)
    assert _apply(a, b, ops) == b
    assert all(x[0] != y[0] for x, y in itertools.pairwise(ops))  # merged


class Counted:
    """An item that counts how often it is compared or hashed."""

    calls = 0

    def __init__(self, value: int) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        Counted.calls += 1
        return isinstance(other, Counted) and self.value == other.value

    def __hash__(self) -> int:
        Counted.calls += 1
        return hash(self.value)


def _inputs(n: int) -> Iterator[tuple[str, list[int], list[int]]]:
    yield "equal", list(range(n)), list(range(n))
    yield "one changed", list(range(n)), [*range(n // 2), -1, *range(n // 2 + 1, n)]
    yield "disjoint", list(range(n)), list(range(n, 2 * n))
    yield "two values", [(i * 2654435761 >> 7) % 2 for i in range(n)], \
        [(i * 40503 >> 3) % 2 for i in range(n)]
    yield "reversed", list(range(n)), list(range(n - 1, -1, -1))
    yield "interleaved repeats", [i % 50 for i in range(n)], [(i * 7) % 50 for i in range(n)]


@pytest.mark.parametrize("case", list(_inputs(10_000)), ids=lambda c: c[0])
def test_alignment_work_is_n_log_n_on_adversarial_input(
        case: tuple[str, list[int], list[int]]) -> None:
    _, left, right = case
    a, b = [Counted(v) for v in left], [Counted(v) for v in right]
    Counted.calls = 0
    ops = align(a, b)
    n = len(a) + len(b)
    # difflib alone needs up to len(a) * len(b) = 10^8 comparisons on some of these.
    assert Counted.calls <= 40 * n * math.log2(n), Counted.calls
    assert [x.value for x in _apply(a, b, ops)] == right


@pytest.fixture(scope="module")
def chatty(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SqliteStore]:
    """A real SQLite store with generated runs: ``plain``, ``changed``, ``repetitive`` with
    10,000 messages each, and ``small`` / ``small-rep`` with 2,500."""
    workload = _workload()
    store = SqliteStore(tmp_path_factory.mktemp("chatty") / "runs.db")
    for run_id, messages, variant in (("plain", 10_000, "plain"),
                                      ("changed", 10_000, "changed"),
                                      ("repetitive", 10_000, "repetitive"),
                                      ("small", 2_500, "plain"),
                                      ("small-rep", 2_500, "repetitive")):
        run = workload.chatty_council(messages, variant).run(store, run_id)
        assert run.status == "completed" and len(run.messages) == messages
    yield store
    store.close()


def _peak(a: list[RunEventDoc], b: list[RunEventDoc]) -> tuple[int, RunDiff]:
    tracemalloc.start()
    try:
        diff = diff_runs(a, b)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak, diff


@pytest.mark.slow
def test_ten_thousand_messages_in_linear_memory(chatty: SqliteStore) -> None:
    plain, changed = chatty.read("plain"), chatty.read("changed")
    peak, diff = _peak(plain, changed)
    room = diff.rooms[0]
    assert (room.count("same"), room.count("changed")) == (9_999, 1)
    assert len(room.entries) == 3  # same stretch, the change, same stretch
    assert diff.divergence is not None and diff.divergence.a is not None
    assert diff.divergence.a.label == \
        'talker said in room all (team/talker/51/0): "message 5000"'
    assert diff.divergence.a.event == "conversation.exchanged"
    text = diff.text()
    assert "- talker team/talker/51/0: message 5000" in text
    assert "+ talker team/talker/51/0: something else entirely" in text
    assert len(text.splitlines()) < 40  # the view grows with the changes, not the run

    # The worst case for an alignment (two values repeated in another pattern) against
    # all-distinct texts, at 2,500 and at 10,000 messages: memory grows ~4x (linear).
    small, _ = _peak(chatty.read("small"), chatty.read("small-rep"))
    large, worst = _peak(plain, chatty.read("repetitive"))
    assert large < 6 * small, (small, large)
    assert large < 256 * 10_000 * 20  # well under a few hundred bytes per event
    assert worst.rooms[0].count("same") + worst.rooms[0].count("changed") == 10_000
    assert len(worst.text().splitlines()) < 120  # shows MAX_SHOWN changes, then a count
    assert "more changes (see --json)" in worst.text()
    assert peak < 256 * 10_000 * 20


def test_run_diff_renders_in_a_notebook(db_path: Path) -> None:
    council = Council("html", task="Say something.")
    council.room("r", members=["a"])

    @council.member("a", role="speaker")
    def speak(turn: Turn) -> Reply:
        return Reply(summary="Said.", posts=[Post(room="r", text="plain text")])

    other = Council("html", task="Say something.")
    other.room("r", members=["a"])

    @other.member("a", role="speaker")
    def shout(turn: Turn) -> Reply:
        text = "<script>alert(1)</script> & more"
        return Reply(summary="Said.", posts=[Post(room="r", text=text)])

    store = SqliteStore(db_path)
    try:
        first = council.run(store, "one")
        second = other.run(store, "two")
        assert first.status == second.status == "completed"
        diff = first.diff(second)
        assert isinstance(diff, RunDiff) and not diff.equal
        assert diff.same_declaration  # a python handler's code is not in the declaration
        html = diff._repr_html_()
        assert "<script>" not in html
        assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; more" in html
        assert "differ" in html
        assert str(diff) == diff.text() and "+ a team/a/1/0: <script>" in str(diff)
        assert "- a team/a/1/0: plain text" in str(diff)
        assert repr(diff) == "RunDiff('one', 'two', differ)"
        assert first.diff(first).equal
    finally:
        store.close()


def test_a_failed_turn_and_a_failed_run_are_named_with_their_codes(db_path: Path) -> None:
    def ok(turn: Turn) -> Reply:
        return Reply(summary="Done.")

    def broken(turn: Turn) -> Reply:
        raise RuntimeError("no")

    store = SqliteStore(db_path)
    try:
        runs = {}
        for run_id, handler in (("good", ok), ("bad", broken)):
            council = Council("team", task="Ship it.")
            council.room("all", members=["writer"])
            council.member("writer", role="writer")(handler)
            runs[run_id] = council.run(store, run_id)
        diff = runs["good"].diff(runs["bad"])
    finally:
        store.close()
    assert diff.divergence is not None and diff.divergence.a and diff.divergence.b
    assert (diff.divergence.a.label, diff.divergence.a.event) == (
        "writer's turn 1 ended: \"Done.\"", "node.completed")
    assert (diff.divergence.b.label, diff.divergence.b.event) == (
        "writer's turn 1 failed (TEAM_NODE_FAILED)", "node.failed")
    shown = diff.text().splitlines()
    point = shown.index("first divergence:")
    assert shown[point + 2] == (f"  B: writer's turn 1 failed (TEAM_NODE_FAILED) "
                                f"(event {diff.divergence.b.sequence}, node.failed)")
