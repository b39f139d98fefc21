"""The least a durable turn can cost in CPython with wopdsl's API: a lower bound beside the floor.

Usage::

    python3 bench/ideal.py [--members 3] [--turns 3000] [--repeat 7] [--json out.json]

Issue 38 asks for ``council.arun()`` at ≤ 1.6 × the SQLite floor. This script measures how
much of that budget is left once the work no engine can skip is paid. In one process, on
the same machine minute, it times W(N, T) with sync python members (``bench/workload.py``)
four ways, alternating round by round (medians of ``--repeat`` rounds):

* ``floor``: the run's own rows inserted with raw ``sqlite3`` in its own transactions
  (``bench/run.py``'s floor: what SQLite itself costs);
* ``skeleton``: a plain loop that does only what every durable turn of this workload must
  do, with the same public types and the same SQLite work: build the member's ``Turn``
  (its last 8 messages), call the member's handler (which builds its ``Reply`` and ``Post``),
  dump the reply (``Reply.to_wire``), build the turn's three events (``node.completed``, the
  post's ``conversation.exchanged``, the next member's ``node.started``, the same payloads
  the engine writes), encode them with orjson, insert them, keep the message. It commits
  as the engine does: the turns of up to 1 ms (at most 64 events) in one transaction,
  one statement for a short one. No checks, no fold, no asyncio, no retries, no steering,
  no observers;
* ``skeleton (no SQLite)``: the same loop without the transaction (its Python alone);
* ``handlers alone``: only the members' handlers, called on one prepared ``Turn`` (the
  user's code: building a ``Reply`` with one ``Post``);
* ``arun``: ``council.arun()`` of the same council on a fresh file (the engine).

The skeleton is not an engine — it validates nothing and cannot resume — so ``skeleton /
floor`` is a bound: no engine written in Python with this API does a turn for less.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import sys
import tempfile
import time
from itertools import chain
from pathlib import Path
from typing import Any

import orjson

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from run import ONE_STATEMENT_ROWS, _floor, one_statement  # noqa: E402
from workload import ROOM, TAIL, CountingStore, build_council, member_ids, run_once  # noqa: E402

from wopdsl import SqliteStore  # noqa: E402
from wopdsl._ids import event_id, iso_ms  # noqa: E402
from wopdsl.model.construct import new_message, new_turn  # noqa: E402
from wopdsl.model.turns import Message  # noqa: E402
from wopdsl.protocol import payloads as p  # noqa: E402

RUN = "ideal-run"
GROUP_S = 0.001
"""The engine's window for quick turns committed together (``_batches._YIELD_EVERY``)."""
GROUP_EVENTS = 64
"""The most events such a group gathers (``_batches._GROUP_EVENTS``)."""


def skeleton(council: Any, members: int, turns: int, conn: sqlite3.Connection | None) -> int:
    """Run W(members, turns) as a bare loop; return how many turns ran.

    ``conn`` is a raw connection to a file with the store's layout (``None``: no SQLite).
    """
    graph = council.compile()
    ids = member_ids(members)
    handlers = [graph.members[m].agent.handler for m in ids]
    conversation = f"{RUN}:room:{ROOM}"
    insert = "INSERT INTO events VALUES (?, ?, ?, ?)"
    messages: list[Message] = []
    sequence, index, last_event = 0, 0, None
    started_ms = int(time.time() * 1000)
    ran = 0
    member, turn_of = 0, [0] * members
    pending: list[tuple[str, int, str, str]] = []
    group_started = time.monotonic()
    while ran < turns:
        turn_of[member] += 1
        ran += 1
        turn = new_turn("Pass the baton around the room.", ids[member], "runner", "",
                        turn_of[member], None, messages[-TAIL:], messages[-1:], [], {}, {},
                        int(time.time() * 1000) - started_ms)
        reply = handlers[member](turn)
        wire = reply.to_wire()
        now = int(time.time() * 1000)
        stamp = iso_ms(now)
        events = [("node.completed", {"nodeId": ids[member], "outputs": wire}, ids[member],
                   None)]
        for post in wire.get("posts", ()):
            index += 1
            mid = f"team/{ids[member]}/{ran}/0"
            posted = p.post_turn(mid, ids[member], human=False, text=post["text"],
                                 mentions=post["mentions"], ts=now, index=index, room_id=ROOM)
            events.append(("conversation.exchanged",
                           p.conversation_exchanged(conversation, posted),
                           p.room_node_id(ROOM), last_event))
            messages.append(new_message(mid, ROOM, ids[member], post["text"],
                                        list(post["mentions"]), ran))
        following = (member + 1) % members
        if wire.get("posts"):
            events.append(("node.started", p.member_started(
                ids[following], attempt=0, turn=turn_of[following] + 1, position=ran + 1,
                triggers=[messages[-1].id], batch=ran + 1), ids[following], None))
        for type_, payload, node, causation in events:
            sequence += 1
            event: dict[str, Any] = {"eventId": event_id(RUN, sequence), "runId": RUN,
                                     "type": type_, "payload": payload, "timestamp": stamp,
                                     "sequence": sequence, "schemaVersion": 1, "nodeId": node}
            if causation:
                event["causationId"] = causation
            if type_ == "conversation.exchanged":
                last_event = event["eventId"]
            pending.append((RUN, sequence, type_, orjson.dumps(event).decode()))
        member = following
        last = not wire.get("posts")
        # Quick turns commit together, as the engine's (``wopdsl.engine._batches``).
        if not last and len(pending) <= GROUP_EVENTS and \
                time.monotonic() - group_started < GROUP_S:
            continue
        if conn is not None and len(pending) <= ONE_STATEMENT_ROWS:
            conn.execute(one_statement(len(pending)), list(chain.from_iterable(pending)))
        elif conn is not None:
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany(insert, pending)
            conn.execute("COMMIT")
        pending = []
        group_started = time.monotonic()
        if last:
            break
    return ran


def handlers_alone(council: Any, members: int, turns: int) -> None:
    """Only the members' handlers (each builds its ``Reply`` and ``Post``), on one ``Turn``."""
    graph = council.compile()
    ids = member_ids(members)
    handlers = [graph.members[m].agent.handler for m in ids]
    turn = new_turn("Pass the baton around the room.", ids[0], "runner", "", 1, None, [], [],
                    [], {}, {}, 0)
    for number in range(turns):
        handlers[number % members](turn)


def _raw(path: Path) -> sqlite3.Connection:
    """A raw connection to a new file with the store's layout and pragmas."""
    SqliteStore(path).close()  # Creates the file as the store does (layout, page size).
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    (page_size,) = conn.execute("PRAGMA page_size").fetchone()
    conn.execute(f"PRAGMA wal_autocheckpoint = {4 * 1024 * 1024 // page_size}")  # the store's
    return conn


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--members", type=int, default=3)
    parser.add_argument("--turns", type=int, default=3000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    n, t = args.members, args.turns
    council = build_council("python-sync", n, t)
    times: dict[str, list[float]] = {"floor": [], "skeleton": [], "skeleton (no SQLite)": [],
                                     "handlers alone": [], "arun": []}
    with tempfile.TemporaryDirectory(prefix="wop-ideal-") as tmp_name:
        tmp = Path(tmp_name)
        counted = CountingStore(tmp / "warm.db")
        warm = run_once(council, counted)  # Imports, compile, caches; records transactions.
        if warm.status != "completed":
            raise SystemExit(f"the warm-up run ended {warm.status}")
        for k in range(args.repeat):
            timing = run_once(council, str(tmp / f"arun{k}.db"))
            if timing.status != "completed" or timing.events != warm.events:
                raise SystemExit(f"run {k} ended {timing.status} with {timing.events} events")
            times["arun"].append(timing.wall)
            times["floor"].append(
                _floor(tmp / "warm.db", counted.batches, t, tmp, 1)["floor_us_per_turn"]
                * t / 1e6)
            conn = _raw(tmp / f"skeleton{k}.db")
            wall = time.perf_counter()
            ran = skeleton(council, n, t, conn)
            times["skeleton"].append(time.perf_counter() - wall)
            conn.close()
            wall = time.perf_counter()
            skeleton(council, n, t, None)
            times["skeleton (no SQLite)"].append(time.perf_counter() - wall)
            wall = time.perf_counter()
            handlers_alone(council, n, t)
            times["handlers alone"].append(time.perf_counter() - wall)
            if ran != t:
                raise SystemExit(f"the skeleton ran {ran} turns, not {t}")
    per_turn = {name: statistics.median(values) / t * 1e6 for name, values in times.items()}
    floor = per_turn["floor"]
    print(f"W({n}, {t}), sync python members, {args.repeat} alternating rounds (medians)")
    print(f"{'':24} {'µs/turn':>8} {'x floor':>8}")
    for name, value in per_turn.items():
        print(f"{name:24} {value:8.1f} {value / floor:8.2f}")
    print(f"the target, 1.6 x floor: {1.6 * floor:.1f} µs/turn")
    if args.json:
        args.json.write_text(json.dumps({"members": n, "turns": t, "us_per_turn": per_turn},
                                        indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
