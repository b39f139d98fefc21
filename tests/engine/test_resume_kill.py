"""Resume after ``kill -9`` (DESIGN.md §8), with real child processes on a real SQLite file.

A child process runs :mod:`tests.engine.resume_council` (handlers sleep a little per turn);
the test polls the SQLite file and SIGKILLs the child at a chosen point, then resumes the run
in this process and compares it with an uninterrupted reference run of the same council.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.engine.resume_council import build
from tests.openwop_schemas import maybe_schemas
from wopdsl import SqliteStore, StoreConflict
from wopdsl.engine import Engine
from wopdsl.protocol.envelope import RunEventDoc

REPO = Path(__file__).resolve().parents[2]
DELAY = "0.08"
"""Seconds each child handler sleeps: long enough to be caught mid-turn."""


def child(db: Path, run_id: str, side: Path, mode: str, *extra: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])}
    return subprocess.Popen(
        [sys.executable, "-m", "tests.engine.resume_council", str(db), run_id, str(side), mode,
         DELAY, *extra],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def read(db: Path, run_id: str) -> list[RunEventDoc]:
    store = SqliteStore(db)
    try:
        return store.read(run_id)
    finally:
        store.close()


def member_starts(events: list[RunEventDoc]) -> list[RunEventDoc]:
    return [e for e in events
            if e["type"] == "node.started" and e["payload"].get("typeId") == "council.member"]


def wait_until(proc: subprocess.Popen[str], db: Path, run_id: str,
               ready: Callable[[list[RunEventDoc]], bool], what: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            out, err = proc.communicate()
            raise AssertionError(f"child ended before {what}: {out}{err}")
        if db.exists():
            try:
                if ready(read(db, run_id)):
                    return
            except Exception:  # the file may be mid-creation: poll again
                pass
        time.sleep(0.003)
    proc.kill()
    proc.communicate()
    raise AssertionError(f"timed out waiting for {what}")


def kill(proc: subprocess.Popen[str]) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate()
    assert proc.returncode == -signal.SIGKILL


def nth_started(n: int) -> Callable[[list[RunEventDoc]], bool]:
    return lambda events: len(member_starts(events)) >= n


def nth_completed(n: int) -> Callable[[list[RunEventDoc]], bool]:
    return lambda events: sum(
        1 for e in events if e["type"] == "node.completed"
        and not e.get("nodeId", "").startswith("room:")) >= n


def calls(side: Path) -> list[tuple[int, str, int]]:
    out = []
    for line in side.read_text().splitlines():
        pid, member, turn = line.split()
        out.append((int(pid), member, int(turn)))
    return out


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """An uninterrupted run of the same council."""
    import asyncio

    folder = tmp_path_factory.mktemp("reference")
    council = build(folder / "side.log", delay=0)
    run = asyncio.run(council.arun(store=folder / "runs.db", run_id="ref"))
    assert run.status == "completed"
    return {"messages": [(m.id, m.text, m.mentions) for m in run.messages],
            "result": run.result, "transcript": run.transcript}


def completed_turns(events: list[RunEventDoc]) -> set[tuple[str, int]]:
    turn_of = {}
    done = set()
    for event in events:
        if event["type"] == "node.started" and event["payload"].get("typeId") == "council.member":
            turn_of[event["nodeId"]] = event["payload"]["turn"]
        elif event["type"] == "node.completed" and event["nodeId"] in turn_of:
            done.add((event["nodeId"], turn_of[event["nodeId"]]))
    return done


def inflight_turns(events: list[RunEventDoc]) -> dict[str, dict[str, object]]:
    open_: dict[str, dict[str, object]] = {}
    for event in events:
        node = event.get("nodeId", "")
        if event["type"] == "node.started" and event["payload"].get("typeId") == "council.member":
            open_[node] = event["payload"]
        elif event["type"] in {"node.completed", "node.failed"}:
            open_.pop(node, None)
    return open_


def check_resumed(db: Path, run_id: str, side: Path, before: list[RunEventDoc],
                  reference: dict[str, object]) -> list[RunEventDoc]:
    """Assert the resumed run matches the reference and re-ran only unfinished turns."""
    after = read(db, run_id)
    assert after[: len(before)] == before  # nothing rewritten
    assert [e["sequence"] for e in after] == list(range(len(after)))
    assert after[-1]["type"] == "run.completed"
    ids = [e["payload"]["turn"]["messageId"] for e in after
           if e["type"] == "conversation.exchanged"]
    assert len(ids) == len(set(ids))
    from wopdsl import attach

    run = attach(db, run_id)
    assert [(m.id, m.text, m.mentions) for m in run.messages] == reference["messages"]
    assert run.result == reference["result"]
    assert run.transcript == reference["transcript"]
    # No completed turn ran again; every turn in flight at the kill ran again as attempt + 1.
    done_before = completed_turns(before)
    open_before = inflight_turns(before)
    log = calls(side)
    here = os.getpid()
    rerun = [(m, t) for pid, m, t in log if pid == here]
    assert not set(rerun) & done_before
    for member, started in open_before.items():
        retries = [e["payload"] for e in member_starts(after[len(before):])
                   if e["nodeId"] == member and e["payload"]["position"] == started["position"]]
        assert [r["attempt"] for r in retries] == [started["attempt"] + 1]  # type: ignore[operator]
        assert retries[0]["turn"] == started["turn"]
        assert retries[0]["triggers"] == started["triggers"]
        assert (member, started["turn"]) in rerun
    # Every (member, turn) completed exactly once overall.
    completions = Counter(completed_turns(after))
    assert set(completions.values()) == {1}
    schemas = maybe_schemas()
    if schemas is not None:
        schemas.check_events(after)
    return after


@pytest.mark.parametrize(
    ("label", "point"),
    [
        ("after the 1st turn started", nth_started(1)),
        ("after the 3rd turn started", nth_started(3)),
        ("after the 5th turn started", nth_started(5)),
        ("after the 4th turn completed", nth_completed(4)),
    ],
    ids=["started-1", "started-3", "started-5", "completed-4"],
)
async def test_a_run_killed_mid_way_resumes_to_the_same_end(
    tmp_path: Path, reference: dict[str, object], label: str,
    point: Callable[[list[RunEventDoc]], bool],
) -> None:
    db, side = tmp_path / "runs.db", tmp_path / "side.log"
    proc = child(db, "victim", side, "run")
    wait_until(proc, db, "victim", point, label)
    kill(proc)
    before = read(db, "victim")
    assert before[-1]["type"] != "run.completed"

    run = build(side, delay=0).open("victim", SqliteStore(db))
    status = await run.resume()

    assert status == "completed", run.error
    check_resumed(db, "victim", side, before, reference)


async def test_a_run_killed_twice_resumes_to_the_same_end(
    tmp_path: Path, reference: dict[str, object]
) -> None:
    db, side = tmp_path / "runs.db", tmp_path / "side.log"
    first = child(db, "twice", side, "run")
    wait_until(first, db, "twice", nth_started(2), "the 2nd turn starting")
    kill(first)
    started = len(member_starts(read(db, "twice")))
    second = child(db, "twice", side, "resume")
    wait_until(second, db, "twice", nth_started(started + 3), "3 more turns starting")
    kill(second)
    before = read(db, "twice")

    run = build(side, delay=0).open("twice", SqliteStore(db))
    assert await run.resume() == "completed", run.error

    after = check_resumed(db, "twice", side, before, reference)
    assert len({pid for pid, _, _ in calls(side)}) == 3
    assert max(e["payload"]["attempt"] for e in member_starts(after)) >= 1


async def test_resuming_a_run_another_process_executes_is_refused(
    tmp_path: Path, reference: dict[str, object]
) -> None:
    db, side, flag = tmp_path / "runs.db", tmp_path / "side.log", tmp_path / "go"
    proc = child(db, "shared", side, "run", str(flag))
    try:
        wait_until(proc, db, "shared", nth_started(3), "member a's first turn starting")
        before = read(db, "shared")

        # The child is inside a's first turn: resuming here must not run that turn again.
        run = build(side, delay=0).open("shared", SqliteStore(db))
        with pytest.raises(StoreConflict, match="executing in another process") as caught:
            await run.resume()
        assert "attach to it instead" in (caught.value.hint or "")
        assert read(db, "shared") == before  # nothing appended
    finally:
        flag.touch()
    out, err = proc.communicate(timeout=30)

    assert proc.returncode == 0, (out, err)
    assert out.strip() == "completed"
    # Every handler call came from the child, once per (member, turn).
    turns = [(member, turn) for pid, member, turn in calls(side)]
    assert {pid for pid, _, _ in calls(side)} == {proc.pid}
    assert len(turns) == len(set(turns))
    events = read(db, "shared")
    assert [e["sequence"] for e in events] == list(range(len(events)))
    from wopdsl import attach

    assert [(m.id, m.text, m.mentions) for m in attach(db, "shared").messages] == (
        reference["messages"])


async def test_two_engines_starting_one_run_id_conflict(tmp_path: Path, db_path: Path) -> None:
    council = build(tmp_path / "side.log", delay=0)
    one = Engine(council.compile(), SqliteStore(db_path), "same")
    two = Engine(council.compile(), SqliteStore(db_path), "same")

    await one.start()
    with pytest.raises(StoreConflict) as caught:
        await two.start()

    assert caught.value.code == "STORE_CONFLICT"
    assert await one.drive() == "completed"
    events = read(db_path, "same")
    assert [e["sequence"] for e in events] == list(range(len(events)))
    assert [e["type"] for e in events].count("run.started") == 1


async def test_two_engines_resuming_one_run_one_conflicts(tmp_path: Path,
                                                          db_path: Path) -> None:
    import asyncio

    side = tmp_path / "side.log"
    council = build(side, delay=0)
    await Engine(council.compile(), SqliteStore(db_path), "both").start()
    one = Engine(build(side, delay=0.02).compile(), SqliteStore(db_path), "both")
    two = Engine(build(side, delay=0.02).compile(), SqliteStore(db_path), "both")

    outcomes = await asyncio.gather(one.drive(), two.drive(), return_exceptions=True)

    conflicts = [o for o in outcomes if isinstance(o, StoreConflict)]
    assert len(conflicts) == 1, outcomes
    assert [o for o in outcomes if not isinstance(o, BaseException)] == ["completed"]
    events = read(db_path, "both")
    assert [e["sequence"] for e in events] == list(range(len(events)))
    assert [e["type"] for e in events].count("run.completed") == 1
    ids = [e["payload"]["turn"]["messageId"] for e in events
           if e["type"] == "conversation.exchanged"]
    assert len(ids) == len(set(ids))
