"""Instructions per turn, counted with valgrind: the A/B signal a busy machine cannot spoil.

Usage::

    python3 bench/instructions.py [--engines script,python,python-sync] [--members 3]
                                  [--turns 300] [--base REV] [--json out.json]

Wall time on a shared machine moves by ±30 % from one minute to the next; the number of
instructions a run executes does not. Each figure here is counted by
``valgrind --tool=cachegrind --cache-sim=no`` in a child process that builds W(N, T)
(``bench/workload.py``), runs it once to warm up and then ``k`` more times; the same child is
counted with k = 1 and k = 3, and the difference over 2 T is the cost of one turn with
everything a timed ``council.arun()`` pays (compile, opening the store, every commit, the
run's end) and nothing the process pays once (imports, the warm-up). Per engine:

* ``sqlite``: ``council.arun()`` on a fresh SQLite file (what ``bench/run.py`` times);
* ``floor``: the same run's rows inserted with raw ``sqlite3`` in the run's own transactions
  (``bench/run.py``'s floor, counted the same way);
* ``engine``: the compiled council driven by ``Engine`` on a store that keeps nothing.

``--base REV`` counts an older revision too (checked out into a temporary git worktree) and
prints new / base. Valgrind runs Python about 50 times slower; the default T = 300 takes a
minute or two per engine.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

CHILD = r"""
import asyncio, sqlite3, sys, tempfile
from pathlib import Path
tree, kind, engine = sys.argv[1], sys.argv[2], sys.argv[3]
n, turns, runs = (int(a) for a in sys.argv[4:7])
sys.path[:0] = [tree, tree + "/bench"]
import wopdsl
assert Path(wopdsl.__file__).resolve().is_relative_to(Path(tree).resolve()), wopdsl.__file__
# Under valgrind every call is ~50 times slower: a sync handler would pass the 5 ms in-place
# threshold now and then and move to worker threads, which a normal run never does.
# Its windows in wall time (quick turns, their commit groups) are stretched as much.
import wopdsl.agents.python
import wopdsl.engine._batches
wopdsl.agents.python.INLINE_THRESHOLD_S = 3600.0
wopdsl.agents.python.QUICK_S = wopdsl.engine._batches._YIELD_EVERY = 0.05
from workload import CountingStore, build_council, run_engine_only, run_once
council = build_council(engine, n, turns)
with tempfile.TemporaryDirectory(prefix="wop-instr-") as tmp:
    if kind == "engine":
        for _ in range(runs + 1):
            assert run_engine_only(council).status == "completed"
    elif kind == "sqlite":
        for k in range(runs + 1):
            assert run_once(council, str(Path(tmp) / f"run{k}.db")).status == "completed"
    else:  # the floor: the run's own rows, raw inserts, the run's own transactions
        store = CountingStore(Path(tmp) / "warm.db")
        run_once(council, store)
        src = sqlite3.connect(Path(tmp) / "warm.db")
        layout = [s for (s,) in src.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'table' AND sql IS NOT NULL")]
        rows = src.execute("SELECT * FROM events ORDER BY rowid").fetchall()
        first = src.execute("SELECT * FROM runs").fetchall()
        (page,) = src.execute("PRAGMA page_size").fetchone()
        src.close()
        insert = f"INSERT INTO events VALUES ({', '.join('?' * len(rows[0]))})"
        insert_run = f"INSERT INTO runs VALUES ({', '.join('?' * len(first[0]))})"
        chunks, start = [], 0
        for size in store.batches:
            chunks.append(rows[start:start + size])
            start += size
        for k in range(runs):
            conn = sqlite3.connect(Path(tmp) / f"floor{k}.db", isolation_level=None)
            conn.execute(f"PRAGMA page_size = {page}")
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(f"PRAGMA wal_autocheckpoint = {4 * 1024 * 1024 // page}")
            for sql in layout:
                conn.execute(sql)
            for index, chunk in enumerate(chunks):
                if index and len(chunk) <= 8:  # one statement, as the store (bench/run.py)
                    conn.execute("INSERT INTO events VALUES "
                                 + ", ".join(["(?, ?, ?, ?)"] * len(chunk)),
                                 [value for row in chunk for value in row])
                    continue
                conn.execute("BEGIN IMMEDIATE")
                conn.executemany(insert, chunk)
                if index == 0:
                    conn.executemany(insert_run, first)
                conn.execute("COMMIT")
            conn.close()
"""

_REFS = re.compile(r"I\s+refs:\s+([\d,]+)")


def count(tree: Path, kind: str, engine: str, n: int, turns: int, runs: int) -> int:
    """Instructions of one child (``runs`` measured runs after its warm-up)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    with tempfile.TemporaryDirectory(prefix="wop-cg-") as tmp:
        proc = subprocess.run(
            ["valgrind", "--tool=cachegrind", "--cache-sim=no",
             f"--cachegrind-out-file={tmp}/out", sys.executable, "-c", CHILD, str(tree), kind,
             engine, str(n), str(turns), str(runs)],
            capture_output=True, text=True, env=env, cwd=tree, check=False,
        )
    match = _REFS.search(proc.stderr)
    if proc.returncode != 0 or match is None:
        sys.stderr.write(proc.stdout + proc.stderr[-4000:])
        raise SystemExit(f"counting {kind} {engine} failed (exit {proc.returncode})")
    return int(match.group(1).replace(",", ""))


def per_turn(tree: Path, kind: str, engine: str, n: int, turns: int) -> float:
    """Instructions per turn: (3 runs − 1 run) / 2 T."""
    one = count(tree, kind, engine, n, turns, 1)
    three = count(tree, kind, engine, n, turns, 3)
    return (three - one) / (2 * turns)


def measure(tree: Path, engines: list[str], n: int, turns: int) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for engine in engines:
        row = {kind: per_turn(tree, kind, engine, n, turns)
               for kind in ("sqlite", "floor", "engine")}
        row["x_floor"] = row["sqlite"] / row["floor"]
        out[engine] = row
        sys.stderr.write(f"  {tree.name} {engine}: {row}\n")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engines", default="script,python,python-sync")
    parser.add_argument("--members", type=int, default=3)
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--base", help="also count this git revision, and print new / base")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args(argv)
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    results: dict[str, Any] = {"members": args.members, "turns": args.turns}
    results["new"] = measure(ROOT, engines, args.members, args.turns)
    if args.base:
        with tempfile.TemporaryDirectory(prefix="wop-instr-base-") as tmp:
            base = Path(tmp) / "base"
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(base),
                            args.base], check=True, capture_output=True)
            try:
                results["base"] = measure(base, engines, args.members, args.turns)
            finally:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                                str(base)], check=False, capture_output=True)
    print(f"instructions per turn, W({args.members}, {args.turns}), counted by cachegrind "
          "(k = 3 runs minus k = 1, / 2 T)")
    header = f"{'engine':<12} {'tree':<5} {'arun':>10} {'floor':>10} {'x floor':>8} {'engine':>10}"
    print(header)
    print("-" * len(header))
    for engine in engines:
        for tree in ("base", "new"):
            if tree not in results:
                continue
            row = results[tree][engine]
            print(f"{engine:<12} {tree:<5} {row['sqlite']:>10,.0f} {row['floor']:>10,.0f} "
                  f"{row['x_floor']:>8.2f} {row['engine']:>10,.0f}")
        if "base" in results:
            new, old = results["new"][engine], results["base"][engine]
            print(f"{'':<12} {'new/base':<5} {new['sqlite'] / old['sqlite']:>7.3f} "
                  f"{'':>10} {'':>8} {new['engine'] / old['engine']:>10.3f}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
