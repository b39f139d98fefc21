"""Quick turns commit together (``wopdsl.engine._batches``), on a real SQLite file.

While the drive runs lone quick turns (scripts, sync handlers known to return within
``QUICK_S``) without yielding to the event loop, their settlements wait to be committed
together with a later one. These tests check that the commits still end where the log is
consistent (at a dispatch or the run's end), that the log is the same as without groups,
that a turn that is not quick runs with everything before it durable, that Ctrl-C keeps the
settled turns, and that another writer's post in the middle of a group loses nothing.

The group's window (``_YIELD_EVERY``) and what counts as a quick handler (``QUICK_S``) are
widened here, so that the groups do not depend on how busy the machine is.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import MakeCouncil
from tests.engine.helpers import reply, say
from tests.engine.raced_council import build as build_raced
from wopdsl import Council, Reply, SqliteStore, Turn
from wopdsl.agents.python import UserInterrupt
from wopdsl.protocol.envelope import RunEventDoc

TURNS = 30
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def wide_window(monkeypatch: pytest.MonkeyPatch) -> None:
    """Groups close on their size, never on the clock; every sync handler counts as quick
    once it has run (a busy machine changes nothing)."""
    monkeypatch.setattr("wopdsl.engine._batches._YIELD_EVERY", 60.0)
    monkeypatch.setattr("wopdsl.agents.python.QUICK_S", 60.0)


class Commits:
    """The events of each commit a real SQLite store makes to one run (its commit observer)."""

    def __init__(self, store: SqliteStore, run_id: str) -> None:
        self.batches: list[list[RunEventDoc]] = []
        store.observe_commits(run_id, lambda events: self.batches.append(list(events)))

    def member_events(self) -> list[list[tuple[str, str]]]:
        """Per commit that holds a member's event: (type, member) of its member events."""
        out = []
        for batch in self.batches:
            kept = [(e["type"], e.get("nodeId", "")) for e in batch if e["type"].startswith(
                "node.") and not e.get("nodeId", "").startswith("room:")]
            if kept:
                out.append(kept)
        return out


def baton(make_council: MakeCouncil, on_call: Callable[[str, int], None] | None = None
          ) -> Council:
    """Three members pass the word round-robin (``a`` starts) until ``TURNS`` turns have run.

    ``on_call(member, turn)`` sees each handler call first (it may wait, check or raise).
    """
    order = ["a", "b", "c"]

    def handler(turn: Turn) -> Reply:
        if on_call is not None:
            on_call(turn.member, turn.turn)
        count = (turn.turn - 1) * 3 + order.index(turn.member) + 1
        nxt = order[(order.index(turn.member) + 1) % 3]
        return reply(f"{turn.member}{turn.turn}",
                     *([say("all", f"{turn.member} to {nxt}", nxt)] if count < TURNS else []))

    return make_council(dict.fromkeys(order, handler), waiting=["b", "c"],
                        max_turns_per_member=TURNS)


async def test_quick_turns_commit_together_and_each_commit_ends_at_a_dispatch(
    make_council: MakeCouncil, db_path: Path, tmp_path: Path, wide_window: None
) -> None:
    store = SqliteStore(db_path)
    commits = Commits(store, "grouped")

    run = await baton(make_council).arun(store=store, run_id="grouped")

    assert run.status == "completed"
    member_commits = commits.member_events()
    turns = sum(1 for c in member_commits for t, _ in c if t == "node.completed")
    assert turns == TURNS
    assert len(member_commits) < TURNS // 2, member_commits  # Several turns per commit.
    # Every commit ends where the log is whole: with a member's dispatch or the run's end.
    for batch in commits.batches[1:]:
        assert batch[-1]["type"] in {"node.started", "run.completed"}, \
            [e["type"] for e in batch]
    # The commits, one after another, are the log.
    assert [e for c in commits.batches for e in c] == store.read("grouped")
    store.close()


async def test_the_log_is_the_same_with_and_without_groups(
    make_council: MakeCouncil, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    logs = {}
    for window in (60.0, 0.0):
        monkeypatch.setattr("wopdsl.engine._batches._YIELD_EVERY", window)
        store = SqliteStore(tmp_path / f"w{window}.db")
        commits = Commits(store, "same")
        run = await baton(make_council).arun(store=store, run_id="same", deterministic=True)
        assert run.status == "completed"
        logs[window] = (store.read("same"), len(commits.batches))
        store.close()

    assert logs[60.0][0] == logs[0.0][0]  # A deterministic run: byte for byte.
    assert logs[60.0][1] < logs[0.0][1]  # Fewer commits, the same events.


async def test_a_turn_that_is_not_quick_runs_with_every_turn_before_it_durable(
    make_council: MakeCouncil, db_path: Path, wide_window: None,
    monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("wopdsl.agents.python.QUICK_S", 0.02)  # c's calls take longer.
    reader = SqliteStore(db_path)
    seen: list[tuple[str, int, bool, str]] = []

    def watch(member: str, turn: int) -> None:
        durable = reader.read("watched")
        own = [e for e in durable if e["type"] == "node.started" and e.get("nodeId") == member]
        # Is this very turn's dispatch the last durable event of a member?
        last_member = [e for e in durable if e["type"].startswith("node.")
                       and not e.get("nodeId", "").startswith("room:")][-1]
        seen.append((member, turn, last_member is own[-1], last_member["type"]))
        if member == "c":
            time.sleep(0.03)  # Never quick (and soon off the loop, on a worker thread).

    run = await baton(make_council, watch).arun(store=db_path, run_id="watched")

    assert run.status == "completed"
    assert len(seen) == TURNS
    # A handler is not quick before its first call: everything before it was committed.
    firsts = [s for s in seen if s[1] == 1]
    assert [s[2] for s in firsts] == [True, True, True], firsts
    # The slow member's turns never ran before the turns ahead of them were durable.
    slow = [s for s in seen if s[0] == "c"]
    assert all(durable for _, _, durable, _ in slow), slow
    # The quick ones did, at times: their turns were grouped.
    assert not all(durable for m, t, durable, _ in seen if m == "a" and t > 1), seen
    reader.close()


def test_ctrl_c_in_a_handler_keeps_every_settled_turn_of_the_group(
    make_council: MakeCouncil, db_path: Path, wide_window: None
) -> None:
    def ctrl_c(member: str, turn: int) -> None:
        if (member, turn) == ("a", 5):
            raise UserInterrupt  # What Ctrl-C raises in a sync handler running in place.

    council = baton(make_council, ctrl_c)
    store = SqliteStore(db_path)
    commits = Commits(store, "stopped")

    # Outside pytest's loop: asyncio lets a KeyboardInterrupt out of its loop, as at a prompt.
    with pytest.raises(KeyboardInterrupt):
        asyncio.run(council.arun(store=store, run_id="stopped"))

    log = store.read("stopped")
    members = [(e["type"], e.get("nodeId")) for e in log if e["type"].startswith("node.")
               and not e.get("nodeId", "").startswith("room:")]
    # Turns 1–12 settled (a, b, c four times), and a's fifth turn was dispatched: all durable.
    assert members.count(("node.completed", "a")) == 4
    assert members.count(("node.completed", "c")) == 4
    assert members[-1] == ("node.started", "a")
    assert len(commits.member_events()) < 12  # They were grouped.
    store.close()


async def test_a_post_from_another_writer_in_the_middle_of_a_group_loses_nothing(
    make_council: MakeCouncil, db_path: Path, wide_window: None
) -> None:
    """Another writer's post takes the group's place in the log: the group's first turn is
    settled after it, and the turns after that are dispatched and run again."""
    calls: list[tuple[str, int]] = []
    replies: list[subprocess.Popen[str]] = []
    reader = SqliteStore(db_path)

    def post_from_elsewhere() -> None:
        """``wop reply`` in another process; back once its post is durable."""
        replies.append(subprocess.Popen(
            [sys.executable, "-m", "wopdsl", "reply", "raced", "--room", "all", "--as", "me",
             "@a over to you", "--store", str(db_path),
             "--council", "tests.engine.raced_council:council"],
            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        deadline = time.monotonic() + 60
        while not any(e["type"] == "conversation.exchanged"
                      and e["payload"]["turn"]["role"] == "user"
                      for e in reader.read("raced")):
            assert time.monotonic() < deadline and replies[0].poll() is None, \
                replies[0].communicate()
            time.sleep(0.01)

    def on_call(member: str, turn: int) -> None:
        calls.append((member, turn))
        if member == "c" and turn == 3 and not replies:
            # The turns settled since c's last call wait in the group meanwhile.
            post_from_elsewhere()

    council = build_raced(on_call)
    store = SqliteStore(db_path)
    commits = Commits(store, "raced")

    run = await council.arun(store=store, run_id="raced")

    assert run.status == "completed", run.error
    out, err = replies[0].communicate(timeout=60)
    assert replies[0].returncode == 0, out + err
    log = store.read("raced")
    assert [e["sequence"] for e in log] == list(range(len(log)))
    human = [e for e in log if e["type"] == "conversation.exchanged"
             and e["payload"]["turn"]["role"] == "user"]
    assert [h["payload"]["turn"]["content"]["text"] for h in human] == ["@a over to you"]
    # Every dispatched turn completed once, none retried: the log is as if the post had
    # come in while the group's first turn ran.
    starts = [e["payload"] for e in log if e["type"] == "node.started"
              and e.get("nodeId") in {"a", "b", "c"}]
    assert all(s["attempt"] == 0 for s in starts)
    done = [e for e in log if e["type"] == "node.completed" and e.get("nodeId") in {"a", "b", "c"}]
    assert len(done) == len(starts)
    # Some turns ran twice (the dropped part of the group); their results were saved once.
    assert len(calls) > len(done)
    assert any(len(c) > 3 for c in commits.member_events())  # Groups of several turns.
    store.close()
    reader.close()


WIDE = ("import wopdsl.agents.python as p, wopdsl.engine._batches as b; "
        "b._YIELD_EVERY = p.QUICK_S = 60.0; "
        "from wopdsl.cli import main; raise SystemExit(main())")
"""``wop run`` with groups that close on their size only (every handler counts as quick)."""


def wop(*args: str, env: dict[str, str], wide: bool = False) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-c", WIDE] if wide else [sys.executable, "-m", "wopdsl"]
    return subprocess.run([*command, *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=120, check=False)


def test_wop_run_killed_in_a_group_printed_only_what_was_durable_and_resumes(
    tmp_path: Path,
) -> None:
    from tests.engine.killed_council import KILL_AT, TURNS, build
    from wopdsl import attach

    db = tmp_path / "runs.db"
    env = {**os.environ, "WOP_TEST_KILLED": str(tmp_path / "killed.mark"),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO),
                                                        os.environ.get("PYTHONPATH")]))}
    target = "tests.engine.killed_council:council"

    killed = wop("run", target, "--store", str(db), "--run-id", "k", env=env, wide=True)

    assert killed.returncode == -signal.SIGKILL, killed.stderr
    reader = SqliteStore(db)
    before = reader.read("k")
    done_before = [e for e in before if e["type"] == "node.completed"
                   and e.get("nodeId") in {"a", "b", "c"}]
    # The turns of the group in hand at the kill were lost, and only they.
    assert len(done_before) < KILL_AT - 1
    members = [e for e in before if e["type"].startswith("node.")
               and e.get("nodeId") in {"a", "b", "c"}]
    assert members[-1]["type"] == "node.started"  # The log ends at a dispatch: whole.
    # Nothing was printed that is not durable: the printed posts are the log's first ones.
    printed = [line for line in killed.stdout.splitlines() if line.startswith("[all]")]
    durable = wop("replay", "k", "--store", str(db), env=env)
    assert durable.returncode == 4, durable.stderr  # Interrupted, not ended: replay says so.
    logged = [line for line in durable.stdout.splitlines() if line.startswith("[all]")]
    assert printed == logged[:len(printed)]
    assert len(logged) == len(done_before)

    resumed = wop("resume", "k", target, "--store", str(db), env=env)

    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    after = reader.read("k")
    assert after[:len(before)] == before
    assert after[-1]["type"] == "run.completed"
    starts = [(e["nodeId"], e["payload"]["turn"], e["payload"]["attempt"]) for e in after
              if e["type"] == "node.started" and e.get("nodeId") in {"a", "b", "c"}]
    assert len({(m, t) for m, t, _ in starts}) == TURNS
    # The one turn dispatched durably when the process died ran again as attempt 1.
    assert [a for _, _, a in starts].count(1) == 1
    reference = build(kill=False).run(store=tmp_path / "reference.db", run_id="k")
    assert attach(db, "k").transcript == reference.transcript
    reader.close()
