"""What deliberation costs per turn (DESIGN.md §22, docs/performance.md).

Usage::

    python3 bench/deliberation.py [--members 20] [--rounds 1000] [--repeat 3] [--json out.json]

Two councils of N sync python members in one room, on the durable SQLite log, each member
taking R turns (N × R turns in all, one post each, ``tail_messages = 8``):

* **deliberating**: the room debates R blind rounds (``rounds = R``, ``blind = true``) and
  every turn also votes on a decision (``[[decisions]]``, majority of all N): the rounds'
  system turns, the votes, blind inputs and the decision's close are all paid for;
* **baseline** (the floor of this comparison): the same members passing a baton round-robin
  by mentions — the same number of turns and posts, no deliberation feature.

Each runs in its own subprocess, once to warm up and then K timed times; reported: µs per
turn (median), the ratio deliberating / baseline (target ≤ 1.2), and the O(tail) check: the
time to build a blind member's input after 10 % of the rounds and after all of them.

Wall time on a shared machine swings by tens of percent; ``--instructions`` also counts the
CPU instructions per turn of each council under ``valgrind --tool=callgrind`` (the same
count on a busy or an idle machine): each council runs R/4 and R/2 rounds, and the
difference divided by the turns between them is the cost of a turn, start-up left out.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TARGET_RATIO = 1.2
"""Deliberating µs per turn may be at most this multiple of the baseline's."""
TAIL_LIMIT = 1.5
"""Building an input at the longest history may cost at most this multiple of the shortest."""
TAIL = 8


def build(kind: str, members: int, rounds: int) -> Any:
    """The deliberating council or its baseline."""
    from wopdsl import Council

    ids = [f"m{i:02d}" for i in range(members)]
    council = Council("bench-deliberation", task="Decide.", tail_messages=TAIL,
                      global_concurrency=1, max_turns_per_member=rounds)
    if kind == "deliberating":
        council.room("room", members=ids, rounds=rounds, blind=True)
        council.decision("d", room="room", question="Yes?", options=["yes", "no"])
    else:
        council.room("room", members=ids)

    def make(index: int) -> Any:
        following = ids[(index + 1) % members]

        # Handlers return the JSON result shape (no pydantic in the members' own code): the
        # comparison is of what the engine does per turn, not of building models.
        def handler(turn: Any) -> dict[str, Any]:
            text = f"{turn.member} turn {turn.turn}"
            if kind == "deliberating":
                return {"summary": text, "posts": [{"roomId": "room", "text": text,
                                                    "mentions": []}],
                        "votes": [{"decision": "d", "choice": "yes" if turn.turn % 2 else "no",
                                   "reason": "because"}]}
            last = turn.turn == rounds and index == members - 1
            return {"summary": text, "posts": [{"roomId": "room", "text": text,
                                                "mentions": [] if last else [following]}]}

        return handler

    for index, member in enumerate(ids):
        council.member(member, role="member", initial_turn=kind == "deliberating" or
                       index == 0)(make(index))
    return council


def child(job: dict[str, Any]) -> dict[str, Any]:
    from wopdsl import SqliteStore, attach

    kind, members, rounds, repeat = job["kind"], job["members"], job["rounds"], job["repeat"]
    council = build(kind, members, rounds)
    walls = []
    with tempfile.TemporaryDirectory(prefix="wop-bench-delib-") as tmp:
        for k in range(repeat + 1):
            store = SqliteStore(Path(tmp) / f"run{k}.db")

            async def go(store: SqliteStore = store) -> tuple[float, str, int]:
                start = time.perf_counter()
                run = await council.arun(store=store, run_id="bench")
                wall = time.perf_counter() - start
                return wall, run.status, store.last_sequence("bench") + 1

            wall, status, events = asyncio.run(go())
            if status != "completed":
                raise SystemExit(f"{kind} run ended {status}")
            if k:  # The first run warms up.
                walls.append(wall)
            turns = members * rounds
        out = {"kind": kind, "members": members, "rounds": rounds, "turns": turns,
               "events": events, "us_per_turn": statistics.median(walls) / turns * 1e6,
               "walls": walls}
        if kind == "deliberating":
            out["tail"] = _tail_check(attach(Path(tmp) / "run1.db", "bench"), members)
            decision = attach(Path(tmp) / "run1.db", "bench").decisions[0]
            out["outcome"] = decision.get("outcome")
    return out


def _tail_check(run: Any, members: int) -> dict[str, float]:
    """µs to build a blind member's view (messages, decisions, rounds) early and late."""
    from wopdsl.engine._perspective import decision_views, perspective
    from wopdsl.state import CouncilState

    events = list(run.events)
    cut = len(events) // 10
    timings = {}
    for label, prefix in (("early", events[:cut]), ("late", events)):
        state = CouncilState.fold(prefix)
        member = next(iter(state.members))
        rooms = state.members[member].rooms
        loops = 2000
        start = time.perf_counter()
        for _ in range(loops):
            perspective(state, member, rooms, [])
            decision_views(state, member)
        timings[label] = (time.perf_counter() - start) / loops * 1e6
    return timings


def _run_once(kind: str, members: int, rounds: int) -> None:
    """One run of a council on a fresh SQLite file (what ``--instructions`` counts)."""
    from wopdsl import SqliteStore

    council = build(kind, members, rounds)
    with tempfile.TemporaryDirectory(prefix="wop-bench-delib-") as tmp:
        run = asyncio.run(council.arun(store=SqliteStore(Path(tmp) / "run.db"), run_id="b"))
        if run.status != "completed":
            raise SystemExit(f"{kind} run ended {run.status}")


def _instructions(kind: str, members: int, rounds: int) -> float:
    """Instructions per turn: runs of ``rounds // 2`` and ``rounds`` rounds, differenced."""
    counts = []
    half = rounds // 2
    for count in (half, rounds):
        proc = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                               sys.executable, __file__, "--child-once",
                               f"{kind},{members},{count}"],
                              capture_output=True, text=True, check=False)
        collected = [line for line in proc.stderr.splitlines() if "Collected :" in line]
        if proc.returncode or not collected:
            raise SystemExit(f"valgrind failed: {proc.stderr[-2000:]}")
        counts.append(int(collected[-1].rsplit(":", 1)[1]))
    return (counts[1] - counts[0]) / (members * (rounds - half))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", metavar="FILE")
    parser.add_argument("--instructions", action="store_true",
                        help="also count instructions per turn with valgrind (callgrind)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--child-once", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(json.loads(args.child))))
        return 0
    if args.child_once:
        kind, members, rounds = args.child_once.split(",")
        _run_once(kind, int(members), int(rounds))
        return 0
    results = {}
    for kind in ("baseline", "deliberating"):
        job = {"kind": kind, "members": args.members, "rounds": args.rounds,
               "repeat": args.repeat}
        proc = subprocess.run([sys.executable, __file__, "--child", json.dumps(job)],
                              capture_output=True, text=True, check=False)
        if proc.returncode:
            print(proc.stdout + proc.stderr, file=sys.stderr)
            return 1
        results[kind] = json.loads(proc.stdout.splitlines()[-1])
    base, delib = results["baseline"], results["deliberating"]
    ratio = delib["us_per_turn"] / base["us_per_turn"]
    tail = delib["tail"]
    print(f"deliberation cost: {args.members} members x {args.rounds} rounds "
          f"({delib['turns']:,} turns), median of {args.repeat}")
    print(f"  {'council':<14}{'µs/turn':>10}{'events':>10}")
    for kind in ("baseline", "deliberating"):
        row = results[kind]
        print(f"  {kind:<14}{row['us_per_turn']:>10.1f}{row['events']:>10,}")
    print(f"  ratio deliberating / baseline: {ratio:.2f} (target <= {TARGET_RATIO})")
    print(f"  O(tail) input: {tail['early']:.1f} µs after 10% of the rounds, "
          f"{tail['late']:.1f} µs after all ({tail['late'] / tail['early']:.2f}x, "
          f"target <= {TAIL_LIMIT})")
    checks = {"ratio": ratio <= TARGET_RATIO, "tail": tail["late"] / tail["early"] <= TAIL_LIMIT}
    if args.instructions:
        counted = {kind: _instructions(kind, args.members, max(8, args.rounds // 2))
                   for kind in ("baseline", "deliberating")}
        counted_ratio = counted["deliberating"] / counted["baseline"]
        print(f"  instructions per turn (callgrind): baseline {counted['baseline']:,.0f}, "
              f"deliberating {counted['deliberating']:,.0f}, ratio {counted_ratio:.2f}")
        results["instructions"] = {**counted, "ratio": counted_ratio}
        checks["instructions"] = counted_ratio <= TARGET_RATIO
    print("checks: " + ", ".join(f"{name} {'ok' if ok else 'MISSED'}"
                                 for name, ok in checks.items()))
    if args.json:
        Path(args.json).write_text(json.dumps({"results": results, "ratio": ratio,
                                               "checks": checks}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
