"""Benchmark of ``llm`` members: the engine's own cost per model call, and batch overlap.

Usage::

    python3 bench/llm.py [--quick] [--turns T] [--latency-ms D] [--batch N] [--json out.json]

Both parts run against wopdsl's scripted OpenAI-compatible server on loopback (the real
``openai`` client, real HTTP, a durable SQLite log):

* **cost per turn**: two ``llm`` members take T turns in a row (each mentions the other,
  the server waits D ms before answering, streamed). ``per turn`` = wall / T; the floor is the
  same T streamed calls made with the bare ``openai`` client against the same server in the
  same process. ``engine`` = per turn − floor: what the engine adds to a call (prompt
  rendering, budget, events, the SQLite commits, checks). Target: ≤ 1 ms.
* **overlap**: N members in one batch (``global_concurrency`` = ``max_concurrency`` = N),
  each answer delayed D ms. Target: wall ≤ 1.1 × the slowest call (≈ D + one call's cost).
"""

from __future__ import annotations

import argparse
import asyncio
import json
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


def _council(members: list[str], turns: int, concurrency: int) -> Council:
    council = Council("bench-llm", task="Benchmark.", max_turns_per_member=turns,
                      global_concurrency=concurrency, tail_messages=4)
    council.model("m", model="bench-model", max_concurrency=concurrency, retries=0)
    council.room("desk", members=members)
    for member in members:
        council.add_member(member, role="worker", engine="llm", model="m")
    return council


async def _floor(url: str, turns: int) -> float:
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=url, api_key="bench", max_retries=0)
    messages = [{"role": "system", "content": "member id: ping"},
                {"role": "user", "content": "This is your turn 1."}]
    started = time.perf_counter()
    for _ in range(turns):
        stream = await client.chat.completions.create(
            model="bench-model", messages=messages, stream=True,  # type: ignore[arg-type]
            stream_options={"include_usage": True}, max_tokens=800)
        async for _chunk in stream:
            pass
    elapsed = time.perf_counter() - started
    await client.close()
    return elapsed


async def cost_per_turn(turns: int, latency: float, db: Path) -> dict[str, Any]:
    with ScriptedModelServer() as server:
        os.environ["OPENAI_BASE_URL"] = server.url
        server.default = _chain(turns, latency)
        council = _council(["ping", "pong"], turns, 1)
        await council.arun(store=str(db / "warm.db"))  # warm-up (imports, connections)
        started = time.perf_counter()
        run = await council.arun(store=str(db / "timed.db"))
        wall = time.perf_counter() - started
        assert run.status == "completed", run.error
        floor = await _floor(server.url, turns)
    per_turn = wall / turns * 1000
    floor_ms = floor / turns * 1000
    return {"turns": turns, "latency_ms": latency * 1000, "per_turn_ms": per_turn,
            "floor_ms": floor_ms, "engine_ms": per_turn - floor_ms,
            "wall_minus_latency_ms": per_turn - latency * 1000}


async def overlap(batch: int, latency: float, db: Path) -> dict[str, Any]:
    with ScriptedModelServer() as server:
        os.environ["OPENAI_BASE_URL"] = server.url
        server.default = Answer({"summary": "done", "posts": []}, delay_s=latency)
        members = [f"m{i}" for i in range(batch)]
        council = _council(members, 1, batch)
        await council.arun(store=str(db / "warm-overlap.db"))
        server.requests.clear()
        started = time.perf_counter()
        run = await council.arun(store=str(db / "overlap.db"))
        wall = time.perf_counter() - started
        assert run.status == "completed", run.error
        single = await _floor(server.url, 1)
    return {"batch": batch, "latency_ms": latency * 1000, "wall_ms": wall * 1000,
            "slowest_call_ms": single * 1000, "ratio": wall / single,
            "serial_ms": single * batch * 1000}


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    latency = args.latency_ms / 1000
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp)
        costs = [await cost_per_turn(args.turns, latency, db) for _ in range(args.repeat)]
        best = min(costs, key=lambda c: c["engine_ms"])
        batch = await overlap(args.batch, max(latency, 0.2), db)
    return {"cost": best, "cost_runs": costs, "overlap": batch,
            "engine_median_ms": statistics.median(c["engine_ms"] for c in costs)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short run (smoke test)")
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--latency-ms", type=float, default=5.0)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.quick:
        args.turns, args.repeat, args.batch = 20, 1, 4
    data = asyncio.run(main_async(args))
    cost, batch = data["cost"], data["overlap"]
    print(f"llm turn: {cost['turns']} turns, scripted latency {cost['latency_ms']:.0f} ms")
    print(f"  per turn {cost['per_turn_ms']:.2f} ms · bare openai client floor "
          f"{cost['floor_ms']:.2f} ms · engine {cost['engine_ms']:.2f} ms "
          f"(median of {len(data['cost_runs'])}: {data['engine_median_ms']:.2f} ms; "
          f"target ≤ {TARGET_ENGINE_MS} ms) · wall − latency "
          f"{cost['wall_minus_latency_ms']:.2f} ms")
    print(f"overlap: {batch['batch']} calls of {batch['latency_ms']:.0f} ms in one batch: "
          f"{batch['wall_ms']:.0f} ms wall vs one call {batch['slowest_call_ms']:.0f} ms "
          f"(× {batch['ratio']:.2f}; target ≤ {OVERLAP_LIMIT}); serial would be "
          f"{batch['serial_ms']:.0f} ms")
    ok_engine = data["engine_median_ms"] <= TARGET_ENGINE_MS
    ok_overlap = batch["ratio"] <= OVERLAP_LIMIT
    print(f"checks: engine {'ok' if ok_engine else 'OVER'} · overlap "
          f"{'ok' if ok_overlap else 'OVER'}")
    if args.json:
        args.json.write_text(json.dumps(data, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
