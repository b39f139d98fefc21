"""The event store contract as a reusable pytest suite.

Subclass :class:`StoreConformance` in a test module and say how to build your store; every
``test_*`` method then runs against it::

    from wopdsl.testing.store_conformance import StoreConformance

    class TestMyStore(StoreConformance):
        def make_store(self, tmp_path):
            return MyStore(tmp_path / "events")

Durable backends also override :meth:`StoreConformance.reopen_store`, and backends that check
records on read override :meth:`StoreConformance.write_raw_record`; the tests needing a
capability a backend does not provide are skipped, and say so.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Awaitable, Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar, cast

import pytest

from wopdsl.errors import EventInvalid, StoreConflict
from wopdsl.protocol.envelope import RunEventDoc
from wopdsl.store.base import EventStore, RunInfo

__all__ = ["StoreConformance", "make_event", "make_events"]

_T = TypeVar("_T")
_EPOCH = datetime(2024, 1, 1, tzinfo=UTC)


def make_event(
    run_id: str,
    sequence: int,
    type: str = "node.started",
    payload: dict[str, Any] | None = None,
    **extra: Any,
) -> RunEventDoc:
    """Build a valid ``RunEventDoc`` with a deterministic id and timestamp.

    Args:
        run_id: The run.
        sequence: Its place in the run.
        type: The event type.
        payload: The payload (default: ``{"nodeId": "n", "typeId": "test"}``).
        **extra: Optional envelope keys (``nodeId``, ``causationId``, ...).

    Returns:
        The event, with ``schemaVersion: 1``.
    """
    stamp = _EPOCH + timedelta(milliseconds=sequence)
    event = {
        "eventId": f"evt.{run_id}.{sequence:012d}",
        "runId": run_id,
        "type": type,
        "payload": {"nodeId": "n", "typeId": "test"} if payload is None else payload,
        "timestamp": stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "sequence": sequence,
        "schemaVersion": 1,
        **extra,
    }
    return cast(RunEventDoc, event)


def make_events(run_id: str, start: int, count: int, **kwargs: Any) -> list[RunEventDoc]:
    """Build ``count`` events of ``run_id`` with sequences from ``start`` (see make_event)."""
    return [make_event(run_id, start + i, **kwargs) for i in range(count)]


def _started(run_id: str, workflow_id: str) -> RunEventDoc:
    payload = {"workflowId": workflow_id, "inputs": {"task": "t"}, "metadata": {}}
    return make_event(run_id, 0, "run.started", payload)


def _sequences(events: list[RunEventDoc]) -> list[int]:
    return [event["sequence"] for event in events]


class StoreConformance:
    """The contract every :class:`~wopdsl.store.base.EventStore` backend keeps.

    Override :meth:`make_store` (required), and :meth:`reopen_store` and
    :meth:`write_raw_record` when the backend has those capabilities.
    """

    timeout: float = 5.0
    """Seconds a live test waits for an event before failing."""

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

    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[EventStore]:
        """The store under test, closed afterwards."""
        store = self.make_store(tmp_path)
        yield store
        store.close()

    def require(self, capability: str) -> None:
        """Skip the calling test unless the subclass overrides the ``capability`` hook."""
        if getattr(type(self), capability) is getattr(StoreConformance, capability):
            pytest.skip(f"{type(self).__name__} does not provide {capability}()")

    def run_async(self, make: Callable[[], Awaitable[_T]]) -> _T:
        """Run a coroutine on a fresh event loop (works without pytest-asyncio)."""

        async def bounded() -> _T:
            return await asyncio.wait_for(make(), self.timeout)

        return asyncio.run(bounded())

    # -- append and read -------------------------------------------------------------------

    def test_new_store_is_empty(self, store: EventStore) -> None:
        """A new store lists no runs and knows no events."""
        assert store.runs() == []
        assert store.read("r1") == []
        assert store.last_sequence("r1") == -1
        assert not store.exists("r1")

    def test_append_then_read_round_trips(self, store: EventStore) -> None:
        """Events read back equal to what was appended (unicode, nesting, optional keys)."""
        payload = {
            "text": 'héllo — 日本語 🎉 "quoted" \\ back\nline',
            "numbers": [0, -1, 2**53 - 1, 1.5],
            "flags": {"yes": True, "no": False, "none": None},
            "nested": [{"deep": [[]]}, {}],
        }
        events = [_started("r1", "council"), make_event("r1", 1, "node.started", payload)]
        events.append(make_event("r1", 2, "node.completed", nodeId="n", causationId="c" * 16))
        store.append("r1", events, 0)
        assert store.read("r1") == events
        assert store.last_sequence("r1") == 2
        assert store.exists("r1")

    def test_read_after(self, store: EventStore) -> None:
        """``read(after=n)`` returns exactly the events with ``sequence > n``."""
        store.append("r1", make_events("r1", 0, 5), 0)
        assert _sequences(store.read("r1", after=-1)) == [0, 1, 2, 3, 4]
        assert _sequences(store.read("r1", after=1)) == [2, 3, 4]
        assert store.read("r1", after=4) == []
        assert store.read("r1", after=99) == []
        assert _sequences(store.read("r1", after=-7)) == [0, 1, 2, 3, 4]

    def test_appends_accumulate_in_order(self, store: EventStore) -> None:
        """Successive appends extend the log in sequence order."""
        for start in range(0, 12, 3):
            store.append("r1", make_events("r1", start, 3), start)
        assert _sequences(store.read("r1")) == list(range(12))

    def test_long_log_reads_back_in_order(self, store: EventStore) -> None:
        """A long log reads back whole and in order, also from the middle."""
        for start in range(0, 1500, 500):
            store.append("r1", make_events("r1", start, 500), start)
        assert _sequences(store.read("r1")) == list(range(1500))
        assert _sequences(store.read("r1", after=1399)) == list(range(1400, 1500))

    def test_runs_are_independent(self, store: EventStore) -> None:
        """Each run has its own sequence, starting at 0."""
        store.append("a", make_events("a", 0, 2), 0)
        store.append("b", make_events("b", 0, 1), 0)
        store.append("a", make_events("a", 2, 1), 2)
        assert _sequences(store.read("a")) == [0, 1, 2]
        assert [e["runId"] for e in store.read("b")] == ["b"]
        assert (store.last_sequence("a"), store.last_sequence("b")) == (2, 0)

    def test_read_returns_copies(self, store: EventStore) -> None:
        """Neither the appended dicts nor the read ones share state with the store."""
        event = make_event("r1", 0, payload={"items": [1]})
        store.append("r1", [event], 0)
        event["payload"]["items"].append(2)
        first = store.read("r1")
        first[0]["payload"]["items"].append(3)
        assert store.read("r1")[0]["payload"] == {"items": [1]}

    def test_empty_append_writes_nothing(self, store: EventStore) -> None:
        """Appending no events creates no run, but still checks the sequence."""
        store.append("r1", [], 0)
        assert store.runs() == []
        with pytest.raises(StoreConflict):
            store.append("r1", [], 3)

    # -- atomicity and optimistic concurrency ----------------------------------------------

    def test_append_at_a_stale_sequence_conflicts_and_writes_nothing(
        self, store: EventStore
    ) -> None:
        """An append at the wrong sequence raises StoreConflict and writes nothing."""
        store.append("r1", make_events("r1", 0, 3), 0)
        before = store.read("r1")
        for expected in (0, 2, 5):
            batch = make_events("r1", expected, 2, type="node.failed")
            with pytest.raises(StoreConflict) as caught:
                store.append("r1", batch, expected)
            assert caught.value.code == "STORE_CONFLICT"
            assert "r1" in str(caught.value)
        assert store.read("r1") == before
        assert store.last_sequence("r1") == 2

    def test_first_append_must_start_at_zero(self, store: EventStore) -> None:
        """A run's first append must be at sequence 0."""
        with pytest.raises(StoreConflict):
            store.append("r1", make_events("r1", 1, 1), 1)
        assert store.runs() == []

    def test_second_writer_at_the_same_sequence_conflicts(self, store: EventStore) -> None:
        """Two writers at one sequence: the first wins, the second conflicts."""
        store.append("r1", make_events("r1", 0, 2), 0)
        store.append("r1", make_events("r1", 2, 2, type="node.completed"), 2)
        with pytest.raises(StoreConflict):
            store.append("r1", make_events("r1", 2, 3, type="node.failed"), 2)
        assert [e["type"] for e in store.read("r1", after=1)] == ["node.completed"] * 2

    def test_batch_with_broken_sequences_is_refused_whole(self, store: EventStore) -> None:
        """A batch whose sequences or run ids are not contiguous is refused whole."""
        batch = make_events("r1", 0, 3)
        batch[2]["sequence"] = 7
        with pytest.raises(StoreConflict):
            store.append("r1", batch, 0)
        wrong_run = [make_event("r1", 0), make_event("other", 1)]
        with pytest.raises(StoreConflict):
            store.append("r1", wrong_run, 0)
        assert store.read("r1") == []
        assert store.runs() == []

    def test_batch_with_an_unstorable_event_writes_nothing(self, store: EventStore) -> None:
        """A batch holding an event that cannot be stored writes none of its events."""
        store.append("r1", make_events("r1", 0, 1), 0)
        batch = make_events("r1", 1, 3)
        batch[2]["payload"] = {"not json": object()}
        with pytest.raises((TypeError, ValueError)):
            store.append("r1", batch, 1)
        assert store.last_sequence("r1") == 0
        store.append("r1", make_events("r1", 1, 1), 1)
        assert _sequences(store.read("r1")) == [0, 1]

    @pytest.mark.parametrize("value", [
        float("nan"), float("inf"), -float("inf"), {1, 2}, object(), [datetime(2024, 1, 1)],
    ], ids=["nan", "infinity", "minus-infinity", "set", "object", "datetime"])
    def test_a_value_json_cannot_hold_is_refused(self, store: EventStore, value: Any) -> None:
        """NaN, infinities, sets, objects and datetimes raise, and nothing is saved."""
        store.append("r1", make_events("r1", 0, 1), 0)
        with pytest.raises((EventInvalid, TypeError, ValueError)):
            store.append("r1", [make_event("r1", 1, payload={"nodeId": "n", "v": value})], 1)
        assert store.last_sequence("r1") == 0
        assert _sequences(store.read("r1")) == [0]

    def test_json_edge_values_round_trip_exactly(self, store: EventStore) -> None:
        """Huge integers, nulls, control characters and non-BMP text read back unchanged."""
        payload = {
            "nodeId": "n",
            "big": [2**64, -(2**63) - 1, 10**30, 2**63 - 1],
            "floats": [0.1, 1e16, -0.0, 5e-324, 1.7976931348623157e308],
            "null": None,
            "text": "tab\t nul\u0000 bell\u0007 del\u007f \u2028 \U0001f600 null",
            "nested": {"": [None, {"null": None}]},
        }
        event = make_event("r1", 0, payload=payload)
        store.append("r1", [event], 0)
        (back,) = store.read("r1")
        assert back == event
        assert json.dumps(back["payload"]) == json.dumps(payload)

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

    def test_a_second_handle_sees_the_claim(self, store: EventStore, tmp_path: Path) -> None:
        """Capability reopen_store: a claim holds for every handle on the same storage."""
        self.require("reopen_store")
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
        store.append("a", [_started("a", "council-a")], 0)
        store.append("b", [_started("b", "council-b"), make_event("b", 1)], 0)
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
        self, store: EventStore, run_id: str, after: int, count: int, during: Callable[[], Any]
    ) -> list[RunEventDoc]:
        """Subscribe, call ``during()`` once caught up, and collect ``count`` events."""
        backlog = len(store.read(run_id, after))

        async def scenario() -> list[RunEventDoc]:
            loop = asyncio.get_running_loop()
            received: list[RunEventDoc] = []
            stream = store.subscribe(run_id, after)
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
        assert _sequences(received) == list(range(6))
        assert received == store.read("r1")

    def test_subscribe_after_skips_what_the_reader_has(self, store: EventStore) -> None:
        """``subscribe(after=n)`` starts at ``n + 1``."""
        store.append("r1", make_events("r1", 0, 4), 0)
        received = self._follow(
            store, "r1", 2, 3, lambda: store.append("r1", make_events("r1", 4, 2), 4)
        )
        assert _sequences(received) == [3, 4, 5]

    def test_subscribe_to_a_run_that_does_not_exist_yet(self, store: EventStore) -> None:
        """A subscriber may wait for a run that has no events yet."""
        received = self._follow(
            store, "r1", -1, 2, lambda: store.append("r1", make_events("r1", 0, 2), 0)
        )
        assert _sequences(received) == [0, 1]

    def test_subscribe_sees_appends_from_another_thread(self, store: EventStore) -> None:
        """Appends from a worker thread reach a subscriber on the event loop."""
        worker = threading.Thread(target=store.append, args=("r1", make_events("r1", 1, 2), 1))
        store.append("r1", make_events("r1", 0, 1), 0)
        received = self._follow(store, "r1", -1, 3, worker.start)
        worker.join()
        assert _sequences(received) == [0, 1, 2]

    # -- capabilities ----------------------------------------------------------------------

    def test_close_and_reopen_keeps_every_run(self, store: EventStore, tmp_path: Path) -> None:
        """Capability reopen_store: closing and reopening keeps every run and event."""
        self.require("reopen_store")
        store.append("a", [_started("a", "council-a"), make_event("a", 1)], 0)
        store.append("b", [_started("b", "council-b")], 0)
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

    def test_two_handles_never_interleave(self, store: EventStore, tmp_path: Path) -> None:
        """Capability reopen_store: two handles on one storage never interleave a log."""
        self.require("reopen_store")
        other = self.reopen_store(tmp_path)
        try:
            store.append("r1", make_events("r1", 0, 2), 0)
            with pytest.raises(StoreConflict):
                other.append("r1", make_events("r1", 0, 3, type="node.failed"), 0)
            other.append("r1", make_events("r1", 2, 1), other.last_sequence("r1") + 1)
            assert other.read("r1") == store.read("r1")
            assert _sequences(store.read("r1")) == [0, 1, 2]
            assert "node.failed" not in {e["type"] for e in store.read("r1")}
        finally:
            other.close()

    def test_subscribe_follows_another_handle(self, store: EventStore, tmp_path: Path) -> None:
        """Capability reopen_store: a subscriber sees another handle's appends live."""
        self.require("reopen_store")
        other = self.reopen_store(tmp_path)
        try:
            received = self._follow(
                store, "r1", -1, 2, lambda: other.append("r1", make_events("r1", 0, 2), 0)
            )
        finally:
            other.close()
        assert _sequences(received) == [0, 1]

    def _corrupt(self, store: EventStore, tmp_path: Path, sequence: int, body: str) -> None:
        self.require("write_raw_record")
        store.append("r1", make_events("r1", 0, sequence), 0)
        self.write_raw_record(tmp_path, "r1", sequence, body)

    def _assert_rejected(self, store: EventStore, sequence: int, *words: str) -> None:
        with pytest.raises(EventInvalid) as caught:
            store.read("r1")
        message = str(caught.value)
        assert caught.value.code == "EVENT_INVALID"
        for word in ("r1", f"#{sequence}", *words):
            assert word in message, f"{word!r} missing from: {message}"
        assert _sequences(store.read("r1", after=sequence)) == []

    def test_record_that_is_not_json_is_rejected(self, store: EventStore, tmp_path: Path) -> None:
        """Capability write_raw_record: a record that is not JSON raises EventInvalid."""
        self._corrupt(store, tmp_path, 2, '{"eventId": "evt.r1.0000000002", "runId": ')
        self._assert_rejected(store, 2, "JSON")

    def test_record_that_is_not_an_event_is_rejected(
        self, store: EventStore, tmp_path: Path
    ) -> None:
        """Capability write_raw_record: a record that is not a RunEventDoc raises EventInvalid."""
        event: dict[str, Any] = dict(make_event("r1", 1))
        del event["type"]
        self._corrupt(store, tmp_path, 1, json.dumps(event))
        self._assert_rejected(store, 1, "type")

    def test_unsupported_schema_version_is_rejected(
        self, store: EventStore, tmp_path: Path
    ) -> None:
        """Capability write_raw_record: an unknown schemaVersion raises EventInvalid."""
        event = make_event("r1", 3, schemaVersion=99)
        self._corrupt(store, tmp_path, 3, json.dumps(event))
        self._assert_rejected(store, 3, "schemaVersion", "99")
