"""The fan-out under a slow reader: bounded buffers, dropped subscribers, nothing lost."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from wopdsl import SqliteStore
from wopdsl.server.config import Limits
from wopdsl.server.errors import ApiError
from wopdsl.server.feed import Feeds


def _event(run_id: str, seq: int, type_: str = "note") -> dict[str, Any]:
    return {"eventId": f"ev-{run_id}-{seq:08d}", "runId": run_id, "type": type_,
            "payload": {"n": seq}, "timestamp": "2026-01-01T00:00:00.000Z", "sequence": seq,
            "schemaVersion": 1}


async def _settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0.01)


async def test_a_slow_subscriber_is_dropped_and_resumes_without_loss(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "runs.db")
    store.append("r", [_event("r", 0)], 0)
    feeds = Feeds(store, Limits(subscriber_buffer=4))
    slow = feeds.subscribe("r")
    slow_frames = slow.batches(-1, idle=1)
    first = await anext(slow_frames)  # It reads the first event, then stalls.
    assert first is not None and [f.sequence for f in first] == [0]
    fast = feeds.subscribe("r")
    fast_seen: list[int] = []

    async def read_fast() -> None:
        async for batch in fast.batches(-1, idle=5):
            assert batch is not None
            fast_seen.extend(frame.sequence for frame in batch)

    reader = asyncio.ensure_future(read_fast())
    await _settle()
    for seq in range(1, 30):
        store.append("r", [_event("r", seq, "run.completed" if seq == 29 else "note")], seq)
        await asyncio.sleep(0.005)
    await asyncio.wait_for(reader, 5)
    assert fast_seen == list(range(30)) and not fast.dropped
    # The slow one never read: it fell more than 4 events behind and was dropped.
    assert slow.dropped
    got = [0] + [f.sequence async for b in slow_frames if b is not None for f in b]
    assert got == [0]  # When it reads again, its stream just ends: nothing was kept for it.
    fast.close()
    assert feeds.count == 0
    # Reconnecting after the last event it saw loses nothing and repeats nothing.
    again = feeds.subscribe("r")
    rest = [f.sequence async for b in again.batches(got[-1], idle=1) if b is not None
            for f in b]
    assert got + rest == list(range(30))
    again.close()
    store.close()


async def test_subscriber_caps(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "runs.db")
    store.append("r", [_event("r", 0)], 0)
    feeds = Feeds(store, Limits(max_subscribers=3, max_subscribers_per_run=2))
    first, second = feeds.subscribe("r"), feeds.subscribe("r")
    with pytest.raises(ApiError) as per_run:
        feeds.subscribe("r")
    assert (per_run.value.status, per_run.value.details["limit"]) == (503,
                                                                      "maxSubscribersPerRun")
    store.append("s", [_event("s", 0)], 0)
    third = feeds.subscribe("s")
    with pytest.raises(ApiError) as total:
        feeds.subscribe("s")
    assert total.value.details["limit"] == "maxSubscribers"
    for subscriber in (first, second, third):
        subscriber.close()
    assert feeds.count == 0
    await feeds.close()
    store.close()
