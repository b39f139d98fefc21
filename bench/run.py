"""Speed and memory benchmark of the durable council engine (see docs/performance.md).

Usage::

    python3 bench/run.py [--quick] [--repeat K] [--json out.json]
                         [--members 3,8] [--turns 1000,10000] [--engines script,python,python-sync]

Workload W(N, T) (``bench/workload.py``): N script or python members round-robin in one
room, each turn one message mentioning the next, ``tail_messages = 8``, the durable SQLite
log (WAL, ``synchronous=NORMAL``). Each workload runs in its own subprocess (clean peak
RSS), on a fresh SQLite file per run, once to warm up and then K timed times. Reported:

* µs per turn: ``council.arun()`` wall time / T, median of K (CPU time beside it);
* the floor: the same events, in the same transactions, inserted with raw ``sqlite3`` into
  a file with the same layout and pragmas (pre-encoded rows: pure SQLite cost), and the same
  events with one commit per turn; ``x floor`` = µs per turn / floor;
* peak RSS (``ru_maxrss`` of the child) and log bytes per turn (db + wal after a
  ``wal_checkpoint(TRUNCATE)``, / T);
* replay: ``CouncilState.fold(store.read(run))`` and ``wopdsl.attach(...).result`` on the log;
* flatness (µs per turn at the largest T / at the smallest T) and the O(tail) check (time to
  build a member's input at growing history lengths).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from itertools import chain
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

TARGET_US = 150.0
"""Target: at most this many µs per turn with the durable log."""
FLAT_LIMIT = 1.25
"""µs per turn at the largest T may be at most this multiple of the smallest T's."""
TAIL_LIMIT = 1.5
"""Input building at the longest history may cost at most this multiple of the shortest."""
REPLAY_LIMIT_S = 1.0


# -- the child: one workload, measured in a fresh process -----------------------------------


def _maxrss_mib() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return usage / (1024 * 1024) if sys.platform == "darwin" else usage / 1024


def child(job: dict[str, Any]) -> dict[str, Any]:
    from workload import CountingStore, build_council, run_engine_only, run_once

    engine, n, turns, repeat = job["engine"], job["n"], job["turns"], job["repeat"]
    rss_start = _maxrss_mib()
    council = build_council(engine, n, turns)
    council.compile()  # Cold: imports Jinja2 and compiles each distinct template once.
    wall0 = time.perf_counter()
    council.compile()  # What each timed arun() pays.
    compile_s = time.perf_counter() - wall0
    out: dict[str, Any] = {"engine": engine, "n": n, "turns": turns, "repeat": repeat,
                           "compile_ms": compile_s * 1000}
    with tempfile.TemporaryDirectory(prefix="wop-bench-") as tmp:
        warm_db = Path(tmp) / "warm.db"
        store = CountingStore(warm_db)
        warm = run_once(council, store)  # Warm-up (imports, caches); records transactions.
        if warm.status != "completed":
            raise SystemExit(f"warm-up run ended {warm.status}, not completed")
        walls, cpus = [], []
        for k in range(repeat):
            db = Path(tmp) / f"run{k}.db"
            timing = run_once(council, str(db))
            if timing.status != "completed" or timing.events != warm.events:
                raise SystemExit(f"run {k} ended {timing.status} with {timing.events} events")
            walls.append(timing.wall)
            cpus.append(timing.cpu)
            for suffix in ("", "-wal", "-shm"):
                Path(f"{db}{suffix}").unlink(missing_ok=True)
        out["peak_rss_mib"] = _maxrss_mib()
        out["start_rss_mib"] = rss_start
        out["us_per_turn"] = statistics.median(walls) / turns * 1e6
        out["cpu_us_per_turn"] = statistics.median(cpus) / turns * 1e6
        out["us_per_turn_all"] = [w / turns * 1e6 for w in walls]
        out["events"] = warm.events
        out["transactions"] = len(store.batches)
        out.update(_log_size(warm_db, turns))
        out.update(_floor(warm_db, store.batches, turns, Path(tmp), max(repeat, 3)))
        out.update(_replay(warm_db, max(repeat, 3)))
        out["json_us_per_turn"] = _json_cost(warm_db, turns, max(repeat, 3))
        engine = [run_engine_only(council) for _ in range(max(repeat, 3))]
        if any(t.status != "completed" or t.events != warm.events for t in engine):
            raise SystemExit("the engine-only run did not match the durable run")
        out["engine_us_per_turn"] = statistics.median(t.wall for t in engine) / turns * 1e6
        if job.get("tail"):
            out["tail"] = _tail_check(council, warm_db)
        if job.get("pair_turns"):
            little = build_council(job["engine"], n, job["pair_turns"])
            out["flat_pair"] = _flat_pair(council, little, turns, job["pair_turns"], repeat,
                                          Path(tmp))
    return out


def _flat_pair(council: Any, little: Any, turns: int, small: int, repeat: int,
               tmp: Path) -> dict[str, Any]:
    """Time ``council`` (``turns``) and ``little`` (``small`` turns) alternately, here.

    Runs measured minutes apart (each workload has its own process) also measure how the
    shared machine changed in between; alternating the two sizes gives both the same
    conditions, so their ratio is about the code. (Peak RSS was read before this.)
    """
    from workload import run_once

    run_once(little, str(tmp / "pair-warm.db"))
    per_round = max(1, round(turns / small))
    large_runs: list[float] = []
    small_runs: list[float] = []
    for k in range(repeat):
        large_runs.append(run_once(council, str(tmp / f"pair-l{k}.db")).wall / turns * 1e6)
        for j in range(per_round):
            small_runs.append(run_once(little, str(tmp / f"pair-s{k}-{j}.db")).wall / small * 1e6)
        for path in tmp.glob("pair-*"):
            path.unlink(missing_ok=True)
    return {"small_turns": small, "large_us": statistics.median(large_runs),
            "small_us": statistics.median(small_runs)}


def _log_size(db: Path, turns: int) -> dict[str, Any]:
    conn = sqlite3.connect(db)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        body, started = conn.execute(
            "SELECT sum(length(CAST(body AS BLOB))), "
            "max(CASE WHEN type = 'run.started' THEN length(CAST(body AS BLOB)) END) FROM events"
        ).fetchone()
    finally:
        conn.close()
    size = sum(Path(f"{db}{s}").stat().st_size for s in ("", "-wal") if Path(f"{db}{s}").exists())
    return {"log_bytes": size, "log_bytes_per_turn": size / turns,
            "body_bytes_per_turn": body / turns, "run_started_bytes": started}


ONE_STATEMENT_ROWS = 8
"""A transaction of at most this many rows is one ``INSERT`` statement, as the store makes it
(in autocommit a statement is its own transaction): the cheapest raw way to write it."""


@functools.cache
def one_statement(rows: int) -> str:
    """``INSERT INTO events VALUES`` ``rows`` rows: one statement, one transaction."""
    return "INSERT INTO events VALUES " + ", ".join(["(?, ?, ?, ?)"] * rows)


def _floor(db: Path, batches: list[int], turns: int, tmp: Path, repeat: int) -> dict[str, Any]:
    """Time raw inserts of the run's own rows: same layout, pragmas and transactions.

    Each transaction is written the cheapest raw way: a short one as one ``INSERT``
    statement (:data:`ONE_STATEMENT_ROWS`), the first (with the ``runs`` row) and longer
    ones between ``BEGIN IMMEDIATE`` and ``COMMIT``.
    """
    src = sqlite3.connect(db)
    try:
        layout = [sql for (sql,) in src.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'table' AND sql IS NOT NULL")]
        rows = src.execute("SELECT * FROM events ORDER BY rowid").fetchall()
        runs = src.execute("SELECT * FROM runs ORDER BY rowid").fetchall()
        (page_size,) = src.execute("PRAGMA page_size").fetchone()
    finally:
        src.close()
    insert = f"INSERT INTO events VALUES ({', '.join('?' * len(rows[0]))})"
    insert_run = f"INSERT INTO runs VALUES ({', '.join('?' * len(runs[0]))})"
    same: list[list[Any]] = []
    start = 0
    for size in batches:
        same.append(rows[start:start + size])
        start += size
    per_turn = [rows[round(i * len(rows) / turns):round((i + 1) * len(rows) / turns)]
                for i in range(turns)]
    results: dict[str, list[float]] = {"floor": [], "floor_1commit": []}
    for k in range(repeat):
        for name, chunks in (("floor", same), ("floor_1commit", per_turn)):
            path = tmp / f"floor{k}{name}.db"
            conn = sqlite3.connect(path, isolation_level=None)
            conn.execute(f"PRAGMA page_size = {page_size}")
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(f"PRAGMA wal_autocheckpoint = {4 * 1024 * 1024 // page_size}")
            for sql in layout:
                conn.execute(sql)
            wall0 = time.perf_counter()
            for index, chunk in enumerate(chunks):
                if index and len(chunk) <= ONE_STATEMENT_ROWS:
                    conn.execute(one_statement(len(chunk)), list(chain.from_iterable(chunk)))
                    continue
                conn.execute("BEGIN IMMEDIATE")
                conn.executemany(insert, chunk)
                if index == 0:
                    conn.executemany(insert_run, runs)
                conn.execute("COMMIT")
            results[name].append(time.perf_counter() - wall0)
            conn.close()
            for suffix in ("", "-wal", "-shm"):
                Path(f"{path}{suffix}").unlink(missing_ok=True)
    return {
        "floor_us_per_turn": statistics.median(results["floor"]) / turns * 1e6,
        "floor_1commit_us_per_turn": statistics.median(results["floor_1commit"]) / turns * 1e6,
    }


def _replay(db: Path, repeat: int) -> dict[str, Any]:
    from workload import RUN_ID

    import wopdsl
    from wopdsl import CouncilState, SqliteStore

    folds, attaches = [], []
    for _ in range(repeat):
        store = SqliteStore(db)
        wall0 = time.perf_counter()
        state = CouncilState.fold(store.read(RUN_ID))
        folds.append(time.perf_counter() - wall0)
        store.close()
        if state.status != "completed" or state.result() != state.outputs:
            raise SystemExit("replay did not rebuild the completed result")
        wall0 = time.perf_counter()
        run = wopdsl.attach(str(db), RUN_ID)
        result = run.result
        attaches.append(time.perf_counter() - wall0)
        run.store.close()
        if result != state.outputs:
            raise SystemExit("attach(...).result differs from the fold")
    return {"replay_fold_ms": statistics.median(folds) * 1000,
            "replay_attach_ms": statistics.median(attaches) * 1000}


def _tail_check(council: Any, db: Path) -> list[dict[str, Any]]:
    """Time building one member's input (build_turn + the template context) as history grows."""
    from workload import RUN_ID

    from wopdsl import SqliteStore
    from wopdsl.agents.base import turn_context
    from wopdsl.engine._inputs import build_turn
    from wopdsl.state import CouncilState, Inflight

    graph = council.compile()
    store = SqliteStore(db)
    events = store.read(RUN_ID)
    store.close()
    total = sum(1 for e in events if e["type"] == "conversation.exchanged")
    marks = sorted({h for h in (10, 100, 1_000, 10_000, 100_000) if h <= total} | {total})
    state = CouncilState()
    points: list[dict[str, Any]] = []
    for event in events:
        state.apply(event)
        if event["type"] != "conversation.exchanged" or len(state.messages) not in marks:
            continue
        member = next(iter(state.queue))
        inflight = Inflight(member=member, position=state.next_position, attempt=0,
                            turn=state.members[member].turns + 1,
                            triggers=list(state.queue[member]))
        compiled = graph.members[member]
        loops, rounds = 2_000, []
        for _ in range(5):
            wall0 = time.perf_counter()
            for _ in range(loops):
                turn = build_turn(state, compiled, inflight)
                turn_context(turn)
            rounds.append((time.perf_counter() - wall0) / loops * 1e6)
        points.append({"history": len(state.messages), "input_messages": len(turn.messages),
                       "us_per_input": statistics.median(rounds)})
    return points


# -- the parent: spawn the workloads, print the table ----------------------------------------


def _spawn(job: dict[str, Any]) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--child", json.dumps(job)],
        capture_output=True, text=True, check=False,
    )
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout + proc.stderr)
        raise SystemExit(f"workload {job} failed (exit {proc.returncode})")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def _ints(text: str) -> list[int]:
    return [int(part.replace("_", "")) for part in text.split(",") if part.strip()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="small T (100, 1000) and one timed repeat, for a fast look")
    parser.add_argument("--repeat", type=int, help="timed runs per workload (default 5; 1 quick)")
    parser.add_argument("--json", type=Path, help="also write every number to this file")
    parser.add_argument("--members", default="3,8", help="N values (default 3,8)")
    parser.add_argument("--turns", help="T values (default 1000,10000; quick 100,1000)")
    parser.add_argument("--engines", default="script,python,python-sync", help="member engines")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(json.loads(args.child))))
        return 0

    repeat = args.repeat or (1 if args.quick else 5)
    turns = _ints(args.turns or ("100,1000" if args.quick else "1000,10000"))
    members = _ints(args.members)
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    tail_job = (engines[0], members[0], max(turns))
    results = []
    for engine in engines:
        for n in members:
            for t in turns:
                # A small T gets as many more runs as keep its sampling time near the largest
                # T's, so one quiet or busy second of a shared machine cannot decide its median
                # (and with it the flatness check).
                runs = repeat * min(10, max(1, round(max(turns) / t)))
                job = {"engine": engine, "n": n, "turns": t, "repeat": runs,
                       "tail": (engine, n, t) == tail_job}
                if t == max(turns) and len(turns) > 1:
                    job["pair_turns"] = min(turns)  # The flatness check, measured side by side.
                sys.stderr.write(f"  {engine:6} N={n:<2} T={t:<6} ... ")
                sys.stderr.flush()
                wall0 = time.perf_counter()
                results.append(_spawn(job))
                sys.stderr.write(f"{time.perf_counter() - wall0:5.1f} s\n")
    report = _report(results, repeat)
    print(report["text"])
    if args.json:
        args.json.write_text(json.dumps({"machine": _machine(), "repeat": repeat,
                                         "results": results, "checks": report["checks"]},
                                        indent=2) + "\n")
    return 0


def _machine() -> dict[str, Any]:
    return {"python": platform.python_version(), "sqlite": sqlite3.sqlite_version,
            "platform": platform.platform(), "cpus": os.cpu_count()}


def _json_cost(db: Path, turns: int, repeat: int) -> float:
    """Time the store's JSON encoding of the run's events (what each append encodes)."""
    from wopdsl.store import SqliteStore
    from wopdsl.store._codec import encode_event as _encode

    store = SqliteStore(db)
    try:
        events = store.read(store.runs()[0].run_id)
    finally:
        store.close()
    times = []
    for _ in range(repeat):
        wall0 = time.perf_counter()
        for event in events:
            _encode(event)
        times.append(time.perf_counter() - wall0)
    return statistics.median(times) / turns * 1e6


def _largest(results: list[dict[str, Any]], row: dict[str, Any]) -> dict[str, Any]:
    same = [x for x in results if x["engine"] == row["engine"] and x["n"] == row["n"]]
    return max(same, key=lambda x: x["turns"])


def _report(results: list[dict[str, Any]], repeat: int) -> dict[str, Any]:
    m = _machine()
    lines = [f"wopdsl benchmark: W(N, T), tail_messages = 8, SQLite {m['sqlite']} WAL "
             f"synchronous=NORMAL; Python {m['python']}, {m['cpus']} CPUs; "
             f"median of {repeat} run(s) at the largest T, up to 10x as many at smaller T "
             "(the same sampling time)", ""]
    header = (f"{'workload':<12} {'T':>7} {'µs/turn':>8} {'cpu µs':>7} {'floor':>6} "
              f"{'x floor':>7} {'floor1':>6} {'RSS MiB':>8} {'log B/turn':>10} "
              f"{'replay ms':>9} {'attach ms':>9}")
    lines += [header, "-" * len(header)]
    for r in results:
        lines.append(
            f"{r['engine'] + ' N=' + str(r['n']):<17} {r['turns']:>7,} {r['us_per_turn']:>8.1f} "
            f"{r['cpu_us_per_turn']:>7.1f} {r['floor_us_per_turn']:>6.1f} "
            f"{r['us_per_turn'] / r['floor_us_per_turn']:>7.2f} "
            f"{r['floor_1commit_us_per_turn']:>6.1f} {r['peak_rss_mib']:>8.1f} "
            f"{r['log_bytes_per_turn']:>10.0f} {r['replay_fold_ms']:>9.1f} "
            f"{r['replay_attach_ms']:>9.1f}")
    lines += ["", "floor  = the run's own events and transactions, raw sqlite3 inserts, µs/turn",
              "floor1 = the same events with one commit per turn"]
    lines += ["", "where a turn's time goes (µs/turn, largest T of each workload):",
              f"  {'workload':<12} {'total':>7} {'floor':>7} {'json':>7} {'engine':>7} "
              f"{'compile':>7} {'rest':>7}"]
    for r in results:
        if r is not _largest(results, r):
            continue
        compile_us = r["compile_ms"] * 1000 / r["turns"]
        rest = (r["us_per_turn"] - r["floor_us_per_turn"] - r["json_us_per_turn"]
                - r["engine_us_per_turn"] - compile_us)
        lines.append(f"  {r['engine'] + ' N=' + str(r['n']):<12} {r['us_per_turn']:>7.1f} "
                     f"{r['floor_us_per_turn']:>7.1f} {r['json_us_per_turn']:>7.1f} "
                     f"{r['engine_us_per_turn']:>7.1f} {compile_us:>7.1f} {rest:>7.1f}")
    lines += ["  floor  = SQLite itself (inserts and commits of the same rows)",
              "  json   = encoding the run's events as the store does (one JSON text each)",
              "  engine = the engine on a store that keeps nothing (no JSON, no SQLite)",
              "  compile = council.compile() (in arun(); a script's steps compile here)",
              "  rest   = the store's checks, opening it, arun()/Run, the GC, cache effects, noise"]
    checks: dict[str, Any] = {"target_us": [], "flat": [], "replay": [], "tail": None}
    lines += ["", "checks:"]
    for r in results:
        ok = r["us_per_turn"] <= TARGET_US
        checks["target_us"].append({"engine": r["engine"], "n": r["n"], "turns": r["turns"],
                                    "us_per_turn": r["us_per_turn"], "ok": ok})
    worst = max(results, key=lambda r: r["us_per_turn"])
    lines.append(f"  ≤ {TARGET_US:.0f} µs/turn: "
                 f"{'PASS' if all(c['ok'] for c in checks['target_us']) else 'MISS'} "
                 f"(worst {worst['us_per_turn']:.1f} µs, {worst['engine']} N={worst['n']} "
                 f"T={worst['turns']:,})")
    groups: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for r in results:
        groups.setdefault((r["engine"], r["n"]), []).append(r)
    for (engine, n), rows in groups.items():
        if len(rows) < 2:
            continue
        small, large = min(rows, key=lambda r: r["turns"]), max(rows, key=lambda r: r["turns"])
        wall = large["us_per_turn"] / small["us_per_turn"]
        cpu = large["cpu_us_per_turn"] / small["cpu_us_per_turn"]
        pair = large.get("flat_pair")
        side = pair["large_us"] / pair["small_us"] if pair else None
        ok = (side if side is not None else min(wall, cpu)) <= FLAT_LIMIT
        checks["flat"].append({"engine": engine, "n": n, "wall_ratio": wall, "cpu_ratio": cpu,
                               "side_by_side_ratio": side, "ok": ok})
        measured = (f"{side:.2f} side by side (table: {wall:.2f}, cpu {cpu:.2f})"
                    if side is not None else f"{wall:.2f} (cpu {cpu:.2f})")
        lines.append(f"  flat {engine} N={n}: µs/turn at T={large['turns']:,} / "
                     f"T={small['turns']:,} = {measured} "
                     f"{'PASS' if ok else 'MISS'} (limit {FLAT_LIMIT})")
    for r in results:
        if r is _largest(results, r):
            slowest = max(r["replay_fold_ms"], r["replay_attach_ms"]) / 1000
            ok = slowest < REPLAY_LIMIT_S
            checks["replay"].append({"engine": r["engine"], "n": r["n"], "turns": r["turns"],
                                     "fold_ms": r["replay_fold_ms"],
                                     "attach_ms": r["replay_attach_ms"], "ok": ok})
            lines.append(f"  replay {r['engine']} N={r['n']} T={r['turns']:,} "
                         f"({r['events']:,} events): fold {r['replay_fold_ms']:.0f} ms, "
                         f"attach().result {r['replay_attach_ms']:.0f} ms "
                         f"{'PASS' if ok else 'MISS'} (< {REPLAY_LIMIT_S:g} s)")
    for r in results:
        if r.get("tail"):
            points = r["tail"]
            ratio = points[-1]["us_per_input"] / points[0]["us_per_input"]
            ok = ratio <= TAIL_LIMIT
            checks["tail"] = {"points": points, "ratio": ratio, "ok": ok}
            shown = ", ".join(f"{p['history']:,} msgs: {p['us_per_input']:.1f} µs"
                              for p in points)
            lines.append(f"  O(tail) input ({r['engine']} N={r['n']}, "
                         f"{points[-1]['input_messages']} messages in): {shown}; "
                         f"ratio {ratio:.2f} {'PASS' if ok else 'MISS'} (limit {TAIL_LIMIT})")
    return {"text": "\n".join(lines), "checks": checks}


if __name__ == "__main__":
    raise SystemExit(main())
