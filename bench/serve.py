"""Load benchmark of ``wop serve`` (see docs/performance.md, "The HTTP host").

Usage::

    python3 bench/serve.py [--runs 200] [--subscribers 3] [--turns 10] [--delay 0.2]
                           [--quick] [--json out.json]

R runs of ``bench/serve_council/relay.toml`` execute at once on one host, each followed by
S SSE subscribers (R x S streams). Every run first waits for a "go" turn, so all streams are
connected before the measured phase; then two python members relay ``--turns`` legs each,
every leg an I/O wait of ``--delay`` s ± 50 % (a model call whose latency varies).
Reported, for the host and for the same councils run in one process without HTTP
(subscribers on ``EventStore.subscribe``):

* events delivered to subscribers and events/s during the measured phase;
* p50/p99 latency from an event's timestamp (taken when the engine builds it, just before the
  append) to its receipt by a subscriber;
* peak RSS of the host process (``VmHWM``) / of the in-process run;
* subscribers that missed or duplicated an event (must be 0): each stream must carry every
  sequence 0..last exactly once, ending with ``run.completed``.

The subscribers are raw asyncio HTTP/1.1 clients in the bench process (which shares the
machine's cores with the host: the numbers include that load).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

HERE = Path(__file__).resolve().parent
COUNCIL = HERE / "serve_council" / "relay.toml"
GO = {"resumeValue": {"role": "user", "content": {"text": "go @a", "mentions": ["a"]}}}


def _epoch(timestamp: str) -> float:
    return datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()


class Stream:
    """What one subscriber received."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.sequences: list[int] = []
        self.latencies: list[float] = []
        self.last_type = ""
        self.connected = asyncio.Event()
        self.first_at = 0.0
        self.last_at = 0.0

    def receive(self, doc: dict[str, Any], since: float) -> None:
        now = time.time()
        self.sequences.append(int(doc["sequence"]))
        self.last_type = doc["type"]
        stamp = _epoch(doc["timestamp"])
        if stamp >= since:
            self.latencies.append(now - stamp)
            self.first_at = self.first_at or now
            self.last_at = now
        self.connected.set()

    def faults(self) -> tuple[int, int]:
        """(missing, duplicated) sequences."""
        seen = set(self.sequences)
        last = max(seen, default=-1)
        return last + 1 - len(seen), len(self.sequences) - len(seen)


# -- HTTP, by hand (no client library: hundreds of streams from one process) ---------------

async def _request(port: int, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    data = b"" if body is None else orjson.dumps(body)
    writer.write(f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n"
                 f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n"
                 "Connection: close\r\n\r\n".encode() + data)
    raw = await reader.read()
    writer.close()
    head, _, payload = raw.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    if b"transfer-encoding: chunked" in head.lower():
        payload = _dechunk(payload)
    return status, orjson.loads(payload) if payload else None


def _dechunk(data: bytes) -> bytes:
    out, rest = [], data
    while rest:
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            break
        out.append(rest[:size])
        rest = rest[size + 2:]
    return b"".join(out)


async def _subscribe(port: int, stream: Stream, since: list[float]) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=2**20)
    # streamMode=debug: every event of the log (the default `updates` leaves node events out).
    writer.write(f"GET /v1/runs/{stream.run_id}/events?streamMode=debug HTTP/1.1\r\n"
                 "Host: 127.0.0.1\r\n"
                 "Accept: text/event-stream\r\n\r\n".encode())
    head = await reader.readuntil(b"\r\n\r\n")
    assert b" 200 " in head.split(b"\r\n", 1)[0], head
    buffer = b""
    try:
        while True:
            size_line = await reader.readline()
            size = int(size_line.split(b";")[0], 16)
            if size == 0:
                return
            buffer += await reader.readexactly(size)
            await reader.readexactly(2)
            while b"\n\n" in buffer:
                frame, buffer = buffer.split(b"\n\n", 1)
                for line in frame.split(b"\n"):
                    if line.startswith(b"data: "):
                        stream.receive(orjson.loads(line[6:]), since[0])
    finally:
        writer.close()


async def _host_bench(args: argparse.Namespace, store: Path) -> dict[str, Any]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**os.environ, "BENCH_TURNS": str(args.turns), "BENCH_DELAY": str(args.delay)}
    env.pop("WOP_TOKENS", None)
    # The host's log goes to a file: a pipe nobody reads would stop the host once full.
    log = store.with_suffix(".log")
    with log.open("wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "wopdsl", "serve", str(COUNCIL), "--port", str(port),
             "--store", str(store), "--max-runs", str(args.runs * 2), "--max-subscribers",
             str(args.runs * args.subscribers * 2), "--log-level", "warning"],
            env=env, stdout=subprocess.DEVNULL, stderr=err)
    try:
        for _ in range(300):
            try:
                if (await _request(port, "GET", "/.well-known/openwop"))[0] == 200:
                    break
            except OSError:
                await asyncio.sleep(0.1)
        runs = await _gather_limited(
            [lambda: _request(port, "POST", "/v1/runs", {"workflowId": "relay"})
             for _ in range(args.runs)], 32)
        run_ids = [body["runId"] for status, body in runs if status == 201]
        assert len(run_ids) == args.runs, runs[:3]
        for run_id in run_ids:
            while (await _request(port, "GET", f"/v1/runs/{run_id}"))[1]["status"] != \
                    "waiting-input":
                await asyncio.sleep(0.05)
        since = [float("inf")]
        streams = [Stream(r) for r in run_ids for _ in range(args.subscribers)]
        tasks = [asyncio.ensure_future(_subscribe(port, s, since)) for s in streams]
        await asyncio.wait_for(asyncio.gather(*(s.connected.wait() for s in streams)), 120)
        since[0] = time.time()
        cpu_before = _cpu_seconds(proc.pid)
        spy = _py_spy(proc.pid, args.py_spy)
        posted = await _gather_limited(
            [lambda r=r: _request(port, "POST", f"/v1/runs/{r}/interrupts/room:track", GO)
             for r in run_ids], 32)
        assert all(status == 200 for status, _ in posted), posted[:3]
        await asyncio.wait_for(asyncio.gather(*tasks), 600)
        cpu = _cpu_seconds(proc.pid) - cpu_before
        if spy is not None:
            spy.send_signal(signal.SIGINT)
            spy.wait(60)
        rss = _vm_hwm(proc.pid)
        lasts = {r: (await _request(port, "GET", f"/v1/runs/{r}/events?lastSequence=0"))[1]
                 ["lastEventSeq"] for r in run_ids}
    except BaseException:
        print(f"host log (tail):\n{log.read_text(errors='replace')[-4000:]}", file=sys.stderr)
        raise
    finally:
        proc.terminate()
        proc.wait(30)
    result = _summary("host (HTTP + SSE)", streams, since[0], rss, args)
    result["cpu_s"] = round(cpu, 2)
    result["incomplete"] = sum(1 for s in streams if max(s.sequences) != lasts[s.run_id] or
                               s.last_type != "run.completed")
    return result


async def _inprocess_bench(args: argparse.Namespace, store_path: Path) -> dict[str, Any]:
    os.environ.update({"BENCH_TURNS": str(args.turns), "BENCH_DELAY": str(args.delay)})
    import wopdsl

    council = wopdsl.load(COUNCIL)
    store = wopdsl.SqliteStore(store_path)
    runs = [council.start(store) for _ in range(args.runs)]
    for run in runs:
        await run.wait()
    since = [float("inf")]
    streams = [Stream(r.run_id) for r in runs for _ in range(args.subscribers)]

    async def follow(stream: Stream) -> None:
        async for event in store.subscribe(stream.run_id, -1):
            stream.receive(event, since[0])  # type: ignore[arg-type]
            if event["type"] == "run.completed":
                return

    tasks = [asyncio.ensure_future(follow(s)) for s in streams]
    await asyncio.gather(*(s.connected.wait() for s in streams))
    since[0] = time.time()
    cpu_before = time.process_time()
    for run in runs:
        await run.reply("go @a", room="track", as_="starter")
    await asyncio.wait_for(asyncio.gather(*tasks), 600)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    result = _summary("in-process (no HTTP)", streams, since[0], rss, args)
    result["cpu_s"] = round(time.process_time() - cpu_before, 2)
    result["incomplete"] = sum(1 for s in streams if s.last_type != "run.completed")
    return result


async def _gather_limited(jobs: list[Any], limit: int) -> list[Any]:
    gate = asyncio.Semaphore(limit)

    async def one(job: Any) -> Any:
        async with gate:
            return await job()

    return await asyncio.gather(*(one(j) for j in jobs))


def _py_spy(pid: int, out: Path | None) -> subprocess.Popen[bytes] | None:
    """Sample the host with py-spy (``pip install py-spy``) into ``out`` until stopped."""
    if out is None:
        return None
    beside = Path(sys.executable).parent / "py-spy"
    return subprocess.Popen([str(beside) if beside.exists() else "py-spy", "record",
                             "--pid", str(pid), "--rate", "200", "--format", "raw",
                             "--nonblocking", "-o", str(out)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _vm_hwm(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def _summary(mode: str, streams: list[Stream], since: float, rss: int,
             args: argparse.Namespace) -> dict[str, Any]:
    latencies = sorted(x for s in streams for x in s.latencies)
    delivered = len(latencies)
    span = max(s.last_at for s in streams) - since
    missing = sum(s.faults()[0] for s in streams)
    duplicated = sum(s.faults()[1] for s in streams)
    return {
        "mode": mode, "runs": args.runs, "subscribers": len(streams),
        "delivered": delivered, "seconds": round(span, 3),
        "events_per_s": round(delivered / span) if span > 0 else 0,
        "p50_ms": round(statistics.median(latencies) * 1000, 1) if latencies else None,
        "p99_ms": round(latencies[int(0.99 * (delivered - 1))] * 1000, 1) if latencies
        else None,
        "peak_rss_mb": round(rss / 2**20, 1), "missing": missing, "duplicated": duplicated,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--subscribers", type=int, default=3, help="SSE streams per run")
    parser.add_argument("--turns", type=int, default=10, help="legs per runner")
    parser.add_argument("--delay", type=float, default=0.2, help="seconds per leg")
    parser.add_argument("--quick", action="store_true", help="a small smoke run")
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--mode", choices=("both", "host", "inprocess"), default="both")
    parser.add_argument("--py-spy", type=Path, metavar="OUT",
                        help="sample the host with py-spy during the measured phase (raw "
                             "collapsed stacks; needs py-spy beside python or on PATH)")
    args = parser.parse_args()
    if args.quick:
        args.runs, args.subscribers, args.turns, args.delay = 5, 2, 3, 0.05
    if args.mode == "inprocess":
        with tempfile.TemporaryDirectory() as tmp:
            print(json.dumps(asyncio.run(_inprocess_bench(args, Path(tmp) / "runs.db"))))
        return 0
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        if args.mode in ("both", "host"):
            results.append(asyncio.run(_host_bench(args, Path(tmp) / "host.db")))
    if args.mode == "both":
        # In its own process, for a clean peak RSS.
        out = subprocess.run([sys.executable, __file__, "--mode", "inprocess", "--runs",
                              str(args.runs), "--subscribers", str(args.subscribers),
                              "--turns", str(args.turns), "--delay", str(args.delay)],
                             capture_output=True, text=True, check=True).stdout
        results.append(json.loads(out.strip().splitlines()[-1]))
    print(f"R={args.runs} runs x S={args.subscribers} subscribers, {args.turns} legs per "
          f"runner, {args.delay:g} s per leg")
    head = (f"{'mode':<22} {'streams':>7} {'delivered':>9} {'events/s':>8} {'p50 ms':>7} "
            f"{'p99 ms':>7} {'RSS MB':>7} {'CPU s':>6} {'missing':>7} {'dup':>4} "
            f"{'incomplete':>10}")
    print(head)
    for r in results:
        print(f"{r['mode']:<22} {r['subscribers']:>7} {r['delivered']:>9} "
              f"{r['events_per_s']:>8} {r['p50_ms']:>7} {r['p99_ms']:>7} "
              f"{r['peak_rss_mb']:>7} {r['cpu_s']:>6} {r['missing']:>7} {r['duplicated']:>4} "
              f"{r['incomplete']:>10}")
    if args.json:
        args.json.write_text(json.dumps({"args": vars(args) | {"json": str(args.json)},
                                         "results": results}, indent=2))
    bad = [r for r in results if r["missing"] or r["duplicated"] or r["incomplete"]]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
