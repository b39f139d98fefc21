"""A custom event store in a few lines, checked by wopdsl's store conformance suite.

Run it with ``python examples/custom_store.py`` (or ``python -m pytest examples/custom_store.py``).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from wopdsl.errors import StoreConflict
from wopdsl.protocol.envelope import RunEventDoc
from wopdsl.store import EventStore, RunInfo
from wopdsl.testing.store_conformance import StoreConformance


class DictStore(EventStore):
    """Keeps each run's events as JSON text in a dict; ``subscribe`` polls (the base default)."""

    def __init__(self) -> None:
        self._logs: dict[str, list[str]] = {}

    def append(self, run_id: str, events: Sequence[RunEventDoc], expected_sequence: int) -> None:
        log = self._logs.get(run_id, [])
        if len(log) != expected_sequence:
            raise StoreConflict(f"run {run_id} holds {len(log)} events, not {expected_sequence}")
        self.check_expected(run_id, events, expected_sequence)
        # Encode all before storing any; NaN and infinities are not JSON: refuse them.
        texts = [json.dumps(event, allow_nan=False) for event in events]
        if texts:
            self._logs.setdefault(run_id, log).extend(texts)

    def read(self, run_id: str, after: int = -1) -> list[RunEventDoc]:
        return [json.loads(text) for text in self._logs.get(run_id, [])[max(after + 1, 0) :]]

    def runs(self) -> list[RunInfo]:
        infos = []
        for run_id, log in self._logs.items():
            first, last = json.loads(log[0]), json.loads(log[-1])
            workflow_id = str(first["payload"].get("workflowId", ""))
            infos.append(
                RunInfo(run_id, workflow_id, first["timestamp"], last["sequence"], last["type"])
            )
        return infos

    def last_sequence(self, run_id: str) -> int:
        return len(self._logs.get(run_id, [])) - 1


class TestDictStore(StoreConformance):
    def make_store(self, tmp_path: Path) -> EventStore:
        return DictStore()


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
