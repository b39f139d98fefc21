"""Private: the events a store object just committed, kept for its own subscribers.

A run followed in the process that executes it (``wop run`` printing its transcript, a host
streaming the runs it drives) would otherwise read back from the file every event the
process has just written: a query, its rows, and a decode and check of each record.
:class:`RecentCommits` keeps the bodies of the latest events this store object committed,
per run and only while the run has a subscriber on this object, so that a subscriber behind
by no more than that takes them from here: the same bytes a read returns, decoded the same
way, without the query. Anything else (events another connection or process wrote, a
subscriber further behind) is read from the log as before.

The window of a run is always a contiguous stretch of its log, exactly as committed: a
commit that does not continue it (another writer appended in between) starts it again.

:class:`CommitObservers` goes one step further for a view that only reads (``wop run``'s
printer, ``EventStore.observe_commits``): it is handed the committed events themselves,
with nothing kept, read or decoded.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Sequence
from typing import Final

from wopdsl.protocol.codemap import v1_type
from wopdsl.protocol.envelope import RunEventDoc

__all__ = ["CommitObservers", "Following", "RecentCommits", "follow_kept"]

_LOG = logging.getLogger("wopdsl.store")

WINDOW_EVENTS: Final = 256
"""At most this many events are kept per run; a subscriber further behind reads the log."""
WINDOW_CHARS: Final = 1 << 20
"""At most this many characters of bodies are kept per run (a run's first event carries its
declaration; a batch larger than this is not kept at all)."""


TRIM_AT: Final = 32
"""What every follower has passed is dropped once a run keeps more than this many events."""


class Following:
    """One subscriber of a run on this store object: where it is (its last sequence)."""

    __slots__ = ("at", "run_id")

    def __init__(self, run_id: str, at: int) -> None:
        self.run_id = run_id
        self.at = at


Row = tuple[str, int, str, str]
"""A committed event as the store inserted it: ``(run_id, sequence, stored type, body)``."""


class _Window:
    """A contiguous stretch of a run's committed rows, and who follows the run."""

    __slots__ = ("chars", "first", "followers", "rows")

    def __init__(self) -> None:
        self.first = -1
        """The sequence of ``rows[0]`` (or of the next commit, once what was kept is
        passed); ``-1`` until a commit is kept."""
        self.rows: list[Row] = []
        self.chars = 0
        """The characters of the kept bodies."""
        self.followers: list[Following] = []


class RecentCommits:
    """Per run with subscribers here: the bodies of the latest events this object committed."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runs: dict[str, _Window] = {}

    def follow(self, run_id: str, after: int) -> Following:
        """Register a subscriber of ``run_id`` that has read up to ``after``."""
        following = Following(run_id, after)
        with self._lock:
            window = self._runs.get(run_id)
            if window is None:
                window = self._runs[run_id] = _Window()
            window.followers.append(following)
        return following

    def unfollow(self, following: Following) -> None:
        """The subscriber stopped; a run nobody follows here keeps nothing."""
        with self._lock:
            window = self._runs.get(following.run_id)
            if window is None:
                return
            window.followers = [f for f in window.followers if f is not following]
            if not window.followers:
                del self._runs[following.run_id]

    def keep(self, run_id: str, first: int, rows: Sequence[Row]) -> None:
        """Keep the rows of events ``first …`` of ``run_id``, just committed.

        ``rows`` as inserted: ``(run_id, sequence, type, body)``, in sequence order. Called
        under the store's write lock, right after the commit, so calls come in the order of
        the commits. Does nothing for a run nobody follows here.
        """
        if run_id not in self._runs:  # Unlocked peek: the common case of no subscriber.
            return
        chars = sum([len(row[3]) for row in rows])
        with self._lock:
            window = self._runs.get(run_id)
            if window is None:
                return
            if window.first < 0 or window.first + len(window.rows) != first:
                # Not a continuation (another writer appended in between, or nothing kept
                # yet): start again from this commit.
                window.first, window.rows, window.chars = first, [], 0
            window.rows.extend(rows)
            window.chars += chars
            if len(window.rows) > TRIM_AT or window.chars > WINDOW_CHARS:
                _trim(window)

    def take(self, following: Following) -> list[Row] | None:
        """The kept rows of the events after ``following.at``.

        ``None`` when the window does not reach back to the event after it (nothing kept, or
        the subscriber is further behind): the log has to be read. An empty list when the
        subscriber has every event this object committed to the run so far.
        """
        window = self._runs.get(following.run_id)
        if window is None or window.first < 0:
            return None
        if following.at + 1 == window.first + len(window.rows):
            # Nothing new (checked unlocked: if a commit is being kept meanwhile, the
            # subscriber's wait finds it in the log and comes back).
            return []
        with self._lock:
            window = self._runs.get(following.run_id)
            if window is None or window.first < 0:
                return None
            start = following.at + 1 - window.first
            if start < 0 or start > len(window.rows):
                return None
            return window.rows[start:]


async def follow_kept(recent: RecentCommits, run_id: str, after: int, *,
                      read: Callable[[str, int], list[RunEventDoc]],
                      decode: Callable[[str], RunEventDoc],
                      wait: Callable[[str, int], Awaitable[None]],
                      types: Collection[str] | None = None) -> AsyncIterator[RunEventDoc]:
    """A store's ``subscribe``: what ``recent`` keeps, else what ``read`` reads.

    Args:
        recent: The store object's latest commits.
        run_id: The run followed.
        after: The last sequence the subscriber has.
        read: The store's ``read`` (checked records of the log).
        decode: Decodes a kept body as ``read`` decodes the same record.
        wait: The store's ``wait_for_change``: returns when the run may have more events,
            at once when its log already has (so a commit by another writer after the last
            read is never missed).
        types: Only events of these (v1) types are yielded; a kept body of another type is
            passed over undecoded.
    """
    following = recent.follow(run_id, after)
    woke = False
    """Whether the last wait returned: any writer may have appended, so the log is read."""
    try:
        while True:
            kept = recent.take(following)
            if kept:
                woke = False
                for _, sequence, stored, body in kept:
                    following.at = sequence
                    if types is None or v1_type(stored) in types:
                        yield decode(body)
                continue
            if kept is None or woke:  # Not all kept here, or maybe another writer's events.
                batch = read(run_id, following.at)
                if batch:
                    woke = False
                    for event in batch:
                        following.at = event["sequence"]
                        if types is None or event["type"] in types:
                            yield event
                    continue
            # Every event kept here is out; ``wait`` returns at once if the log has more.
            await wait(run_id, following.at)
            woke = True
    finally:
        recent.unfollow(following)


Observer = Callable[[Sequence[RunEventDoc]], None]
"""Called with the events of a commit (see :meth:`EventStore.observe_commits`)."""


class CommitObservers:
    """Per run: who is told of each commit this store object makes, with its events in place."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.runs: dict[str, list[Observer]] = {}
        """Per run, its observers (read unlocked on every append: a dict lookup)."""

    def add(self, run_id: str, observer: Observer) -> Callable[[], None]:
        """Register ``observer`` for ``run_id``; return what unregisters it."""
        with self._lock:
            self.runs[run_id] = [*self.runs.get(run_id, []), observer]
        return lambda: self.remove(run_id, observer)

    def remove(self, run_id: str, observer: Observer) -> None:
        """Unregister ``observer`` (nothing happens when it is not registered)."""
        with self._lock:
            left = [o for o in self.runs.get(run_id, []) if o is not observer]
            if left:
                self.runs[run_id] = left
            else:
                self.runs.pop(run_id, None)

    def tell(self, run_id: str, observers: list[Observer],
             events: Sequence[RunEventDoc]) -> None:
        """Call each observer with ``events``, just committed; one that raises is dropped.

        The events are durable: an observer's failure cannot undo the commit, so it never
        reaches the writer. The observer is unregistered (its owner reads the log instead).
        """
        for observer in observers:
            try:
                observer(events)
            except Exception as exc:
                self.remove(run_id, observer)
                _LOG.warning("a commit observer of run %s failed and was dropped: %s: %s",
                             run_id, type(exc).__name__, exc)


def _trim(window: _Window) -> None:
    """Drop what every follower has passed, then the oldest beyond the window's bounds."""
    rows = window.rows
    passed = min(f.at for f in window.followers) + 1 - window.first
    drop = min(max(passed, len(rows) - WINDOW_EVENTS, 0), len(rows))
    chars = window.chars - sum([len(row[3]) for row in rows[:drop]])
    while chars > WINDOW_CHARS and drop < len(rows):
        chars -= len(rows[drop][3])
        drop += 1
    if drop:
        del rows[:drop]
        window.first += drop
    window.chars = chars
