"""An in-memory event store (tests, notebooks, ``--store memory:``)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from wopdsl.errors import EventInvalid
from wopdsl.protocol.envelope import RunEventDoc
from wopdsl.store.base import (
    _ANSWERS_LOCK,
    Answer,
    EventStore,
    RunInfo,
    append_conflict,
    run_started_at,
)

if TYPE_CHECKING:
    import asyncio

__all__ = ["MemoryStore"]


class MemoryStore(EventStore):
    """Keeps every run's events in a list per run; lost when the process ends.

    Events are stored as JSON text, so readers never share mutable state with writers.
    """

    def __init__(self) -> None:
        self._logs: dict[str, list[str]] = {}
        self._private: dict[str, dict[str, str]] = {}
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []

    def append(self, run_id: str, events: Sequence[RunEventDoc], expected_sequence: int) -> None:
        """Append atomically (see :meth:`EventStore.append`)."""
        # Look up without creating: a refused append must not list the run in runs().
        log = self._logs.get(run_id, [])
        if len(log) != expected_sequence:
            raise append_conflict(run_id, expected_sequence, len(log) - 1)
        self.check_expected(run_id, events, expected_sequence)
        # Encode every event before touching the log, so a bad one leaves the run unchanged.
        try:
            texts = [json.dumps(e, ensure_ascii=False, allow_nan=False) for e in events]
        except (TypeError, ValueError) as exc:
            raise EventInvalid(
                f"run {run_id}: an event cannot be stored as JSON: {exc}",
                hint="payloads must hold only JSON values (no NaN, sets, objects or cycles)",
            ) from None
        if texts:
            self._logs.setdefault(run_id, log).extend(texts)
        self._notify()

    def append_answered(self, run_id: str, events: Sequence[RunEventDoc],
                        expected_sequence: int, answer: Answer) -> None:
        """Append and keep ``answer`` under one lock (see :meth:`EventStore.append_answered`)."""
        with _ANSWERS_LOCK:
            self.append(run_id, events, expected_sequence)
            self.remember_answer(answer)

    def read(self, run_id: str, after: int = -1) -> list[RunEventDoc]:
        """Return events with ``sequence > after``."""
        log = self._logs.get(run_id, [])
        # Clamp: a negative slice start would count from the end of the log.
        return [json.loads(text) for text in log[max(after + 1, 0) :]]

    def runs(self) -> list[RunInfo]:
        """List runs in insertion order."""
        infos = []
        for run_id, log in self._logs.items():
            if not log:
                continue
            first, last = json.loads(log[0]), json.loads(log[-1])
            infos.append(
                RunInfo(
                    run_id=run_id,
                    workflow_id=str(first["payload"].get("workflowId", "")),
                    started_at=run_started_at(first),
                    last_sequence=last["sequence"],
                    last_type=last["type"],
                )
            )
        return infos

    def save_private(self, run_id: str, entries: Mapping[str, str]) -> None:
        """Keep records beside the log (see :meth:`EventStore.save_private`)."""
        self._private.setdefault(run_id, {}).update(entries)

    def read_private(self, run_id: str, prefix: str = "") -> dict[str, str]:
        """Return the run's private records under ``prefix``."""
        return {k: v for k, v in self._private.get(run_id, {}).items() if k.startswith(prefix)}

    def driven(self, run_id: str) -> bool:
        """Whether a driver in this process holds the run (a memory store has no other)."""
        return bool(super().driven(run_id))

    def last_sequence(self, run_id: str) -> int:
        """Return the last sequence or -1."""
        return len(self._logs.get(run_id, [])) - 1

    def _notify(self) -> None:
        waiters, self._waiters = self._waiters, []
        for loop, future in waiters:
            if not future.done():
                loop.call_soon_threadsafe(_resolve, future)

    async def wait_for_change(self, run_id: str, after: int) -> None:
        """Wait for the next append (or a poll interval, whichever is first)."""
        import asyncio  # Here, not at import: asyncio is loaded once a loop runs.

        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        self._waiters.append((loop, future))
        try:
            if self.last_sequence(run_id) > after:
                return
            await asyncio.wait((future,), timeout=1.0)
        finally:
            # Drop our entry when nothing was appended, so idle subscribers don't pile up.
            self._waiters = [w for w in self._waiters if w[1] is not future]


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
