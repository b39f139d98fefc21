"""Benchmark of live steering and presence (DESIGN.md §24), each beside a floor of the same run.

Usage::

    python3 bench/steer.py [--quick] [--members N] [--steers S] [--watchers W] [--json out.json]

* **steer**: N ``llm`` members stream endlessly (a chunk every ``--chunk-ms``, default 20 ms:
  50 chunks a second each) from wopdsl's scripted OpenAI-compatible server (in a child
  process, so it does not share the engine's GIL; a real SQLite store). A person steers the
  room S times (no mentions: every member stops; two untimed steers first warm the engine
  up). Each steer is timed from just before ``run.reply(..., steer=True)`` — which appends the
  post — until the last of the N streams running then is closed, as the model server sees it
  (``CapturedRequest.ended``: the moment the client hung up; one monotonic clock for both
  processes). Beside it, from the log's own timestamps (1 ms): the post's event → the last
  ``node.retried`` (``STEERED``) it caused, which the engine writes once every stopped turn
  has ended, its stream closed — the same span seen by the engine, without the model
  server's own delay in noticing a hang-up. Target, for each: p99 ≤ 100 ms with 8 members.
  The floor: N streams of the bare ``openai`` client on the same server, cancelled together,
  timed as the first row (what closing N streams costs with no engine around).
* **presence**: W watchers hold ``GET /v1/runs/{id}/presence`` (SSE) on a real ``wop serve``;
  a person's typing signal (``POST …/presence``) is timed until every watcher has read the
  frame that shows it. Target: p99 ≤ 100 ms for 100 watchers. The floor: the same W
  watchers on the run's event stream (``GET …/events``), timed from a post to every
  watcher reading its event — the host's own fan-out of a durable event.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import multiprocessing
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from wopdsl import Council  # noqa: E402
from wopdsl.testing.model_server import Endless, ScriptedModelServer  # noqa: E402

STEER_TARGET_MS = 100.0
WARMUP = 2
"""Steers before the timed ones (the first builds the engine's second writer, the intake)."""
PRESENCE_TARGET_MS = 100.0
BOARD = """\
[council]
id = "lobby"
task = "Watch."

[[rooms]]
id = "lobby"
members = ["ann", "bob", "host"]

[[members]]
id = "host"
role = "host"
engine = "script"
script = [{ summary = "Asked.", posts = [
  { room = "lobby", text = "Over to you, @ann", mentions = ["ann"] }] }]

[[members]]
id = "ann"
role = "user"
engine = "human"
initial_turn = false
max_turns = 1000

[[members]]
id = "bob"
role = "user"
engine = "human"
initial_turn = false
max_turns = 1000
"""


def p99(values: list[float]) -> float:
    """The 99th percentile, nearest rank (of 100 values the 99th; of 30 or fewer the largest)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(len(ordered) * 0.99) - 1)]


# -- steer ------------------------------------------------------------------------------------

def _serve(conn: Any, chunk_s: float) -> None:
    """The model server, in a process of its own; on ``"requests"``, what it saw of each."""
    with ScriptedModelServer() as server:
        server.default = Endless("thinking ", delay_s=chunk_s, max_s=600)
        conn.send(server.url)
        while conn.recv() == "requests":
            conn.send([(r.member, r.at, r.ended, r.hung_up) for r in server.requests])


def _ask(conn: Any, proc: Any, what: str) -> Any:
    """Send ``what`` to the model server's process and return its answer (it must live)."""
    conn.send(what)
    while not conn.poll(1):
        if not proc.is_alive():
            raise SystemExit(f"the model server process died (exit {proc.exitcode})")
    return conn.recv()


async def _from_each(feed: Any, members: int, wanted: Callable[[Any], bool]) -> None:
    """Read the run's events (live) until ``wanted`` accepted one of each of the members."""
    seen: set[str] = set()
    async for event in feed:
        if wanted(event):
            seen.add(event["nodeId"])
            if len(seen) == members:
                return


def _streams(event: Any) -> bool:
    return bool(event["type"] == "output.chunk")


def _stopped_by(post: str) -> Callable[[Any], bool]:
    """Whether an event is the ``node.retried`` of a turn the steering post ``post`` stopped."""
    def wanted(event: Any) -> bool:
        if event["type"] != "node.retried":
            return False
        error = event["payload"].get("lastError") or {}
        return bool(error.get("details", {}).get("messageId") == post)
    return wanted


def _closed(conn: Any, proc: Any, began: float, prefix: str, expected: int) -> float:
    """ms from ``began`` until the last stream open then (of members ``prefix…``) was closed.

    The model server's ``CapturedRequest.ended``: the moment it saw the client hang up.
    Times are ``time.monotonic()`` of this process and of the server's (one clock on Linux).
    """
    for _ in range(3000):
        open_then = [r for r in _ask(conn, proc, "requests") if str(r[0]).startswith(prefix)
                     and r[1] < began and (r[2] is None or r[2] >= began)]
        if all(r[2] is not None for r in open_then):
            break
        time.sleep(0.01)  # a hang-up the server has not seen yet
    if len(open_then) != expected or not all(r[3] and r[2] is not None for r in open_then):
        raise SystemExit(f"{len(open_then)} streams open at a stop, {expected} expected, "
                         f"each closed by the client: {open_then}")
    return (max(r[2] for r in open_then) - began) * 1000


async def steer_bench(members: int, steers: int, chunk_ms: float,
                      warmup: int = WARMUP) -> dict[str, Any]:
    ctx = multiprocessing.get_context("spawn")
    conn, child = ctx.Pipe()
    proc = ctx.Process(target=_serve, args=(child, chunk_ms / 1000), daemon=True)
    proc.start()
    if not conn.poll(120):
        raise SystemExit("the model server process did not start")
    url = conn.recv()
    os.environ["OPENAI_BASE_URL"] = url
    os.environ["BENCH_KEY"] = "bench"
    names = [f"m{i}" for i in range(members)]
    council = Council("steer-bench", task="Talk.", global_concurrency=members)
    council.model("m", model="bench-model", api_key_env="BENCH_KEY", max_concurrency=members,
                  retries=0)
    council.room("floor", members=[*names, "lead"])
    for name in names:
        council.add_member(name, role="talker", engine="llm", model="m")
    council.human("lead", max_turns=steers + warmup + 1)
    began: list[float] = []
    posts: list[str] = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            run = council.start(store=Path(tmp) / "runs.db")
            feed = run.store.subscribe(run.run_id, -1)  # live: woken by each append here
            try:
                for number in range(warmup + steers):
                    await _from_each(feed, members, _streams)  # each new attempt streams
                    now = time.monotonic()
                    post = await run.reply("everyone: stop, the budget is 2M", room="floor",
                                           as_="lead", steer=True)
                    # Written once every stopped turn has ended: the next steer may come.
                    await _from_each(feed, members, _stopped_by(post))
                    if number >= warmup:
                        began.append(now)
                        posts.append(post)
            finally:
                await feed.aclose()  # type: ignore[attr-defined]
                await run.cancel("benchmark over")
            settled = _settled(run.events.to_list(), posts)
        timings = [_closed(conn, proc, at, "m", members) for at in began]
        floor = [_closed(conn, proc, await _floor(url, members), "floor", members)
                 for _ in range(steers)]
    finally:
        conn.send("stop")
        proc.join(10)
    return {"members": members, "steers": steers, "chunk_ms": chunk_ms, "warmup": warmup,
            "p50_ms": statistics.median(timings), "p99_ms": p99(timings),
            "settled_p50_ms": statistics.median(settled), "settled_p99_ms": p99(settled),
            "floor_p50_ms": statistics.median(floor), "floor_p99_ms": p99(floor),
            "target_ms": STEER_TARGET_MS, "ms": timings, "settled_ms": settled,
            "floor_ms": floor}


def _settled(events: list[dict[str, Any]], posts: list[str]) -> list[float]:
    """ms from each steering post's event to the last ``node.retried`` it caused (the log's
    own timestamps: the stop recorded, after every stopped turn had ended)."""
    def ms(event: dict[str, Any]) -> float:
        return datetime.fromisoformat(event["timestamp"]).timestamp() * 1000

    made = {e["payload"]["turn"]["messageId"]: ms(e) for e in events
            if e["type"] == "conversation.exchanged" and e["payload"]["turn"].get("content", {})
            .get("steer")}
    last: dict[str, float] = {}
    for event in events:
        if event["type"] == "node.retried":
            post = (event["payload"].get("lastError") or {}).get("details", {}).get("messageId")
            if post in made:
                last[post] = max(last.get(post, 0.0), ms(event))
    return [last[post] - made[post] for post in posts]


async def _floor(url: str, members: int) -> float:
    """N bare ``openai`` streams, each reading, then cancelled together; return when."""
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=url, api_key="bench", max_retries=0)
    reading = [asyncio.Event() for _ in range(members)]

    async def one(index: int) -> None:
        stream = await client.chat.completions.create(
            model="bench-model", stream=True,
            messages=[{"role": "system", "content": f"member id: floor{index}"},
                      {"role": "user", "content": "talk"}])
        async for _chunk in stream:
            reading[index].set()

    tasks = [asyncio.ensure_future(one(i)) for i in range(members)]
    await asyncio.gather(*(r.wait() for r in reading))
    began = time.monotonic()
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await client.close()
    return began


# -- presence -----------------------------------------------------------------------------------

async def presence_bench(watchers: int, rounds: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "lobby.toml").write_text(BOARD, encoding="utf-8")
        port = _free_port()
        env = {k: v for k, v in os.environ.items() if k not in ("WOP_TOKENS", "WOP_STORE")}
        env["PYTHONPATH"] = str(HERE.parent)
        server = subprocess.Popen(
            [sys.executable, "-m", "wopdsl", "serve", str(folder / "lobby.toml"), "--port",
             str(port), "--store", str(folder / "runs.db")], env=env,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        http = Http(port)
        try:
            await http.up()
            run_id = (await http.call("POST", "/v1/runs", {"workflowId": "lobby"}))["runId"]
            while (await http.call("GET", f"/v1/runs/{run_id}"))["status"] != "waiting-input":
                await asyncio.sleep(0.05)
            typing = await _fan_out_presence(http, run_id, watchers, rounds)
            floor = await _fan_out_events(http, run_id, watchers, rounds)
        finally:
            server.terminate()
            server.wait(15)
    return {"watchers": watchers, "rounds": rounds, "p50_ms": statistics.median(typing),
            "p99_ms": p99(typing), "floor_p50_ms": statistics.median(floor),
            "floor_p99_ms": p99(floor), "target_ms": PRESENCE_TARGET_MS}


class Http:
    """A minimal HTTP/1.1 client on asyncio streams (JSON calls, SSE readers): stdlib only."""

    def __init__(self, port: int) -> None:
        self.port = port

    async def up(self) -> None:
        for _ in range(600):
            try:
                await self.call("GET", "/.well-known/openwop")
                return
            except OSError:
                await asyncio.sleep(0.05)
        raise SystemExit("wop serve did not come up")

    async def call(self, method: str, path: str, body: Any = None) -> Any:
        reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
        data = b"" if body is None else json.dumps(body).encode()
        writer.write(f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                     f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
                     .encode() + data)
        raw = await reader.read()
        writer.close()
        return json.loads(raw.partition(b"\r\n\r\n")[2] or b"null")

    async def frames(self, path: str) -> Any:
        """Yield ``(event, data)`` of each SSE frame of ``path`` (chunked transfer)."""
        reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
        writer.write(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     "Accept: text/event-stream\r\n\r\n".encode())
        await reader.readuntil(b"\r\n\r\n")
        try:
            while True:
                size = int((await reader.readline()).strip() or b"0", 16)
                chunk = await reader.readexactly(size + 2)
                event = ""
                for line in chunk[:size].decode().splitlines():
                    if line.startswith("event: "):
                        event = line[7:]
                    elif line.startswith("data: "):
                        yield event, json.loads(line[6:])
                yield "", None  # a chunk was read (the stream is open)
        finally:
            writer.close()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _watchers(http: Http, path: str, watchers: int, wanted: Any
                    ) -> tuple[list[asyncio.Task[None]], list[asyncio.Queue[float]]]:
    """W SSE readers of ``path``; each puts the time of every frame ``wanted`` accepts."""
    queues: list[asyncio.Queue[float]] = [asyncio.Queue() for _ in range(watchers)]
    ready = [asyncio.Event() for _ in range(watchers)]

    async def read(index: int) -> None:
        async for event, doc in http.frames(path):
            ready[index].set()
            if doc is not None and wanted(event, doc):
                queues[index].put_nowait(time.perf_counter())

    tasks = [asyncio.ensure_future(read(i)) for i in range(watchers)]
    await asyncio.sleep(0.5)  # every reader connected (the event feed sends nothing yet)
    return tasks, queues


async def _fan_out_presence(http: Http, run_id: str, watchers: int, rounds: int) -> list[float]:
    path = f"/v1/runs/{run_id}/presence"
    tasks, queues = await _watchers(http, f"{path}?as=ann", watchers, lambda event, doc:
                                    event == "channel.presence" and "user:bob" in doc["present"])
    session = (await http.call("POST", path, {"room": "lobby", "member": "bob"}))["session"]
    for queue in queues:
        await asyncio.wait_for(queue.get(), 30)  # bob joined: every watcher saw it
    timings: list[float] = []
    for index in range(rounds):
        began = time.perf_counter()
        await http.call("POST", path, {"room": "lobby", "member": "bob", "session": session,
                                       "typing": index % 2 == 0})
        timings += [(await asyncio.wait_for(q.get(), 30) - began) * 1000 for q in queues]
        await asyncio.sleep(0.02)
        _drain(queues)
    await _stop(tasks)
    return timings


async def _fan_out_events(http: Http, run_id: str, watchers: int, rounds: int) -> list[float]:
    last = (await http.call("GET", f"/v1/runs/{run_id}/events"))["lastEventSeq"]
    tasks, queues = await _watchers(
        http, f"/v1/runs/{run_id}/events?streamMode=debug&lastSequence={last}", watchers,
        lambda event, doc: event == "conversation.exchanged")
    timings: list[float] = []
    for index in range(rounds):
        began = time.perf_counter()
        await http.call("POST", f"/v1/runs/{run_id}/interrupts/room:lobby", {"resumeValue": {
            "operation": "exchange", "turn": {"role": "user", "speakerId": "host:bob",
                                              "content": {"text": f"note {index}"}}}})
        timings += [(await asyncio.wait_for(q.get(), 30) - began) * 1000 for q in queues]
        _drain(queues)
    await _stop(tasks)
    return timings


def _drain(queues: list[asyncio.Queue[float]]) -> None:
    for queue in queues:
        while not queue.empty():
            queue.get_nowait()


async def _stop(tasks: list[asyncio.Task[None]]) -> None:
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


# -- main -------------------------------------------------------------------------------------

def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few steers and watchers (CI)")
    parser.add_argument("--members", type=int, default=8)
    parser.add_argument("--chunk-ms", type=float, default=20.0,
                        help="ms between streamed chunks of each member (20: 50 chunks/s)")
    parser.add_argument("--steers", type=int, default=100)
    parser.add_argument("--watchers", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.quick:
        args.members, args.steers, args.watchers, args.rounds = 3, 3, 10, 3
    steer = asyncio.run(steer_bench(args.members, args.steers, args.chunk_ms))
    presence = asyncio.run(presence_bench(args.watchers, args.rounds))
    def verdict(value: float, target: float) -> str:
        return f"{target:g} {'PASS' if value <= target else 'MISS'}"

    print("| measure | n | p50 ms | p99 ms | floor p50 ms | floor p99 ms | target p99 ms |")
    print("|---|---|---|---|---|---|---|")
    print(f"| steer: post appended → last stopped stream closed | {steer['members']} members "
          f"streaming a chunk per {args.chunk_ms:g} ms, {steer['steers']} steers | "
          f"{steer['p50_ms']:.1f} | {steer['p99_ms']:.1f} | "
          f"{steer['floor_p50_ms']:.1f} | {steer['floor_p99_ms']:.1f} | "
          f"{verdict(steer['p99_ms'], STEER_TARGET_MS)} |")
    print(f"| steer: post's event → last node.retried (log timestamps, 1 ms) | same | "
          f"{steer['settled_p50_ms']:.0f} | {steer['settled_p99_ms']:.0f} | | | "
          f"{verdict(steer['settled_p99_ms'], STEER_TARGET_MS)} |")
    print(f"| presence: typing signal → every watcher | {presence['watchers']} watchers, "
          f"{presence['rounds']} signals | {presence['p50_ms']:.1f} | "
          f"{presence['p99_ms']:.1f} | {presence['floor_p50_ms']:.1f} | "
          f"{presence['floor_p99_ms']:.1f} | "
          f"{verdict(presence['p99_ms'], PRESENCE_TARGET_MS)} |")
    if args.json:
        args.json.write_text(json.dumps({"steer": steer, "presence": presence}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
