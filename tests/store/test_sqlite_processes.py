"""Several real processes sharing one SQLite store file."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

from wopdsl.store import SqliteStore
from wopdsl.testing.store_conformance import make_events

ROOT = Path(__file__).resolve().parents[2]

# Both writers get ready, wait for the go file, then append 50 events at sequence 3.
RACER = """
import pathlib, sys, time
from wopdsl.errors import StoreConflict
from wopdsl.store import SqliteStore
from wopdsl.testing.store_conformance import make_events
path, name, go = sys.argv[1], sys.argv[2], pathlib.Path(sys.argv[3])
store = SqliteStore(path)
batch = make_events("r1", 3, 50, type="node.completed", payload={"writer": name})
print("ready", flush=True)
while not go.exists():
    time.sleep(0.001)
try:
    store.append("r1", batch, 3)
except StoreConflict as exc:
    print("conflict", exc.code, flush=True)
else:
    print("ok", flush=True)
"""

# Appends one event at a time, retrying on conflict, as a resuming engine would.
CONTENDER = """
import pathlib, sys, time
from wopdsl.errors import StoreConflict
from wopdsl.store import SqliteStore
from wopdsl.testing.store_conformance import make_event
store, name, done, conflicts = SqliteStore(sys.argv[1]), sys.argv[2], 0, 0
print("ready", flush=True)
while not pathlib.Path(sys.argv[3]).exists():
    time.sleep(0.001)
while done < 100:
    sequence = store.last_sequence("r2") + 1
    event = make_event("r2", sequence, payload={"writer": name, "n": done})
    try:
        store.append("r2", [event], sequence)
    except StoreConflict:
        conflicts += 1
    else:
        done += 1
print(conflicts)
"""

APPENDER = """
import sys, time
from wopdsl.store import SqliteStore
from wopdsl.testing.store_conformance import make_event
store = SqliteStore(sys.argv[1])
for sequence in range(5):
    time.sleep(0.03)
    store.append("r1", [make_event("r1", sequence, payload={"from": "child"})], sequence)
"""


def _python(code: str, *args: object) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    return subprocess.Popen(
        [sys.executable, "-c", code, *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _start_together(code: str, db: Path, go: Path) -> list[subprocess.Popen[str]]:
    """Start writers "a" and "b", wait until both are ready, then let them go at once."""
    writers = [_python(code, db, name, go) for name in ("a", "b")]
    for writer in writers:
        assert writer.stdout is not None
        assert writer.stdout.readline().strip() == "ready", writer.stderr
    go.touch()
    return writers


def test_two_processes_racing_at_one_sequence_never_interleave(tmp_path: Path) -> None:
    db, go = tmp_path / "runs.db", tmp_path / "go"
    seed = SqliteStore(db)
    seed.append("r1", make_events("r1", 0, 3), 0)
    racers = _start_together(RACER, db, go)
    outcomes = []
    for racer in racers:
        out, err = racer.communicate(timeout=30)
        assert racer.returncode == 0, err
        outcomes.append(out.strip())
    assert sorted(outcomes) == ["conflict STORE_CONFLICT", "ok"]

    events = seed.read("r1")
    seed.close()
    assert [e["sequence"] for e in events] == list(range(53))
    winner = "ab"[outcomes.index("ok")]
    assert {e["payload"].get("writer") for e in events[3:]} == {winner}


def test_contending_processes_keep_the_log_contiguous(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    SqliteStore(db).close()
    for writer in _start_together(CONTENDER, db, tmp_path / "go"):
        _, err = writer.communicate(timeout=60)
        assert writer.returncode == 0, err

    store = SqliteStore(db)
    events = store.read("r2")
    store.close()
    assert [e["sequence"] for e in events] == list(range(200))
    for name in ("a", "b"):
        mine = [e["payload"]["n"] for e in events if e["payload"]["writer"] == name]
        assert mine == list(range(100))


async def test_subscriber_follows_another_process_live(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    store = SqliteStore(db)
    stream = store.subscribe("r1")
    child = _python(APPENDER, db)
    try:
        received = [await asyncio.wait_for(anext(stream), 20) for _ in range(5)]
    finally:
        await stream.aclose()  # type: ignore[attr-defined]
        _, err = child.communicate(timeout=30)
        store.close()
    assert child.returncode == 0, err
    assert [e["sequence"] for e in received] == [0, 1, 2, 3, 4]
    assert {e["payload"]["from"] for e in received} == {"child"}
