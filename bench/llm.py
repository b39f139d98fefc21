"""Benchmark of ``llm`` members: the engine's own cost per model call, and batch overlap.

Usage::

    python3 bench/llm.py [--quick] [--turns T] [--latency-ms D] [--batch N] [--json out.json]

Both parts run against wopdsl's scripted OpenAI-compatible server on loopback (the real
``openai`` client, real HTTP, a durable SQLite log). The server is wopdsl's own Python one,
so it runs in a child process (``ServerProcess``): in a thread it would take the GIL at
every SQLite commit or socket call of the engine, a harness cost counted as the engine's.
On a machine with few cores the server still competes for the CPU, with the engine as with
the floor client: the figures are for comparing, on a quiet machine, not absolute.

* **cost per turn**: two ``llm`` members take T turns in a row (each mentions the other,
  the server waits D ms before answering, streamed). ``per turn`` = wall / T; the floor is the
  same T streamed calls made with the bare ``openai`` client against the same server in the
  same process — replaying a request the run made (its prompts and ``response_format``),
  so what the client does with a larger request is not counted as the engine's — the mean
  of one pass right before the timed run and one right after (a busy machine drifts).
  ``engine`` = per turn − floor: what the engine adds to a call
  (prompt rendering, budget, events, the SQLite commits, checks). The timed run appends to
  the store file its warm-up run created (as a host's store outlives its runs), so creating
  a database file (~30 ms, once per file) is not counted. Target: ≤ 1 ms.
* **overlap**: N members in one batch (``global_concurrency`` = ``max_concurrency`` = N),
  each answer delayed D ms (at least 200), over R rounds (medians reported, each round too).
  The target — "a batch of N slow calls takes about the slowest, not the sum" — compares
  the batch's wall with the slowest of the same N calls made without the engine:

  - ``batch`` = first ``node.started`` to last ``node.completed`` of a timed run (the
    events' millisecond timestamps): the batch itself, without the run's start and end;
  - ``floor`` = the same N requests (one the run made, replayed: its prompts and
    ``response_format``) sent at once by a fresh bare ``openai`` client, as a run opens its
    own connections — the slowest of N concurrent calls with nothing else in the process.
    It is more than one call alone: the client's own CPU work per call (building and
    checking the request, parsing the stream: a few ms each) is paid N times in a row on
    one interpreter, and N connections open at once.
  - ``over floor`` = batch / floor. Calls made one after another would give ≈ N; the
    engine overlapping them as well as ``asyncio.gather`` does gives ≈ 1. Target: ≤ 1.1.

  Also printed: both batches against one call alone (D plus one call's cost; N calls one
  after another give ≈ N), the serial sum, and ``run wall`` − a no-op run's wall (the same
  council answering at once, measured in the same process).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from wopdsl import Council  # noqa: E402
from wopdsl.testing.model_server import Answer, CapturedRequest, ScriptedModelServer  # noqa: E402

DONE: Any = {"summary": "done", "posts": []}

TARGET_ENGINE_MS = 1.0
OVERLAP_LIMIT = 1.1


def _chain(turns: int, latency: float) -> Any:
    """Two members hand the turn to each other, ``turns`` answers in all."""
    count = [0]

    def answer(request: CapturedRequest) -> Answer:
        count[0] += 1
        other = "pong" if request.member == "ping" else "ping"
        mentions = [other] if count[0] % turns else []
        return Answer({"summary": f"turn {count[0]}", "posts": [
            {"roomId": "desk", "text": f"step {count[0]}", "mentions": mentions}]},
            usage=(200, 20), delay_s=latency, chunks=4)
    return answer


def _serve(conn: Any) -> None:
    """The scripted server in a process of its own, driven by commands over ``conn``."""
    with ScriptedModelServer() as server:
        conn.send(server.url)
        while True:
            command, *args = conn.recv()
            if command == "chain":
                server.default = _chain(*args)
            elif command == "answer":
                server.default = Answer(DONE, delay_s=args[0])
            elif command == "last":
                conn.send(server.requests[-1].body if server.requests else None)
            elif command == "count":
                conn.send(len(server.requests))
                server.requests.clear()
            else:
                return


class ServerProcess:
    """The scripted model server in a child process, so it does not share this one's GIL.

    In a thread of the benchmark's process the server takes the GIL whenever the engine
    releases it (every SQLite commit, every socket call), and the engine waits to get it
    back: a cost of the harness, not of the engine, and larger for the engine (more commits)
    than for the floor client.
    """

    def __init__(self) -> None:
        self._conn, child = multiprocessing.get_context("spawn").Pipe()
        self._proc = multiprocessing.get_context("spawn").Process(
            target=_serve, args=(child,), daemon=True)
        self._proc.start()
        self.url: str = self._conn.recv()

    def chain(self, turns: int, latency: float) -> None:
        """Answer as :func:`_chain` (a fresh count)."""
        self._conn.send(("chain", turns, latency))

    def answer(self, latency: float) -> None:
        """Answer every call with an empty result after ``latency`` seconds."""
        self._conn.send(("answer", latency))

    def last_request(self) -> dict[str, Any] | None:
        """The body of the last request received (the floor replays it)."""
        self._conn.send(("last",))
        body: dict[str, Any] | None = self._conn.recv()
        return body

    def count(self) -> int:
        """Requests received since the last count."""
        self._conn.send(("count",))
        return int(self._conn.recv())

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self._conn.send(("stop",))
        self._proc.join(10)


def _council(members: list[str], turns: int, concurrency: int) -> Council:
    council = Council("bench-llm", task="Benchmark.", max_turns_per_member=turns,
                      global_concurrency=concurrency, tail_messages=4)
    council.model("m", model="bench-model", max_concurrency=concurrency, retries=0)
    council.room("desk", members=members)
    for member in members:
        council.add_member(member, role="worker", engine="llm", model="m")
    return council


async def _floor(url: str, turns: int, request: dict[str, Any] | None = None) -> float:
    """``turns`` calls made one after another with the bare ``openai`` client.

    ``request`` is what to send (a request the run made, so the client's own work on the
    engine's prompt and schema is counted in the floor, not as the engine's); default a
    short streamed request.
    """
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=url, api_key="bench", max_retries=0)
    body = request or {"model": "bench-model", "stream": True, "max_tokens": 800,
                       "stream_options": {"include_usage": True},
                       "messages": [{"role": "system", "content": "member id: ping"},
                                    {"role": "user", "content": "This is your turn 1."}]}
    started = time.perf_counter()
    for _ in range(turns):
        stream = await client.chat.completions.create(**body)
        async for _chunk in stream:
            pass
    elapsed = time.perf_counter() - started
    await client.close()
    return elapsed


async def _bare_batch(url: str, calls: int, request: dict[str, Any]) -> float:
    """``calls`` concurrent copies of ``request`` with a fresh bare client (as a run opens its own).

    ``request`` is one the run made (its prompts and ``response_format``): the client's own
    work on a request is a cost of each call, paid N times over in a batch.
    """
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=url, api_key="bench", max_retries=0)

    async def one() -> None:
        stream = await client.chat.completions.create(**request)
        async for _chunk in stream:
            pass

    started = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(calls)))
    elapsed = time.perf_counter() - started
    await client.close()
    return elapsed


async def cost_per_turn(turns: int, latency: float, db: Path) -> dict[str, Any]:
    with ServerProcess() as server:
        os.environ["OPENAI_BASE_URL"] = server.url
        server.chain(turns, latency)
        council = _council(["ping", "pong"], turns, 1)
        store = str(db / f"chain-{time.monotonic_ns()}.db")
        await council.arun(store=store)  # warm-up (imports, the store file)
        request = server.last_request()
        assert request is not None and request.get("stream")
        before = await _floor(server.url, turns, request)
        server.chain(turns, latency)
        started = time.perf_counter()
        run = await council.arun(store=store)
        wall = time.perf_counter() - started
        assert run.status == "completed", run.error
        after = await _floor(server.url, turns, request)
    floor = (before + after) / 2  # Either side of the timed run: a busy machine drifts.
    per_turn = wall / turns * 1000
    floor_ms = floor / turns * 1000
    return {"turns": turns, "latency_ms": latency * 1000, "per_turn_ms": per_turn,
            "floor_ms": floor_ms, "floor_before_ms": before / turns * 1000,
            "floor_after_ms": after / turns * 1000, "engine_ms": per_turn - floor_ms,
            "wall_minus_latency_ms": per_turn - latency * 1000}


def _batch_wall_ms(db: Path, run_id: str) -> float:
    """First ``node.started`` to last ``node.completed`` of a run, from its events."""
    from datetime import datetime

    from wopdsl import SqliteStore

    store = SqliteStore(db)
    try:
        events = store.read(run_id)
    finally:
        store.close()

    def at(kind: str) -> list[float]:
        return [datetime.fromisoformat(e["timestamp"].replace("Z", "+00:00")).timestamp()
                for e in events if e["type"] == kind]

    return (max(at("node.completed")) - min(at("node.started"))) * 1000


async def overlap(batch: int, latency: float, db: Path, rounds: int) -> dict[str, Any]:
    with ServerProcess() as server:
        os.environ["OPENAI_BASE_URL"] = server.url
        members = [f"m{i}" for i in range(batch)]
        council = _council(members, 1, batch)
        store = db / "overlap.db"
        server.answer(0.0)
        await council.arun(store=str(store))  # warm-up (imports, the store file)
        request = server.last_request()
        assert request is not None and request.get("stream")
        started = time.perf_counter()
        run = await council.arun(store=str(store))  # the no-op floor: instant answers
        noop = time.perf_counter() - started
        server.answer(latency)
        walls: list[float] = []
        rounds_: list[dict[str, float]] = []
        for _ in range(rounds):
            server.count()
            started = time.perf_counter()
            run = await council.arun(store=str(store))
            walls.append(time.perf_counter() - started)
            assert run.status == "completed", run.error
            assert server.count() == batch
            rounds_.append({"batch_ms": _batch_wall_ms(store, run.run_id),
                            "bare_batch_ms": await _bare_batch(server.url, batch, request) * 1000,
                            "slowest_call_ms": await _floor(server.url, 1, request) * 1000})

    def median(key: Any) -> float:
        return statistics.median(key(r) for r in rounds_)

    single = median(lambda r: r["slowest_call_ms"])
    return {"batch": batch, "latency_ms": latency * 1000, "rounds": rounds,
            "batch_ms": median(lambda r: r["batch_ms"]), "slowest_call_ms": single,
            "ratio": median(lambda r: r["batch_ms"] / r["slowest_call_ms"]),
            "bare_batch_ms": median(lambda r: r["bare_batch_ms"]),
            "bare_ratio": median(lambda r: r["bare_batch_ms"] / r["slowest_call_ms"]),
            "over_floor": median(lambda r: r["batch_ms"] / r["bare_batch_ms"]),
            "run_wall_ms": statistics.median(walls) * 1000, "noop_run_ms": noop * 1000,
            "run_minus_noop_ms": (statistics.median(walls) - noop) * 1000,
            "serial_ms": single * batch, "per_round": rounds_}


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    latency = args.latency_ms / 1000
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp)
        costs = [await cost_per_turn(args.turns, latency, db) for _ in range(args.repeat)]
        best = min(costs, key=lambda c: c["engine_ms"])
        batch = await overlap(args.batch, max(latency, 0.2), db, args.rounds)
    return {"cost": best, "cost_runs": costs, "overlap": batch,
            "engine_median_ms": statistics.median(c["engine_ms"] for c in costs)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short run (smoke test)")
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--latency-ms", type=float, default=5.0)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=7, help="timed batches (overlap)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.quick:
        args.turns, args.repeat, args.batch, args.rounds = 20, 1, 4, 2
    data = asyncio.run(main_async(args))
    cost, batch = data["cost"], data["overlap"]
    print(f"llm turn: {cost['turns']} turns, scripted latency {cost['latency_ms']:.0f} ms")
    print(f"  per turn {cost['per_turn_ms']:.2f} ms · bare openai client floor "
          f"{cost['floor_ms']:.2f} ms ({cost['floor_before_ms']:.2f} before, "
          f"{cost['floor_after_ms']:.2f} after) · engine {cost['engine_ms']:.2f} ms "
          f"(median of {len(data['cost_runs'])}: {data['engine_median_ms']:.2f} ms; "
          f"target ≤ {TARGET_ENGINE_MS} ms) · wall − latency "
          f"{cost['wall_minus_latency_ms']:.2f} ms")
    print(f"overlap: {batch['batch']} calls of {batch['latency_ms']:.0f} ms in one batch, "
          f"median of {batch['rounds']} rounds: batch {batch['batch_ms']:.0f} ms (first "
          f"node.started → last node.completed); the same {batch['batch']} requests made at "
          f"once by a fresh bare client {batch['bare_batch_ms']:.0f} ms (the floor: the "
          f"slowest of {batch['batch']} calls at once) → × {batch['over_floor']:.2f} "
          f"(target ≤ {OVERLAP_LIMIT})")
    print(f"  against one call alone ({batch['slowest_call_ms']:.0f} ms): engine "
          f"× {batch['ratio']:.2f}, bare client × {batch['bare_ratio']:.2f}; serial would be "
          f"{batch['serial_ms']:.0f} ms · run wall {batch['run_wall_ms']:.0f} ms − no-op run "
          f"{batch['noop_run_ms']:.0f} ms = {batch['run_minus_noop_ms']:.0f} ms")
    ok_engine = data["engine_median_ms"] <= TARGET_ENGINE_MS
    ok_overlap = batch["over_floor"] <= OVERLAP_LIMIT
    print(f"checks: engine {'ok' if ok_engine else 'OVER'} · overlap "
          f"{'ok' if ok_overlap else 'OVER'}")
    if args.json:
        args.json.write_text(json.dumps(data, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
