"""A partitioned PostgreSQL store never holds the host's event loop (issue 20, item 5).

A TCP proxy between ``wop serve`` and a real PostgreSQL server black-holes every request
that names one run: nothing of it reaches the server and no answer comes, as in a network
partition (not a refused connection, which fails fast). While each such request hangs, the
host still answers discovery and reads of another run: every store call of creating,
posting to, forking and cancelling a run is made off the loop. Each held request is then let
through, and the operation completes as usual. ``Run.astate``/``Run.astatus``,
``Run.wait`` and ``run.events()`` awaited on a loop let it run while their reads hang.
"""

from __future__ import annotations

import asyncio
import threading
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.server.conftest import Served
from tests.tcp_proxy import TcpProxy

pytestmark = pytest.mark.slow

SEC = Path(__file__).resolve().parent / "sec_councils"
HELLO = {"resumeValue": {"content": {"text": "Hello there, @keeper", "mentions": ["keeper"]}}}
CHECK_S = 10.0
"""How long a check may take while a store request hangs (it takes milliseconds)."""


def _discovery_answers(served: Served) -> bool:
    with urllib.request.urlopen(served.url + "/.well-known/openwop", timeout=CHECK_S) as resp:
        return bool(resp.status == 200)


def _while_partitioned(served: Served, proxy: TcpProxy, run_id: str, other: str,
                       act: Callable[[], Any]) -> Any:
    """``act()`` (an HTTP call) while every store request naming ``run_id`` is black-holed.

    At each held request the host must answer discovery and a read of the run ``other``;
    then the request is let through. Returns what ``act`` returned.
    """
    proxy.hold(run_id.encode())
    outcome: dict[str, Any] = {}
    worker = threading.Thread(target=lambda: outcome.update(answer=act()), daemon=True)
    worker.start()
    held = 0
    try:
        while worker.is_alive():
            if not proxy.wait_held(0.05):
                continue
            held += 1
            # The store does not answer this request: the loop must not be waiting for it.
            assert _discovery_answers(served)
            status, snap, _ = served.request("GET", f"/v1/runs/{other}")
            assert (status, snap["status"]) == (200, "waiting-input"), snap
            proxy.release_held()
    finally:
        proxy.unhold()
        worker.join(60)
    assert held >= 1, "no store request named the run: nothing was partitioned"
    assert proxy.overdue == 0, "a held store request froze the test: the loop waited on it"
    assert "answer" in outcome, "the request failed (see the test's output)"
    return outcome["answer"]


def _create(served: Served, key: str | None = None) -> str:
    headers = {"Idempotency-Key": key} if key else None
    status, body, _ = served.request("POST", "/v1/runs", {"workflowId": "guestbook"},
                                     headers=headers)
    assert status == 201, body
    return str(body["runId"])


def test_create_reply_fork_and_cancel_never_hold_the_loop_on_a_partitioned_store(
        pg_url: str, proxy: TcpProxy, serve: Callable[..., Served]) -> None:
    from wopdsl.server.auth import LOCAL_PRINCIPAL
    from wopdsl.server.idempotency import run_id_for_key

    served = serve(SEC, args=("--store", proxy.via(pg_url)))
    other = _create(served)
    served.wait_status(other, "waiting-input")

    # Create: the run's id is derived from its key, so its every store request is known.
    run_id = run_id_for_key("guestbook", LOCAL_PRINCIPAL, "partitioned")
    created = _while_partitioned(served, proxy, run_id, other,
                                 lambda: _create(served, "partitioned"))
    assert created == run_id
    served.wait_status(run_id, "waiting-input")

    path = f"/v1/runs/{run_id}/interrupts/room:hall"
    status, answer, _ = _while_partitioned(served, proxy, run_id, other,
                                           lambda: served.request("POST", path, HELLO))
    assert status == 200 and answer["messageId"], answer
    served.wait_status(run_id, "waiting-input")

    status, forked, _ = _while_partitioned(
        served, proxy, run_id, other, lambda: served.request("POST", f"/v1/runs/{run_id}:fork",
                                                             {"fromSeq": 0}))
    assert status == 201 and forked["sourceRunId"] == run_id, forked

    status, cancelled, _ = _while_partitioned(
        served, proxy, run_id, other, lambda: served.request("POST",
                                                             f"/v1/runs/{run_id}/cancel", {}))
    assert (status, cancelled["status"]) == (200, "cancelled"), cancelled

    # Every request landed once: one guest turn, one cancel; the fork runs from the start.
    events = served.request("GET", f"/v1/runs/{run_id}/events")[1]["events"]
    guest = [e for e in events if e["type"] == "conversation.exchanged"
             and e["payload"]["turn"]["speakerId"] == "host:guest"]
    assert [e["payload"]["turn"]["content"]["text"] for e in guest] == ["Hello there, @keeper"]
    assert [e["type"] for e in events].count("run.cancelled") == 1
    served.wait_status(forked["runId"], "waiting-input")
    assert served.request("GET", f"/v1/runs/{other}")[1]["status"] == "waiting-input"
    served.stop()
    assert "Traceback" not in served.logs()
    assert (urlsplit(pg_url).password or "") not in served.logs()


async def test_a_runs_state_awaited_on_a_loop_lets_it_run_while_the_store_hangs(
        pg_url: str, proxy: TcpProxy) -> None:
    from wopdsl import attach, load
    from wopdsl.store.postgres import PostgresStore

    council = load(SEC / "guestbook.toml")
    direct = PostgresStore(pg_url)
    store = PostgresStore(proxy.via(pg_url))
    proxy.hold_s = 5.0  # A loop frozen by a held read would wait that long, then fail.
    try:
        await (await council.astart(direct, "watched")).wait()
        run = attach(store, "watched")
        beats = 0

        async def heartbeat() -> None:
            nonlocal beats
            while True:
                beats += 1
                await asyncio.sleep(0.005)

        beating = asyncio.ensure_future(heartbeat())

        async def partitioned(call: Callable[[], Any]) -> Any:
            """Await ``call()`` while its store requests hang; the loop must keep beating."""
            proxy.hold(b"watched")
            task = asyncio.ensure_future(call())
            held = 0
            try:
                while not task.done():
                    if not await asyncio.to_thread(proxy.wait_held, 0.05):
                        continue
                    held += 1
                    before = beats
                    await asyncio.sleep(0.05)
                    assert beats > before and not task.done()  # It waits; the loop runs.
                    proxy.release_held()
            finally:
                proxy.unhold()
            assert held >= 1 and proxy.overdue == 0
            return await task

        assert await partitioned(run.astatus) == "waiting-input"
        elsewhere = attach(direct, "watched")  # Another writer, not through the proxy.
        await elsewhere.reply("Catching up", as_="owner")
        await elsewhere.wait()
        state = await partitioned(run.astate)
        assert state.last_sequence == direct.last_sequence("watched")
        assert await partitioned(run.wait) == "waiting-input"

        async def first_events() -> list[Any]:
            seen = []
            async for event in run.events(after=-1):
                seen.append(event)
            return seen

        followed = await partitioned(first_events)
        assert [e["sequence"] for e in followed] == list(range(len(followed)))
        beating.cancel()
    finally:
        store.close()
        direct.close()
