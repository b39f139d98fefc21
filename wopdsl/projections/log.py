"""A run's events as a sequence that is also callable: ``run.events`` (see :class:`EventLog`)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import overload

from wopdsl.protocol.envelope import RunEventDoc
from wopdsl.store.base import EventStore

__all__ = ["EventLog"]


class EventLog(Sequence[RunEventDoc]):
    """A run's events: a sequence (``len``, indexing, ``==``) that is also callable.

    ``run.events`` compares equal to a list of event dicts (and syrupy snapshots it), while
    ``async for event in run.events(after=-1)`` catches up and then follows live.
    """

    def __init__(self, store: EventStore, run_id: str,
                 follow: Callable[[int], AsyncIterator[RunEventDoc]]) -> None:
        self._store = store
        self._run_id = run_id
        self._follow = follow

    def _all(self) -> list[RunEventDoc]:
        return self._store.read(self._run_id)

    @overload
    def __getitem__(self, index: int) -> RunEventDoc: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[RunEventDoc]: ...
    def __getitem__(self, index: int | slice) -> RunEventDoc | Sequence[RunEventDoc]:
        return self._all()[index]

    def __len__(self) -> int:
        return self._store.last_sequence(self._run_id) + 1

    def __iter__(self) -> Iterator[RunEventDoc]:
        return iter(self._all())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, EventLog):
            return self._all() == other._all()
        if isinstance(other, list | tuple):
            return self._all() == list(other)
        return NotImplemented

    def __hash__(self) -> int:  # pragma: no cover - a live view is not hashable by value.
        return id(self)

    def __repr__(self) -> str:
        return f"EventLog(run={self._run_id!r}, events={len(self)})"

    def __call__(self, after: int = -1) -> AsyncIterator[RunEventDoc]:
        """Yield events after ``after``: catch up, then follow live until the run stops."""
        return self._follow(after)

    def to_list(self) -> list[RunEventDoc]:
        """Return the events as a plain list."""
        return self._all()
