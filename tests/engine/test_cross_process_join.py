"""A human joining from another process (DESIGN.md §3, §13, §14): ``wop reply`` or the TUI
posting to a run that a different process is executing."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from tests.engine.join_council import build
from wopdsl import HumanInput, SqliteStore, attach
from wopdsl.engine import Engine
from wopdsl.state import Inflight

REPO = Path(__file__).resolve().parents[2]


def started(db: Path, run_id: str, member: str) -> bool:
    if not db.exists():
        return False
    store = SqliteStore(db)
    try:
        return any(e["type"] == "node.started" and e.get("nodeId") == member
                   for e in store.read(run_id))
    finally:
        store.close()


async def test_a_human_post_from_another_process_joins_a_running_batch(tmp_path: Path) -> None:
    db, flag = tmp_path / "runs.db", tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.engine.join_council", str(db), "joined", str(flag)],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not started(db, "joined", "a"):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the child never started a's turn"
            time.sleep(0.005)

        # This process posts as the human while the child is inside a's turn.
        handle = attach(SqliteStore(db), "joined", council=build(None))
        assert await handle.reply("@b hello from here", room="all") == "team/me/2/0"
        flag.touch()
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()

    assert proc.returncode == 0, (out, err)
    assert out.strip() == "completed"
    run = attach(db, "joined")
    assert run.status == "completed"
    assert [(m.id, m.text) for m in run.messages] == [
        ("team/me/2/0", "@b hello from here"),
        ("team/a/1/0", "a1"),
        ("team/b/3/0", "b saw team/me/2/0"),
    ]
    events = list(run.events)
    assert [e["sequence"] for e in events] == list(range(len(events)))
    indexes = [e["payload"]["turnIndex"] for e in events
               if e["type"] == "conversation.exchanged"]
    assert indexes == [1, 2, 3]


class _PostsBeforeSecondDispatch(Engine):
    """Another writer saves a human post just before this engine dispatches batch 2.

    Batch 1's completions are committed together with batch 2's dispatch, so the post lands
    before them in the log: the engine must settle batch 1 again on top of it.
    """

    raced = False

    def _next_batch(self) -> list[Inflight] | None:
        if not self.raced and self.state.batch == 1:
            self.raced = True
            other = Engine(self.graph, SqliteStore(self.store.path), self.run_id)  # type: ignore[attr-defined]
            other.apply_human(HumanInput(member="me", room="all", text="@b now",
                                         mentions=("b",)))
            other._flush()
        return super()._next_batch()


async def test_a_human_post_from_another_writer_between_batches_is_planned_in(
    tmp_path: Path, db_path: Path
) -> None:
    council = build(None)
    engine = _PostsBeforeSecondDispatch(council.compile(), SqliteStore(db_path), "race")
    await engine.start()

    assert await engine.drive() == "completed"

    run = attach(db_path, "race")
    # The post was durable first; a's turn is settled after it, not run again.
    assert [m.id for m in run.messages] == ["team/me/2/0", "team/a/1/0", "team/b/3/0"]
    assert run.messages[-1].text == "b saw team/me/2/0"
    starts = [e["payload"] for e in run.events
              if e["type"] == "node.started" and e.get("nodeId") == "a"]
    assert [(s["position"], s["attempt"]) for s in starts] == [(1, 0)]
    events = list(run.events)
    assert [e["sequence"] for e in events] == list(range(len(events)))
