"""``wop run`` against LangGraph with its SQLite checkpointer: the cost of a durable turn.

Usage::

    python3 bench/langgraph.py [--langgraph-python PY] [--members 3] [--turns 200,2000]
                               [--wop-turns T1,T2] [--rounds 5] [--durability sync|async]
                               [--state tail|messages] [--json out.json]

Both sides run the same workload as a user would, each as a fresh subprocess: N members pass
a baton round-robin for T turns, each turn one message to the next member, and every turn is
durable in a SQLite file before the next one starts.

* **wopdsl**: ``wop run baton:council --store FILE`` (``bench/baton.py``: W(N, T) of
  ``bench/workload.py`` with sync python handlers returning a ``Reply``), its transcript
  printed to a pipe that is read and dropped, as a terminal would show it.
* **LangGraph**: a ``StateGraph`` of N nodes (plain functions) whose state holds the last
  8 messages (wopdsl's ``tail_messages = 8``) and a turn counter, each node routing to the
  next member until turn T, compiled with ``SqliteSaver`` on a file and invoked once
  (``durability="sync"`` by default: each step's checkpoint is written before the next step
  runs, as wopdsl commits each turn before the next member runs; ``--durability async`` is
  LangGraph's default, the checkpoint written while the next step already runs). The
  checkpointer's connection gets wopdsl's durability settings (WAL, ``synchronous=NORMAL``).

LangGraph is not a dependency of wopdsl: install it where ``--langgraph-python`` points
(default: this interpreter), e.g. ``python3 -m venv /tmp/lg && /tmp/lg/bin/pip install
langgraph langgraph-checkpoint-sqlite``.

Each round runs both tools at both sizes, alternating which goes first; per turn is
``(wall(T2) − wall(T1)) / (T2 − T1)``, so the start-up (interpreter, imports, opening the
file) cancels out, and the start-up is what is left of T1's time. ``--wop-turns`` gives
``wop run`` a stretch of its own (its cost per turn is flat in T, LangGraph's is not): a
short stretch divides a few milliseconds of turns by the turn count against a start-up
that varies by more. Both wall time and CPU time
(user + system of the child, which a busy shared machine inflates far less) are reported:
medians over the rounds, and the ratio LangGraph / wopdsl per turn (target ≥ 20).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
TARGET = 20.0
STATE = ["tail"]

LANGGRAPH = r"""
import operator, sqlite3, sys
from typing import Annotated, TypedDict
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph

n, turns, path, durability = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
kind = sys.argv[5]


def tail(old: list, new: list) -> list:
    return (old + new)[-8:]


if kind == "tail":
    class State(TypedDict):
        messages: Annotated[list, tail]
        turn: int
else:
    from langchain_core.messages import AIMessage
    from langgraph.graph import add_messages

    class State(TypedDict):
        messages: Annotated[list, add_messages]
        turn: int


def node(index: int):
    following = f"m{(index + 1) % n}"

    def step(state: State) -> dict:
        turn = state["turn"] + 1
        if turn >= turns:
            return {"turn": turn}
        text = f"m{index} hands over after turn {turn}"
        if kind == "tail":
            return {"turn": turn, "messages": [
                {"sender": f"m{index}", "text": text, "mentions": [following]}]}
        return {"turn": turn, "messages": [AIMessage(text, name=f"m{index}")]}
    return step


graph = StateGraph(State)
for i in range(n):
    graph.add_node(f"m{i}", node(i))
graph.add_edge(START, "m0")
for i in range(n):
    graph.add_conditional_edges(
        f"m{i}", lambda state, i=i: END if state["turn"] >= turns else f"m{(i + 1) % n}",
        [END, f"m{(i + 1) % n}"])
conn = sqlite3.connect(path, check_same_thread=False)
saver = SqliteSaver(conn)
saver.setup()
conn.execute("PRAGMA synchronous=NORMAL")
app = graph.compile(checkpointer=saver)
out = app.invoke({"messages": [], "turn": 0},
                 {"configurable": {"thread_id": "bench"}, "recursion_limit": turns + 10},
                 durability=durability)
assert out["turn"] == turns, out["turn"]
conn.close()
"""


def _timed(command: list[str], **kwargs: Any) -> tuple[float, float, bytes]:
    """Run ``command``; return its wall and CPU seconds (user + system) and its stderr."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall0 = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, check=False, **kwargs)
    wall = time.perf_counter() - wall0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr.decode(errors="replace")[-3000:])
        raise SystemExit(f"{command[0]} exited {proc.returncode}")
    return wall, cpu, proc.stdout


def _wop(turns: int, members: int, tmp: Path, index: int) -> tuple[float, float]:
    # Ahead of any PYTHONPATH given (which may point at another tree's wopdsl to compare).
    path = os.pathsep.join(p for p in (str(HERE), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "WOP_BENCH_MEMBERS": str(members), "WOP_BENCH_TURNS": str(turns),
           "PYTHONPATH": path}
    store = tmp / f"wop{index}.db"
    wall, cpu, out = _timed(
        [sys.executable, "-c", "from wopdsl.cli import main; raise SystemExit(main())",
         "run", "baton:council", "--store", str(store)], env=env, cwd=HERE)
    if b"completed: run" not in out:
        raise SystemExit(f"wop run did not complete: {out[-500:]!r}")
    for suffix in ("", "-wal", "-shm", "-claims"):
        Path(f"{store}{suffix}").unlink(missing_ok=True)
    return wall, cpu


def _langgraph(python: str, turns: int, members: int, tmp: Path, index: int,
               durability: str) -> tuple[float, float]:
    path = tmp / f"lg{index}.db"
    wall, cpu, _ = _timed([python, "-c", LANGGRAPH, str(members), str(turns), str(path),
                           durability, STATE[0]])
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    return wall, cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--langgraph-python", default=sys.executable,
                        help="an interpreter with langgraph and langgraph-checkpoint-sqlite")
    parser.add_argument("--members", type=int, default=3)
    parser.add_argument("--turns", default="200,2000", help="T1,T2 (default 200,2000)")
    parser.add_argument("--wop-turns", help="T1,T2 for wop run alone (default: --turns). "
                        "wop's cost per turn is flat in T (bench/run.py checks it), so a "
                        "longer stretch measures the same cost with less noise: with T = "
                        "50 → 250, 200 turns of ~80 µs are 16 ms against a start-up of "
                        "~400 ms that varies by more than that")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--durability", default="sync", choices=["sync", "async"])
    parser.add_argument("--state", default="tail", choices=["tail", "messages"],
                        help="LangGraph state: the last 8 messages (tail), or every message "
                             "(LangGraph's add_messages, as its multi-agent examples keep it)")
    parser.add_argument("--json", type=Path, help="also write every number to this file")
    args = parser.parse_args(argv)
    sizes = {"langgraph": tuple(int(t) for t in args.turns.split(","))}
    sizes["wop"] = tuple(int(t) for t in (args.wop_turns or args.turns).split(","))
    STATE[0] = args.state
    timings: dict[tuple[str, int], list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="wop-lg-") as tmp_name:
        tmp = Path(tmp_name)
        # Warm both (page cache, .pyc files) before timing anything.
        _wop(sizes["wop"][0], args.members, tmp, 0)
        _langgraph(args.langgraph_python, sizes["langgraph"][0], args.members, tmp, 0,
                   args.durability)
        for r in range(args.rounds):
            tools = ["wop", "langgraph"] if r % 2 == 0 else ["langgraph", "wop"]
            for tool in tools:
                for turns in sizes[tool]:
                    timing = (_wop(turns, args.members, tmp, r) if tool == "wop" else
                              _langgraph(args.langgraph_python, turns, args.members, tmp, r,
                                         args.durability))
                    timings.setdefault((tool, turns), []).append(timing)
            sys.stderr.write(f"  round {r + 1}/{args.rounds} done\n")
    rows: dict[str, dict[str, Any]] = {}
    for tool in ("wop", "langgraph"):
        small, large = sizes[tool]
        row: dict[str, Any] = {}
        for k, clock in enumerate(("wall", "cpu")):
            pairs = zip(timings[(tool, small)], timings[(tool, large)], strict=True)
            per_turn = [(lt[k] - st[k]) / (large - small) * 1e6 for st, lt in pairs]
            start = [st[k] * 1000 - p * small / 1000
                     for st, p in zip(timings[(tool, small)], per_turn, strict=True)]
            row[clock] = {"us_per_turn": statistics.median(per_turn), "all": per_turn,
                          "startup_ms": statistics.median(start)}
        row["timings"] = {str(t): timings[(tool, t)] for t in (small, large)}
        rows[tool] = row
    ratios = {clock: rows["langgraph"][clock]["us_per_turn"] / rows["wop"][clock]["us_per_turn"]
              for clock in ("wall", "cpu")}
    windows = {tool: f"(T={b:,} - T={a:,}) / {b - a:,}" for tool, (a, b) in sizes.items()}
    window = windows["wop"] if windows["wop"] == windows["langgraph"] else \
        f"{windows['wop']} for wop, {windows['langgraph']} for LangGraph"
    print(f"W({args.members}, T), sync python members, durable SQLite; per turn = "
          f"{window}, median of {args.rounds} rounds; "
          f"LangGraph durability={args.durability}; load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(f"{'tool':<32} {'µs/turn':>8} {'cpu µs':>8} {'start-up ms':>12} {'cpu ms':>7}")
    for tool, name in (("wop", "wop run (transcript to a pipe)"),
                       ("langgraph", "LangGraph + SqliteSaver")):
        wall, cpu = rows[tool]["wall"], rows[tool]["cpu"]
        print(f"{name:<32} {wall['us_per_turn']:>8.1f} {cpu['us_per_turn']:>8.1f} "
              f"{wall['startup_ms']:>12.0f} {cpu['startup_ms']:>7.0f}")
    for clock in ("wall", "cpu"):
        per_round = [lg / w for lg, w in zip(rows["langgraph"][clock]["all"],
                                             rows["wop"][clock]["all"], strict=True)]
        print(f"LangGraph / wop per turn ({clock}): {ratios[clock]:.1f}x (rounds "
              f"{min(per_round):.1f}–{max(per_round):.1f}) "
              f"{'PASS' if ratios[clock] >= TARGET else 'MISS'} (target ≥ {TARGET:g})")
    if args.json:
        args.json.write_text(json.dumps({"members": args.members, "turns": sizes,
                                         "durability": args.durability, "rows": rows,
                                         "ratios": ratios, "load": os.getloadavg()},
                                        indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
