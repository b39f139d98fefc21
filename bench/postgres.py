"""The PostgreSQL store's benchmark (see docs/performance.md, "PostgreSQL").

Usage::

    python3 bench/postgres.py [--url postgresql://…] [--quick] [--repeat K]
                              [--members 3] [--turns 1000,10000] [--hosts 1,2,4]
                              [--seconds S] [--json out.json]

The server comes from ``--url``, else ``$WOPDSL_BENCH_POSTGRES``, else
``$WOPDSL_TEST_POSTGRES`` (``.ci/postgres.sh`` starts one); its role must be allowed to
create databases: every timed run gets a fresh one. Two figures:

* W(N, T) (``bench/workload.py``, python members) with ``store="postgresql://…"``: µs per
  turn (``council.arun()`` wall time / T, median of K), next to its floor measured in the
  same run on the same server: the run's own rows (read back from the store) inserted with a
  raw psycopg loop into a table of the same layout, one commit per turn (``floor1``), and in
  the run's own transactions (``floor``). Flatness: µs per turn at the largest T / smallest.
* Runs per second with 1, 2 and 4 host processes on one database: each host runs small
  councils (W(3, 10)) back to back for S seconds, each on its own run id. Reported with the
  database server's CPU share (the ``postgres`` processes' CPU time from /proc over the wall
  time, on this machine's CPUs; only when the server runs here).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

TARGET_X_FLOOR = 3.0
"""Target: at most this multiple of the one-commit-per-turn floor."""
FLAT_LIMIT = 1.25


def _server(args: argparse.Namespace) -> str:
    url = args.url or os.environ.get("WOPDSL_BENCH_POSTGRES") or \
        os.environ.get("WOPDSL_TEST_POSTGRES")
    if not url:
        raise SystemExit("no server: pass --url or set WOPDSL_TEST_POSTGRES "
                         "(WOPDSL_TEST_POSTGRES=\"$(.ci/postgres.sh)\")")
    return url


def _shown(url: str) -> str:
    from wopdsl.store import describe_target

    return describe_target(url)


@contextmanager
def fresh_database(server: str) -> Iterator[str]:
    """A new empty database on ``server`` (dropped afterwards); yields its URL."""
    import psycopg

    name = f"wopdsl_bench_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield urlunsplit(urlsplit(server)._replace(path=f"/{name}"))
    finally:
        drop(server, name)


def drop(server: str, name: str) -> None:
    """Drop a database, waiting out an autovacuum worker (FORCE may not end it)."""
    import psycopg

    with psycopg.connect(server, autocommit=True) as conn:
        for attempt in range(50):
            try:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
                return
            except (psycopg.errors.InsufficientPrivilege, psycopg.errors.ObjectInUse):
                if attempt == 49:
                    raise
                time.sleep(0.1)


# -- figure 1: W(N, T) next to its floor ---------------------------------------------------


def w_nt(server: str, n: int, turns: int, repeat: int) -> dict[str, Any]:
    """Time W(n, turns) on fresh databases; then its floor with the run's own rows."""
    from workload import RUN_ID, build_council, run_once

    council = build_council("python", n, turns)
    walls, cpus = [], []
    events = 0
    with fresh_database(server) as url:
        run_once(council, url)  # Warm-up: imports, the store's tables, plan caches.
    for _ in range(repeat):
        with fresh_database(server) as url:
            timing = run_once(council, url)
            if timing.status != "completed":
                raise SystemExit(f"W({n}, {turns}) ended {timing.status}")
            walls.append(timing.wall)
            cpus.append(timing.cpu)
            events = timing.events
            rows = _rows(url, RUN_ID)
    floors, floors_batched = [], []
    batches = _batches(build_council("python", n, turns), server)
    for _ in range(max(repeat, 3)):
        floors.append(_floor(server, rows, _per_turn(rows, turns)) / turns * 1e6)
        floors_batched.append(_floor(server, rows, _split(rows, batches)) / turns * 1e6)
    return {"n": n, "turns": turns, "events": events,
            "us_per_turn": statistics.median(walls) / turns * 1e6,
            "cpu_us_per_turn": statistics.median(cpus) / turns * 1e6,
            "us_per_turn_all": [w / turns * 1e6 for w in walls],
            "floor1_us_per_turn": statistics.median(floors),
            "floor_us_per_turn": statistics.median(floors_batched),
            "transactions": len(batches)}


def _rows(url: str, run_id: str) -> list[tuple[Any, ...]]:
    """The run's rows exactly as the store wrote them."""
    import psycopg

    with psycopg.connect(url) as conn:
        return [tuple(r) for r in conn.execute(
            "SELECT run_id, sequence, type, body FROM wopdsl_events WHERE run_id = %s "
            "ORDER BY sequence", (run_id,)).fetchall()]


def _batches(council: Any, server: str) -> list[int]:
    """How many events each of the store's appends wrote (its transactions)."""
    from workload import run_once

    from wopdsl.store.postgres import PostgresStore

    class Counting(PostgresStore):
        batches: list[int]

        def append(self, run_id: str, events: Any, expected_sequence: int) -> None:
            self.batches.append(len(events))
            super().append(run_id, events, expected_sequence)

    with fresh_database(server) as url:
        store = Counting(url)
        store.batches = []
        run_once(council, store)
        return store.batches


def _per_turn(rows: list[Any], turns: int) -> list[list[Any]]:
    return [rows[round(i * len(rows) / turns):round((i + 1) * len(rows) / turns)]
            for i in range(turns)]


def _split(rows: list[Any], sizes: list[int]) -> list[list[Any]]:
    chunks, start = [], 0
    for size in sizes:
        chunks.append(rows[start:start + size])
        start += size
    return chunks


def _floor(server: str, rows: list[Any], chunks: list[list[Any]]) -> float:
    """Seconds to insert ``chunks`` (one transaction each) with a raw psycopg loop."""
    import psycopg

    with fresh_database(server) as url, psycopg.connect(url) as conn:
        conn.execute("CREATE TABLE events (run_id text NOT NULL, sequence bigint NOT NULL, "
                     "type text NOT NULL, body text NOT NULL, PRIMARY KEY (run_id, sequence))")
        conn.execute("CREATE TABLE runs (position bigint GENERATED ALWAYS AS IDENTITY, "
                     "run_id text PRIMARY KEY, workflow_id text NOT NULL, "
                     "started_at text NOT NULL)")
        conn.commit()
        insert = "INSERT INTO events (run_id, sequence, type, body) VALUES (%s, %s, %s, %s)"
        wall0 = time.perf_counter()
        with conn.cursor() as cursor:
            for index, chunk in enumerate(chunks):
                cursor.executemany(insert, chunk)
                if index == 0:
                    cursor.execute("INSERT INTO runs (run_id, workflow_id, started_at) "
                                   "VALUES (%s, 'bench', '')", (rows[0][0],))
                conn.commit()
        return time.perf_counter() - wall0


# -- figure 2: runs per second with several host processes ----------------------------------


def host(url: str, go: str, seconds: float, name: str) -> dict[str, Any]:
    """One host process: run W(3, 10) councils back to back for ``seconds``."""
    from workload import build_council

    from wopdsl.store.postgres import PostgresStore

    council = build_council("python", 3, 10)
    council.compile()
    store = PostgresStore(url)
    print("ready", flush=True)
    while not Path(go).exists():
        time.sleep(0.001)

    async def loop() -> int:
        done = 0
        deadline = time.perf_counter() + seconds
        while time.perf_counter() < deadline:
            run = await council.arun(store=store, run_id=f"{name}-{done}")
            if run.status != "completed":
                raise SystemExit(f"run {name}-{done} ended {run.status}")
            done += 1
        return done

    wall0, cpu0 = time.perf_counter(), time.process_time()
    done = asyncio.run(loop())
    result = {"runs": done, "wall": time.perf_counter() - wall0,
              "cpu": time.process_time() - cpu0}
    store.close()
    return result


def hosts(server: str, count: int, seconds: float, tmp: Path) -> dict[str, Any]:
    go = tmp / f"go-{count}"
    with fresh_database(server) as url:
        from wopdsl.store.postgres import PostgresStore

        PostgresStore(url).close()  # The tables exist before the hosts start.
        procs = [subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--host",
             json.dumps([url, str(go), seconds, f"h{i}"])],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(count)]
        for proc in procs:
            assert proc.stdout is not None
            if proc.stdout.readline().strip() != "ready":
                raise SystemExit(proc.communicate()[1])
        db0, wall0 = _server_cpu(server), time.perf_counter()
        go.touch()
        results = []
        for proc in procs:
            out, err = proc.communicate(timeout=seconds * 10 + 120)
            if proc.returncode != 0:
                raise SystemExit(err)
            results.append(json.loads(out.strip().splitlines()[-1]))
        wall, db1 = time.perf_counter() - wall0, _server_cpu(server)
    runs = sum(r["runs"] for r in results)
    cpus = os.cpu_count() or 1
    db_share = None if db0 is None or db1 is None else (db1 - db0) / (wall * cpus)
    return {"hosts": count, "runs": runs, "wall_s": wall, "runs_per_s": runs / wall,
            "host_cpu_share": sum(r["cpu"] for r in results) / (wall * cpus),
            "db_cpu_share": db_share}


def _server_cpu(server: str) -> float | None:
    """CPU seconds used so far by the server's processes, when it runs on this machine."""
    import psycopg

    try:
        with psycopg.connect(server) as conn:
            backend = conn.info.backend_pid
            # A backend's parent is the postmaster, if the backend runs on this machine.
            stat = (Path("/proc") / str(backend) / "stat").read_text()
            if "(postgres)" not in stat:
                return None
            postmaster = int(stat.rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, psycopg.Error):
        return None
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid, ppid = int(entry.name), int(fields[1])
        if pid == postmaster:  # Its own time, and its ended backends' (cutime + cstime).
            total += sum(int(fields[i]) for i in (11, 12, 13, 14)) / ticks
        elif ppid == postmaster:
            total += (int(fields[11]) + int(fields[12])) / ticks  # utime + stime
    return total


def _settings(server: str) -> str:
    import psycopg

    with psycopg.connect(server) as conn:
        version = conn.execute("SHOW server_version").fetchone()
        rows = dict(conn.execute(
            "SELECT name, setting FROM pg_settings WHERE name IN "
            "('fsync', 'synchronous_commit', 'full_page_writes')").fetchall())
    return (f"PostgreSQL {version[0] if version else '?'}, fsync={rows.get('fsync')}, "
            f"synchronous_commit={rows.get('synchronous_commit')}, "
            f"full_page_writes={rows.get('full_page_writes')}")


def _ints(text: str) -> list[int]:
    return [int(part.replace("_", "")) for part in text.split(",") if part.strip()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="a server URL whose role may create databases")
    parser.add_argument("--quick", action="store_true", help="T=100,1000, 1 repeat, 2 s hosts")
    parser.add_argument("--repeat", type=int, help="timed runs per W(N, T) (default 5)")
    parser.add_argument("--members", type=int, default=3)
    parser.add_argument("--turns", help="T values (default 1000,10000)")
    parser.add_argument("--hosts", default="1,2,4", help="host process counts")
    parser.add_argument("--seconds", type=float, help="seconds each host runs (default 10)")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--host", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.host:
        url, go, seconds, name = json.loads(args.host)
        print(json.dumps(host(url, go, seconds, name)))
        return 0
    server = _server(args)
    repeat = args.repeat or (1 if args.quick else 5)
    turns = _ints(args.turns or ("100,1000" if args.quick else "1000,10000"))
    seconds = args.seconds or (2.0 if args.quick else 10.0)
    lines = [f"wopdsl PostgreSQL benchmark on {_shown(server)}: {_settings(server)}; "
             f"{os.cpu_count()} CPUs, median of {repeat}", ""]
    header = f"{'W(N, T)':<14} {'µs/turn':>8} {'cpu µs':>7} {'floor1':>7} {'x floor1':>8} " \
             f"{'floor':>7} {'x floor':>7}"
    lines += [header, "-" * len(header)]
    figures = []
    for t in turns:
        sys.stderr.write(f"  W({args.members}, {t}) ... ")
        sys.stderr.flush()
        r = w_nt(server, args.members, t, repeat)
        sys.stderr.write("done\n")
        figures.append(r)
        lines.append(f"{f'W({args.members}, {t:,})':<14} {r['us_per_turn']:>8.1f} "
                     f"{r['cpu_us_per_turn']:>7.1f} {r['floor1_us_per_turn']:>7.1f} "
                     f"{r['us_per_turn'] / r['floor1_us_per_turn']:>8.2f} "
                     f"{r['floor_us_per_turn']:>7.1f} "
                     f"{r['us_per_turn'] / r['floor_us_per_turn']:>7.2f}")
    lines += ["", "floor1 = the run's rows, raw psycopg executemany, one commit per turn",
              "floor  = the same rows in the run's own transactions", ""]
    worst = max(r["us_per_turn"] / r["floor1_us_per_turn"] for r in figures)
    verdict = "PASS" if worst <= TARGET_X_FLOOR else "MISS"
    lines.append(f"check ≤ {TARGET_X_FLOOR:g} x floor1: {verdict} (worst {worst:.2f})")
    if len(figures) > 1:
        flat = figures[-1]["us_per_turn"] / figures[0]["us_per_turn"]
        lines.append(f"check flat T={turns[-1]:,} / T={turns[0]:,}: {flat:.2f} "
                     f"{'PASS' if flat <= FLAT_LIMIT else 'MISS'} (limit {FLAT_LIMIT})")
    lines += ["", f"runs per second, W(3, 10) councils back to back for {seconds:g} s per host:",
              f"  {'hosts':>5} {'runs':>6} {'runs/s':>7} {'hosts CPU':>9} {'db CPU':>7}"]
    scale = []
    import tempfile

    with tempfile.TemporaryDirectory(prefix="wop-pg-bench-") as tmp:
        for count in _ints(args.hosts):
            sys.stderr.write(f"  {count} host(s) ... ")
            sys.stderr.flush()
            s = hosts(server, count, seconds, Path(tmp))
            sys.stderr.write("done\n")
            scale.append(s)
            db = "n/a" if s["db_cpu_share"] is None else f"{s['db_cpu_share']:.0%}"
            lines.append(f"  {count:>5} {s['runs']:>6} {s['runs_per_s']:>7.1f} "
                         f"{s['host_cpu_share']:>9.0%} {db:>7}")
    lines.append("  (CPU shares are of all this machine's CPUs over the wall time)")
    print("\n".join(lines))
    if args.json:
        args.json.write_text(json.dumps({"server": _settings(server), "w_nt": figures,
                                         "hosts": scale}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
