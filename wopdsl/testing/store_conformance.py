"""The event store contract as a reusable pytest suite.

Subclass :class:`StoreConformance` in a test module and say how to build your store; every
``test_*`` method then runs against it::

    from wopdsl.testing.store_conformance import StoreConformance

    class TestMyStore(StoreConformance):
        def make_store(self, tmp_path):
            return MyStore(tmp_path / "events")

Durable backends also override :meth:`StoreConformance.reopen_store`, and backends that check
records on read override :meth:`StoreConformance.write_raw_record`. The tests of a capability
are collected only for a backend that provides it (an in-memory store has nothing to reopen):
nothing is skipped.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Awaitable, Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import pytest

from wopdsl.errors import EventInvalid, StoreConflict
from wopdsl.protocol.envelope import RunEventDoc
from wopdsl.store.base import Answer, EventStore, RunInfo
from wopdsl.testing._store_answers import Answers
from wopdsl.testing._store_cases import (
    AppendAndRead,
    make_event,
    make_events,
    sequences,
    started,
)

__all__ = ["StoreConformance", "make_event", "make_events"]

_T = TypeVar("_T")
_F = TypeVar("_F", bound=Callable[..., Any])
_EPOCH = datetime(2024, 1, 1, tzinfo=UTC)
_NEEDS: dict[str, str] = {}
"""Test name → the capability hook it needs."""


def _needs(capability: str) -> Callable[[_F], _F]:
    """Mark a test as one of ``capability``'s: collected only where the hook is overridden."""

    def mark(test: _F) -> _F:
        _NEEDS[test.__name__] = capability
        return test

    return mark


class StoreConformance(AppendAndRead, Answers):
    """The contract every :class:`~wopdsl.store.base.EventStore` backend keeps.

    Override :meth:`make_store` (required), and :meth:`reopen_store` and
    :meth:`write_raw_record` when the backend has those capabilities.
    """

    timeout: float = 5.0
    """Seconds a live test waits for an event before failing."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name, capability in _NEEDS.items():
            if not cls.provides(capability):
                setattr(cls, name, None)  # Not a test of this backend: pytest collects none.
            elif getattr(cls, name) is None:
                setattr(cls, name, vars(StoreConformance)[name])

    @classmethod
    def provides(cls, capability: str) -> bool:
        """Whether the subclass overrides the ``capability`` hook."""
        return getattr(cls, capability) is not getattr(StoreConformance, capability)

    # -- hooks -----------------------------------------------------------------------------

    def make_store(self, tmp_path: Path) -> EventStore:
        """Return a new, empty store whose files (if any) live under ``tmp_path``."""
        raise NotImplementedError("StoreConformance subclasses must implement make_store()")

    def reopen_store(self, tmp_path: Path) -> EventStore:
        """Capability: open another handle on the storage ``make_store(tmp_path)`` created."""
        raise NotImplementedError

    def write_raw_record(self, tmp_path: Path, run_id: str, sequence: int, body: str) -> None:
        """Capability: store ``body`` verbatim as the record of ``run_id`` at ``sequence``."""
        raise NotImplementedError

    def private_store(self, tmp_path: Path) -> EventStore:
        """Capability: a new store that keeps private records (``save_private``).

        Usually ``return self.make_store(tmp_path)``.
        """
        raise NotImplementedError

    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[EventStore]:
        """The store under test, closed afterwards."""
        store = self.make_store(tmp_path)
        yield store
        store.close()

    def require(self, capability: str) -> None:
        """Skip the calling test unless the subclass overrides the ``capability`` hook.

        For a subclass's own capability tests; the suite's are not collected instead.
        """
        if not self.provides(capability):
            pytest.skip(f"{type(self).__name__} does not provide {capability}()")

    def run_async(self, make: Callable[[], Awaitable[_T]]) -> _T:
        """Run a coroutine on a fresh event loop (works without pytest-asyncio)."""

        async def bounded() -> _T:
            return await asyncio.wait_for(make(), self.timeout)

        return asyncio.run(bounded())

    # -- private records -------------------------------------------------------------------

    @_needs("private_store")
    def test_private_records_are_kept_per_run(self, tmp_path: Path) -> None:
        """Capability private_store: records read back by prefix, replaced by key.

        Never shared between runs, and kept by a second handle on the same storage.
        """
        store = self.private_store(tmp_path)
        try:
            assert store.read_private("r1") == {}
            store.save_private("r1", {"call/a/1/0#call": "{}", "call/a/1/0#result": "x"})
            store.save_private("r1", {"call/a/1/0#result": "y", "call/b/2/0#call": "é\n"})
            store.save_private("r2", {"call/a/1/0#call": "other run"})
            assert store.read_private("r1", "call/a/") == {"call/a/1/0#call": "{}",
                                                          "call/a/1/0#result": "y"}
            assert store.read_private("r1")["call/b/2/0#call"] == "é\n"
            assert store.read_private("r2") == {"call/a/1/0#call": "other run"}
            assert store.read_private("r1", "%") == {} and store.read_private("r1", "_") == {}
            if self.provides("reopen_store"):
                other = self.reopen_store(tmp_path)
                try:
                    assert other.read_private("r1", "call/b/") == {"call/b/2/0#call": "é\n"}
                finally:
                    other.close()
        finally:
            store.close()

    # -- claims ----------------------------------------------------------------------------

    def test_a_run_has_one_claim_at_a_time(self, store: EventStore) -> None:
        """``claim(run)`` is exclusive per run, other runs stay free, and it ends with the block."""
        with store.claim("r1"):
            with pytest.raises(StoreConflict) as caught, store.claim("r1"):
                pass  # pragma: no cover - the claim above is refused
            assert caught.value.code == "STORE_CONFLICT"
            with store.claim("r2"):
                pass
        with store.claim("r1"):
            pass

    @_needs("reopen_store")
    def test_a_second_handle_sees_the_claim(self, store: EventStore, tmp_path: Path) -> None:
        """Capability reopen_store: a claim holds for every handle on the same storage."""
        other = self.reopen_store(tmp_path)
        try:
            with store.claim("r1"), pytest.raises(StoreConflict), other.claim("r1"):
                pass  # pragma: no cover - refused
            with other.claim("r1"):
                pass
        finally:
            other.close()

    # -- listing ---------------------------------------------------------------------------

    def test_runs_lists_oldest_first_with_their_last_event(self, store: EventStore) -> None:
        """``runs()`` lists runs oldest first, with council id, start time and last event."""
        store.append("a", [started("a", "council-a")], 0)
        store.append("b", [started("b", "council-b"), make_event("b", 1)], 0)
        store.append("a", make_events("a", 1, 2, type="node.completed"), 1)
        assert store.runs() == [
            RunInfo("a", "council-a", "2024-01-01T00:00:00.000Z", 2, "node.completed"),
            RunInfo("b", "council-b", "2024-01-01T00:00:00.000Z", 1, "node.started"),
        ]

    def test_close_is_idempotent(self, store: EventStore) -> None:
        """Closing twice is harmless."""
        store.close()
        store.close()

    # -- subscribe -------------------------------------------------------------------------

    def _follow(
        self, store: EventStore, run_id: str, after: int, count: int, during: Callable[[], Any],
        types: frozenset[str] | None = None,
    ) -> list[RunEventDoc]:
        """Subscribe, call ``during()`` once caught up, and collect ``count`` events."""
        backlog = len([e for e in store.read(run_id, after) if types is None or e["type"] in types])

        async def scenario() -> list[RunEventDoc]:
            loop = asyncio.get_running_loop()
            received: list[RunEventDoc] = []
            stream = store.subscribe(run_id, after, types=types)
            try:
                # The short delay lets the subscriber reach its live wait before the append.
                if backlog == 0:
                    loop.call_later(0.02, during)
                while len(received) < count:
                    received.append(await anext(stream))
                    if len(received) == backlog:
                        loop.call_later(0.02, during)
            finally:
                closer = getattr(stream, "aclose", None)
                if closer is not None:
                    await closer()
            return received

        return self.run_async(scenario)

    def test_subscribe_catches_up_then_follows_live(self, store: EventStore) -> None:
        """``subscribe`` yields the backlog, then live appends, in order."""
        store.append("r1", make_events("r1", 0, 3), 0)
        received = self._follow(
            store, "r1", -1, 6, lambda: store.append("r1", make_events("r1", 3, 3), 3)
        )
        assert sequences(received) == list(range(6))
        assert received == store.read("r1")

    def test_subscribe_after_skips_what_the_reader_has(self, store: EventStore) -> None:
        """``subscribe(after=n)`` starts at ``n + 1``."""
        store.append("r1", make_events("r1", 0, 4), 0)
        received = self._follow(
            store, "r1", 2, 3, lambda: store.append("r1", make_events("r1", 4, 2), 4)
        )
        assert sequences(received) == [3, 4, 5]

    def test_subscribe_to_a_run_that_does_not_exist_yet(self, store: EventStore) -> None:
        """A subscriber may wait for a run that has no events yet."""
        received = self._follow(
            store, "r1", -1, 2, lambda: store.append("r1", make_events("r1", 0, 2), 0)
        )
        assert sequences(received) == [0, 1]

    def test_subscribe_yields_only_the_types_asked_for(self, store: EventStore) -> None:
        """``subscribe(types=...)`` passes over the other events, backlog and live alike."""
        kinds = ["node.started", "node.completed", "conversation.exchanged"]

        def mixed(start: int) -> list[RunEventDoc]:
            return [make_event("r1", start + i, kinds[i % 3]) for i in range(6)]

        store.append("r1", mixed(0), 0)
        wanted = frozenset({"node.completed", "conversation.exchanged"})
        received = self._follow(store, "r1", -1, 8, lambda: store.append("r1", mixed(6), 6),
                                types=wanted)
        assert received == [e for e in store.read("r1") if e["type"] in wanted]
        assert sequences(received) == [1, 2, 4, 5, 7, 8, 10, 11]

    def test_subscribe_sees_appends_from_another_thread(self, store: EventStore) -> None:
        """Appends from a worker thread reach a subscriber on the event loop."""
        worker = threading.Thread(target=store.append, args=("r1", make_events("r1", 1, 2), 1))
        store.append("r1", make_events("r1", 0, 1), 0)
        received = self._follow(store, "r1", -1, 3, worker.start)
        worker.join()
        assert sequences(received) == [0, 1, 2]

    # -- capabilities ----------------------------------------------------------------------

    @_needs("reopen_store")
    def test_close_and_reopen_keeps_every_run(self, store: EventStore, tmp_path: Path) -> None:
        """Capability reopen_store: closing and reopening keeps every run and event."""
        store.append("a", [started("a", "council-a"), make_event("a", 1)], 0)
        store.append("b", [started("b", "council-b")], 0)
        before, listed = store.read("a"), store.runs()
        store.close()
        reopened = self.reopen_store(tmp_path)
        try:
            assert reopened.read("a") == before
            assert reopened.runs() == listed
            reopened.append("a", make_events("a", 2, 1), 2)
            assert reopened.last_sequence("a") == 2
        finally:
            reopened.close()

    @_needs("reopen_store")
    def test_answers_outlive_the_handle(self, store: EventStore, tmp_path: Path) -> None:
        """Capability reopen_store: answers are durable and shared by every handle."""
        answer = Answer("scope-1", "print-1", 200, {"messageId": "team/a/1/0"}, 5.0)
        store.remember_answer(answer)
        other = self.reopen_store(tmp_path)
        try:
            assert other.recall_answer("scope-1") == answer
            assert other.remember_answer(Answer("scope-1", "x", 500, {}, 6.0)) == answer
        finally:
            other.close()
        store.close()
        reopened = self.reopen_store(tmp_path)
        try:
            assert reopened.recall_answer("scope-1") == answer
        finally:
            reopened.close()

    @_needs("reopen_store")
    def test_two_handles_never_interleave(self, store: EventStore, tmp_path: Path) -> None:
        """Capability reopen_store: two handles on one storage never interleave a log."""
        other = self.reopen_store(tmp_path)
        try:
            store.append("r1", make_events("r1", 0, 2), 0)
            with pytest.raises(StoreConflict):
                other.append("r1", make_events("r1", 0, 3, type="node.failed"), 0)
            other.append("r1", make_events("r1", 2, 1), other.last_sequence("r1") + 1)
            assert other.read("r1") == store.read("r1")
            assert sequences(store.read("r1")) == [0, 1, 2]
            assert "node.failed" not in {e["type"] for e in store.read("r1")}
        finally:
            other.close()

    @_needs("reopen_store")
    def test_subscribe_follows_another_handle(self, store: EventStore, tmp_path: Path) -> None:
        """Capability reopen_store: a subscriber sees another handle's appends live."""
        other = self.reopen_store(tmp_path)
        try:
            received = self._follow(
                store, "r1", -1, 2, lambda: other.append("r1", make_events("r1", 0, 2), 0)
            )
        finally:
            other.close()
        assert sequences(received) == [0, 1]

    def _corrupt(self, store: EventStore, tmp_path: Path, sequence: int, body: str) -> None:
        store.append("r1", make_events("r1", 0, sequence), 0)
        self.write_raw_record(tmp_path, "r1", sequence, body)

    def _assert_rejected(self, store: EventStore, sequence: int, *words: str) -> None:
        with pytest.raises(EventInvalid) as caught:
            store.read("r1")
        message = str(caught.value)
        assert caught.value.code == "EVENT_INVALID"
        for word in ("r1", f"#{sequence}", *words):
            assert word in message, f"{word!r} missing from: {message}"
        assert sequences(store.read("r1", after=sequence)) == []

    @_needs("write_raw_record")
    def test_record_that_is_not_json_is_rejected(self, store: EventStore, tmp_path: Path) -> None:
        """Capability write_raw_record: a record that is not JSON raises EventInvalid."""
        self._corrupt(store, tmp_path, 2, '{"eventId": "evt.r1.0000000002", "runId": ')
        self._assert_rejected(store, 2, "JSON")

    @_needs("write_raw_record")
    def test_record_that_is_not_an_event_is_rejected(
        self, store: EventStore, tmp_path: Path
    ) -> None:
        """Capability write_raw_record: a record that is not a RunEventDoc raises EventInvalid."""
        event: dict[str, Any] = dict(make_event("r1", 1))
        del event["type"]
        self._corrupt(store, tmp_path, 1, json.dumps(event))
        self._assert_rejected(store, 1, "type")

    @_needs("write_raw_record")
    def test_unsupported_schema_version_is_rejected(
        self, store: EventStore, tmp_path: Path
    ) -> None:
        """Capability write_raw_record: an unknown schemaVersion raises EventInvalid."""
        event = make_event("r1", 3, schemaVersion=99)
        self._corrupt(store, tmp_path, 3, json.dumps(event))
        self._assert_rejected(store, 3, "schemaVersion", "99")
