"""The event store contract: one small ABC every backend implements."""

from __future__ import annotations

import contextlib
import threading
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from wopdsl.errors import RunBusy, RunNotFound, StoreConflict, StoreError
from wopdsl.protocol.codemap import ERA_V1, era_of
from wopdsl.protocol.envelope import RunEventDoc

__all__ = ["Answer", "EventStore", "RunInfo", "require_run", "run_started_at"]

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class RunInfo:
    """A run as the store lists it (no fold needed)."""

    run_id: str
    """The run id."""
    workflow_id: str
    """The council id (``run.started.payload.workflowId``)."""
    started_at: str
    """When the run began: its first event's timestamp; for a fork, when it was forked
    (:func:`run_started_at`)."""
    last_sequence: int
    """Sequence of the last event."""
    last_type: str
    """Type of the last event (``run.completed``, ``node.started``, ...)."""


@dataclass(frozen=True, slots=True)
class Answer:
    """A host's answer to a request sent with an ``Idempotency-Key``, kept for its retries."""

    scope: str
    """Whose key it is: a digest of the caller's principal and the key (the record's id)."""
    fingerprint: str
    """A digest of what the request asked for (its path, its caller and its body's meaning)."""
    status: int
    """The HTTP status answered."""
    body: dict[str, Any]
    """The JSON object answered."""
    created_at: float
    """When it was answered (seconds since the epoch)."""


def run_started_at(first: RunEventDoc) -> str:
    """When a run began, read from its first event.

    A fork's ``forkedFrom.forkedAt`` (its copied events keep the source's times), else the
    event's ``timestamp``.
    """
    metadata = first["payload"].get("metadata")
    forked = metadata.get("forkedFrom") if isinstance(metadata, dict) else None
    at = forked.get("forkedAt") if isinstance(forked, dict) else None
    return at if isinstance(at, str) else first["timestamp"]


class EventStore(ABC):
    """An append-only, per-run event log with optimistic concurrency.

    Backends implement four methods: :meth:`append`, :meth:`read`, :meth:`runs` and
    :meth:`last_sequence`. :meth:`subscribe` has a polling default that backends may improve;
    durable backends also keep idempotency answers (:meth:`remember_answer`,
    :meth:`recall_answer`, :meth:`forget_answers`, :meth:`append_answered`), which by
    default live in the object.
    The contract ships as a reusable test suite: ``wopdsl.testing.store_conformance``.
    """

    poll_interval: float = 0.05
    """Seconds between polls in the default :meth:`subscribe`."""

    blocking: bool = False
    """Whether calls may wait on a network (PostgreSQL): hosts and engines then make them on
    worker threads, never on the event loop. Local stores (SQLite, memory) answer in
    microseconds and are called in place."""

    reconnect_s: float = 0.0
    """How long a driver keeps retrying a run whose store became unreachable
    (:class:`~wopdsl.errors.StoreUnavailable`) before it gives up (``0``: it does not retry)."""

    @abstractmethod
    def append(self, run_id: str, events: Sequence[RunEventDoc], expected_sequence: int) -> None:
        """Append ``events`` atomically: all or none.

        Args:
            run_id: The run.
            events: Events whose ``sequence`` values run from ``expected_sequence`` upwards.
            expected_sequence: The sequence the first event takes: the run's current length.

        Raises:
            StoreConflict: another writer appended first; nothing was written.
        """

    @abstractmethod
    def read(self, run_id: str, after: int = -1) -> list[RunEventDoc]:
        """Return the run's events with ``sequence > after``, in sequence order."""

    def _era(self, run_id: str) -> int:
        """The run's event-log era, from its stored ``run.started`` (cached: it never changes).

        For the SQL stores' writer rule (:func:`wopdsl.store._codec.as_stored`).
        """
        eras: dict[str, int] = self.__dict__.setdefault("_eras", {})
        era = eras.get(run_id)
        if era is None:
            first = self.read(run_id)[:1]
            era = era_of(first[0]["payload"]) if first and first[0]["type"] == "run.started" \
                else ERA_V1
            if len(eras) >= 4096:
                eras.clear()
            eras[run_id] = era
        return era

    @abstractmethod
    def runs(self) -> list[RunInfo]:
        """List every run in the store, oldest first."""

    @abstractmethod
    def last_sequence(self, run_id: str) -> int:
        """Return the run's last sequence, or -1 when it has no events."""

    def exists(self, run_id: str) -> bool:
        """Return whether the run has any event."""
        return self.last_sequence(run_id) >= 0

    def close(self) -> None:  # noqa: B027 - optional hook, a no-op by default.
        """Release resources (connections, files)."""

    # -- idempotency answers: kept in this object by default; durable stores override ------

    def remember_answer(self, answer: Answer) -> Answer:
        """Keep ``answer`` unless its scope already has one; return the one kept (first wins)."""
        with _ANSWERS_LOCK:
            kept: dict[str, Answer] = self.__dict__.setdefault("_answers", {})
            return kept.setdefault(answer.scope, answer)

    def append_answered(self, run_id: str, events: Sequence[RunEventDoc],
                        expected_sequence: int, answer: Answer) -> None:
        """:meth:`append`, keeping ``answer`` (as :meth:`remember_answer`) with the events.

        Durable stores do both in one transaction, so an answer is kept exactly when its
        events are: a retry after a crash finds the answer, or finds nothing appended. This
        default does one after the other (a crash between them loses the answer).
        """
        self.append(run_id, events, expected_sequence)
        self.remember_answer(answer)

    def recall_answer(self, scope: str) -> Answer | None:
        """Return the answer kept for ``scope``, if any."""
        with _ANSWERS_LOCK:
            kept: dict[str, Answer] = self.__dict__.get("_answers", {})
            return kept.get(scope)

    def forget_answers(self, before: float) -> int:
        """Drop the answers created before ``before`` (epoch seconds); return how many."""
        with _ANSWERS_LOCK:
            kept: dict[str, Answer] = self.__dict__.get("_answers", {})
            old = [scope for scope, answer in kept.items() if answer.created_at < before]
            for scope in old:
                del kept[scope]
            return len(old)
    # -- private records: what a run keeps beside its log (tool arguments and results) ----

    def save_private(self, run_id: str, entries: Mapping[str, str]) -> None:
        """Keep text records of a run beside its log, durably, before returning.

        What the log must not carry but a resumed run needs: the arguments and results of a
        member's tool calls while its profile's ``observability`` is ``hashed`` (the events
        then carry hashes only). Keys are unique per run; saving a key again replaces it.
        Backends without private records leave this unimplemented (tools then cannot run).

        Raises:
            StoreError: this store keeps no private records, or writing failed.
        """
        raise StoreError(f"{type(self).__name__} keeps no private records, which members "
                         "with tools need (their calls' arguments and results)",
                         hint="use the SQLite, PostgreSQL or memory store, or implement "
                              "save_private/read_private")

    def read_private(self, run_id: str, prefix: str = "") -> dict[str, str]:
        """Return the run's private records whose key starts with ``prefix``.

        Raises:
            StoreError: this store keeps no private records, or reading failed.
        """
        self.save_private(run_id, {})  # raises for stores without private records
        return {}

    @contextlib.contextmanager
    def claim(self, run_id: str) -> Iterator[None]:
        """Hold the right to execute ``run_id`` while the block runs: one driver per run.

        An engine claims its run while it drives it, so resuming a run that is still
        executing is refused instead of running its in-flight turn a second time. The
        default claim holds within this process (per :meth:`claim_key`); stores shared by
        several processes also claim across them (``SqliteStore`` does).

        Raises:
            StoreConflict: another driver holds the run.
        """
        key = (self.claim_key(), run_id)
        with _CLAIMS_LOCK:
            if key in _CLAIMED:
                raise busy(run_id, "another driver in this process")
            _CLAIMED.add(key)
        try:
            yield
        finally:
            with _CLAIMS_LOCK:
                _CLAIMED.discard(key)

    def claim_key(self) -> object:
        """What identifies this store's storage for in-process claims (default: the object)."""
        return self

    def driven(self, run_id: str) -> bool | None:
        """Whether a driver holds ``run_id``'s claim (:meth:`claim`) now; ``None``: can't tell.

        ``wop runs`` asks it of each run whose log says ``running``: one that nobody drives
        stopped with its process (Ctrl-C, a crash) and waits for ``wop resume``. The default
        sees this process's claims only, so it answers ``True`` or ``None``; a store whose
        claims hold across processes answers for every holder (``SqliteStore``: the locks
        on its claims file; ``PostgresStore``: the advisory locks of every session).
        """
        with _CLAIMS_LOCK:
            return True if (self.claim_key(), run_id) in _CLAIMED else None

    async def call(self, method: Callable[..., _T], *args: Any) -> _T:
        """``method(*args)``: in place, or on a worker thread for a :attr:`blocking` store."""
        if not self.blocking:
            return method(*args)
        import asyncio  # Here, not at import: asyncio is loaded once a loop runs.

        return await asyncio.to_thread(method, *args)

    async def subscribe(self, run_id: str, after: int = -1, *,
                        types: Collection[str] | None = None) -> AsyncIterator[RunEventDoc]:
        """Yield the run's events after ``after``: catch up first, then follow live.

        Never ends by itself; stop iterating (or cancel the task) when done. ``types``: only
        events of these (v1) types are yielded; the others are passed over.
        """
        cursor = after
        while True:
            batch = await self.call(self.read, run_id, cursor)
            for event in batch:
                cursor = event["sequence"]
                if types is None or event["type"] in types:
                    yield event
            if not batch:
                await self.wait_for_change(run_id, cursor)

    def observe_commits(self, run_id: str, observer: Callable[[Sequence[RunEventDoc]], None]
                        ) -> Callable[[], None] | None:
        """Call ``observer`` with the events of each commit this store object makes to the run.

        For a view in the process that executes the run (``wop run``'s transcript): it gets
        the events the engine wrote as they become durable, with no read, copy or decode.
        ``observer`` is called on the appending thread right after the commit, with the
        objects passed to :meth:`append` (read them, never change them: the engine's state
        shares them); one that raises is dropped, never failing the append. Only this
        object's commits are told: events other writers commit reach a view through
        :meth:`read` / :meth:`subscribe`, so a view still follows the log (and takes a told
        batch only when it continues what it has).

        Returns:
            What unregisters ``observer``; ``None`` when this store does not tell (the
            default): follow the log.
        """
        return None

    async def wait_for_change(self, run_id: str, after: int) -> None:
        """Wait until the run may have events after ``after`` (default: one poll interval)."""
        import asyncio  # Here, not at import: asyncio is loaded once a loop runs.

        await asyncio.sleep(self.poll_interval)

    def check_expected(self, run_id: str, events: Sequence[RunEventDoc], expected: int) -> None:
        """Check that ``events`` carry contiguous sequences from ``expected`` (helper)."""
        for offset, event in enumerate(events):
            if event["sequence"] != expected + offset or event["runId"] != run_id:
                raise StoreConflict(
                    f"run {run_id}: event #{offset} has sequence {event['sequence']} "
                    f"(run {event['runId']}), expected {expected + offset}",
                    hint="build events from the run's current last sequence",
                )


_CLAIMED: set[tuple[object, str]] = set()
"""(storage, run id) pairs a driver in this process holds (see EventStore.claim)."""
_CLAIMS_LOCK = threading.Lock()
_ANSWERS_LOCK = threading.RLock()
"""Guards the answers kept in store objects (re-entrant: MemoryStore.append_answered)."""


def append_conflict(run_id: str, expected: int, current: int | None) -> StoreConflict:
    """The error for an append at ``expected`` to a run whose last event is ``current``.

    ``current`` is ``None`` when the store cannot say (a key clash it did not expect).
    """
    held = "more events" if current is None else f"{current + 1} events"
    return StoreConflict(
        f"run {run_id}: expected to append at sequence {expected}, but the log holds {held}",
        hint="another writer is executing this run; attach to it instead of resuming",
    )


def busy(run_id: str, holder: str) -> RunBusy:
    """The error for a run that ``holder`` is executing."""
    return RunBusy(
        f"run {run_id} is executing in {holder}; it is not resumed twice",
        hint="attach to it instead (wop tui RUN, wop events RUN --follow, wopdsl.attach), "
             "or resume it once that process has stopped",
    )


def require_run(store: EventStore, run_id: str, *, where: str = "the store",
                runs: str = "wop runs") -> EventStore:
    """Return ``store`` after checking that it holds ``run_id``.

    Raises:
        RunNotFound: it does not (the message names ``where``; the hint, ``runs``).
    """
    if not store.exists(run_id):
        raise RunNotFound.of(run_id, where=where, runs=runs)
    return store
