"""Smoke test of ``bench/ideal.py``: the lower-bound loop does a turn's durable work.

No time is asserted (the machine is shared; that is what the benchmark reports). What is
checked is that the skeleton the bound is measured on writes what a run writes per turn —
the same events in the same order, with the same payloads (its transactions are the floor's:
one per turn) — so that its cost is a fair lower bound of an engine's.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _bench_module(name: str) -> Any:
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    return importlib.import_module(name)


def _turn_events(path: Path) -> list[tuple[str, dict[str, Any]]]:
    """Each event's type and payload, its run id replaced and post timestamps left out."""
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT run_id, type, body FROM events ORDER BY sequence").fetchall()
    events = []
    for run_id, kind, body in rows:
        payload = json.loads(body.replace(run_id, "RUN"))["payload"]
        if kind == "conversation.exchanged":
            payload["turn"].pop("ts")
        events.append((kind, payload))
    return events


def test_the_skeleton_writes_each_turn_as_a_run_does(tmp_path: Path) -> None:
    ideal = _bench_module("ideal")
    workload = _bench_module("workload")
    turns = 12
    council = workload.build_council("python-sync", 3, turns)
    run = asyncio.run(council.arun(store=str(tmp_path / "run.db")))
    assert run.status == "completed"
    conn = ideal._raw(tmp_path / "skeleton.db")
    try:
        assert ideal.skeleton(council, 3, turns, conn) == turns
        (stored,) = conn.execute("SELECT count(*) FROM events").fetchone()
    finally:
        conn.close()
    logged = _turn_events(tmp_path / "run.db")
    skeleton = _turn_events(tmp_path / "skeleton.db")
    assert stored == len(skeleton) == 3 * (turns - 1) + 1
    # The run's turns: everything after the first member's node.started, up to the run's end.
    first = next(i for i, (kind, payload) in enumerate(logged)
                 if kind == "node.started" and payload.get("typeId") == "council.member")
    assert logged[first + 1:first + 1 + len(skeleton)] == skeleton
    assert [kind for kind, _ in logged[first + 1 + len(skeleton):]] == [
        "conversation.closed", "node.resumed", "node.completed", "run.completed"]


def test_ideal_bench_reports_the_bound_next_to_the_floor(tmp_path: Path) -> None:
    out = tmp_path / "ideal.json"
    done = subprocess.run([sys.executable, str(BENCH / "ideal.py"), "--turns", "60",
                           "--repeat", "1", "--json", str(out)],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    figures = json.loads(out.read_text())["us_per_turn"]
    assert set(figures) == {"floor", "skeleton", "skeleton (no SQLite)", "handlers alone",
                            "arun"}
    assert all(value > 0 for value in figures.values())
    for label in figures:
        assert label in done.stdout
    assert "1.6 x floor" in done.stdout
