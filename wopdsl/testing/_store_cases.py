"""Private: the append, read and concurrency cases of the store contract.

:mod:`wopdsl.testing.store_conformance` runs them; the events they use are built here.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import pytest

from wopdsl.errors import EventInvalid, StoreConflict
from wopdsl.protocol.envelope import RunEventDoc
from wopdsl.store.base import EventStore

__all__ = ["AppendAndRead", "make_event", "make_events", "sequences", "started"]

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


def started(run_id: str, workflow_id: str) -> RunEventDoc:
    payload = {"workflowId": workflow_id, "inputs": {"task": "t"}, "metadata": {}}
    return make_event(run_id, 0, "run.started", payload)


def sequences(events: list[RunEventDoc]) -> list[int]:
    return [event["sequence"] for event in events]


class AppendAndRead:
    """Append and read, atomic batches and optimistic concurrency.

    Its tests take the ``store`` fixture that
    :class:`~wopdsl.testing.store_conformance.StoreConformance` provides.
    """

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
        events = [started("r1", "council"), make_event("r1", 1, "node.started", payload)]
        events.append(make_event("r1", 2, "node.completed", nodeId="n", causationId="c" * 16))
        store.append("r1", events, 0)
        assert store.read("r1") == events
        assert store.last_sequence("r1") == 2
        assert store.exists("r1")

    def test_read_after(self, store: EventStore) -> None:
        """``read(after=n)`` returns exactly the events with ``sequence > n``."""
        store.append("r1", make_events("r1", 0, 5), 0)
        assert sequences(store.read("r1", after=-1)) == [0, 1, 2, 3, 4]
        assert sequences(store.read("r1", after=1)) == [2, 3, 4]
        assert store.read("r1", after=4) == []
        assert store.read("r1", after=99) == []
        assert sequences(store.read("r1", after=-7)) == [0, 1, 2, 3, 4]

    def test_appends_accumulate_in_order(self, store: EventStore) -> None:
        """Successive appends extend the log in sequence order."""
        for start in range(0, 12, 3):
            store.append("r1", make_events("r1", start, 3), start)
        assert sequences(store.read("r1")) == list(range(12))

    def test_long_log_reads_back_in_order(self, store: EventStore) -> None:
        """A long log reads back whole and in order, also from the middle."""
        for start in range(0, 1500, 500):
            store.append("r1", make_events("r1", start, 500), start)
        assert sequences(store.read("r1")) == list(range(1500))
        assert sequences(store.read("r1", after=1399)) == list(range(1400, 1500))

    def test_runs_are_independent(self, store: EventStore) -> None:
        """Each run has its own sequence, starting at 0."""
        store.append("a", make_events("a", 0, 2), 0)
        store.append("b", make_events("b", 0, 1), 0)
        store.append("a", make_events("a", 2, 1), 2)
        assert sequences(store.read("a")) == [0, 1, 2]
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
        assert sequences(store.read("r1")) == [0, 1]

    @pytest.mark.parametrize("value", [
        float("nan"), float("inf"), -float("inf"), {1, 2}, object(), [datetime(2024, 1, 1)],
    ], ids=["nan", "infinity", "minus-infinity", "set", "object", "datetime"])
    def test_a_value_json_cannot_hold_is_refused(self, store: EventStore, value: Any) -> None:
        """NaN, infinities, sets, objects and datetimes raise, and nothing is saved."""
        store.append("r1", make_events("r1", 0, 1), 0)
        with pytest.raises((EventInvalid, TypeError, ValueError)):
            store.append("r1", [make_event("r1", 1, payload={"nodeId": "n", "v": value})], 1)
        assert store.last_sequence("r1") == 0
        assert sequences(store.read("r1")) == [0]

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
