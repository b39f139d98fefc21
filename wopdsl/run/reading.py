"""Reading a run: its folded state and every view of it (status, transcript, decisions …)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from wopdsl._lazy import load_entry_point
from wopdsl.compile.graph import Compiles
from wopdsl.engine import Engine
from wopdsl.model.turns import Message
from wopdsl.presence import Presence
from wopdsl.projections.log import EventLog
from wopdsl.projections.metrics import RunMetrics, decisions_of, metrics_of
from wopdsl.projections.notebook import run_html, run_markdown
from wopdsl.projections.trace import export_configured
from wopdsl.projections.transcript import render_transcript
from wopdsl.protocol.envelope import RunEventDoc
from wopdsl.state import TERMINAL, CouncilState, RunStatus, build_snapshot, tags_of
from wopdsl.store import EventStore

if TYPE_CHECKING:
    from wopdsl.projections.diff import RunDiff
    from wopdsl.projections.trace.live import LiveTrace

__all__ = ["SHOW_ENTRY_POINTS", "STOPPED", "RunReader"]

STOPPED = frozenset({*TERMINAL, "waiting-input", "paused"})
"""Statuses in which nothing is appended until someone acts."""

SHOW_ENTRY_POINTS = "wopdsl.show"
"""The entry-point group :meth:`Run.show` finds its live view in (``pyproject.toml``)."""


class RunReader:
    """What a :class:`~wopdsl.Run` reads: the fold of its log and the views of it."""

    def __init__(self, store: EventStore, run_id: str, *, engine: Engine | None = None,
                 council: Compiles | None = None) -> None:
        self.store = store
        self.run_id = run_id
        self.council = council
        self._engine = engine
        self._state = CouncilState()
        self._task: asyncio.Task[RunStatus] | None = None
        self._landing: asyncio.Future[None] | None = None
        """Set while a pause or cancel stops this handle's driving task and lands."""
        self._started: asyncio.Event | None = None
        # Live tracing exports what happens after this (earlier spans are another's to send).
        self._traced = store.last_sequence(run_id) if export_configured() else -1
        self._live: LiveTrace | None = None  # one for all drives: no span is sent twice
        self._presence: Presence | None = None

    @property
    def events(self) -> EventLog:
        """The run's events (a sequence, and ``run.events(after)`` to follow live)."""
        # Built on each access: a log kept in the run would hold the run (through
        # ``_follow``) in a reference cycle, so a finished run's state would wait for the
        # cyclic GC instead of being freed with the run.
        return EventLog(self.store, self.run_id, self._follow)

    @property
    def state(self) -> CouncilState:
        """The folded state, caught up with the log (read-only; on a loop, :meth:`astate`)."""
        engine = self._engine
        if engine is not None:
            # The engine driving this run here folds every event it appends: when nothing
            # else was appended since (and none of its own is unsaved), its state is the
            # fold of the log. Read through the engine each time: it re-folds into a new
            # state object when an append fails.
            shared = engine.state
            if engine.settled and shared.last_sequence == self.store.last_sequence(self.run_id):
                return shared
        self._state.apply_all(self.store.read(self.run_id, self._state.last_sequence))
        return self._state

    @property
    def status(self) -> RunStatus:
        """The run status (``pending`` … ``waiting-input`` … ``completed``/``failed``)."""
        return self.state.status

    async def astate(self) -> CouncilState:
        """:attr:`state`, read on a worker thread for a blocking store (PostgreSQL)."""
        store, engine, state = self.store, self._engine, self._state
        if not store.blocking:
            return self.state
        if engine is not None and engine.settled:  # As in ``state``.
            shared = engine.state
            if shared.last_sequence == await store.call(store.last_sequence, self.run_id) \
                    and engine.settled and shared is engine.state:
                return shared
        events = await store.call(store.read, self.run_id, state.last_sequence)
        # Another reader of this handle may have folded some of them meanwhile.
        state.apply_all([e for e in events if e["sequence"] > state.last_sequence])
        return state

    async def astatus(self) -> RunStatus:
        """:attr:`status`, never holding the event loop on a blocking store (PostgreSQL)."""
        return (await self.astate()).status

    @property
    def result(self) -> dict[str, Any] | None:
        """The council result (``{task, agents}``) once completed, else ``None``."""
        state = self.state
        return state.outputs if state.terminal == "completed" else None

    @property
    def error(self) -> dict[str, Any] | None:
        """``{code, message}`` when the run failed."""
        return self.state.error

    @property
    def messages(self) -> list[Message]:
        """Every saved message, in saved order."""
        return self.state.transcript_messages()

    @property
    def transcript(self) -> str:
        """The stable plain-text transcript (what snapshot tests lock)."""
        return render_transcript(self.state)

    @property
    def decisions(self) -> list[dict[str, Any]]:
        """The council's decisions (DESIGN.md §22), as the operator sees them.

        Each ``{id, room, question, open, voters, quorum, votes, tally, changed}``, plus
        ``outcome`` and ``dissent`` (voters whose last vote lost, with their reasons) once
        closed.
        """
        return decisions_of(self.state)

    def metrics(self) -> RunMetrics:
        """How the council deliberated: per member and per decision (``wop metrics``)."""
        return metrics_of(self.store.read(self.run_id))

    @property
    def tags(self) -> list[str]:
        """The run's tags (``Council.start(tags=…)``, an HTTP client's ``tags``)."""
        return tags_of(self.state.metadata)

    @property
    def presence(self) -> Presence:
        """Who watches and who types in the run's rooms (RFC 0110 channel presence).

        Shared with every front end on the same store (see :mod:`wopdsl.presence`); never
        part of the run's log.
        """
        if self._presence is None:
            self._presence = Presence(self.store, self.run_id, lambda: self.state)
        return self._presence

    @property
    def waiting_for(self) -> list[str]:
        """Human members whose turn is requested."""
        return self.state.waiting_for

    def snapshot(self) -> dict[str, Any]:
        """Return the OpenWOP v1 ``RunSnapshot`` of this run."""
        return build_snapshot(self.state)

    def diff(self, other: RunReader) -> RunDiff:
        """Compare with ``other`` (any store): transcripts, speaking order, work, outcome.

        The result prints as ``wop diff`` does, renders as HTML in a notebook and has
        ``equal`` and ``to_json()``.
        """
        from wopdsl.projections.diff import diff_runs

        return diff_runs(self.store.read(self.run_id), other.store.read(other.run_id))

    async def _follow(self, after: int) -> AsyncIterator[RunEventDoc]:
        store = self.store
        last = -1  # The log's length only grows: while an event is before it, more follow.
        async for event in store.subscribe(self.run_id, after):
            yield event
            task = self._task
            if event["sequence"] < last or (task is not None and not task.done()):
                continue  # More follows, or this handle's driver is still at it.
            last = await store.call(store.last_sequence, self.run_id)
            if event["sequence"] >= last and await self._stopped():
                return

    async def _stopped(self) -> bool:
        if self._task is not None:
            return self._task.done()
        return await self.astatus() in STOPPED

    def show(self, **options: Any) -> Any:
        """Display a live view of the run in Jupyter (needs the ``jupyter`` extra).

        The view comes from the front end registered under the ``wopdsl.show`` entry point
        (wopdsl's own: :func:`wopdsl.jupyter.show`, which takes ``tail`` and ``reply``), so
        the run never imports the notebook layer. Returns that front end's view.

        Raises:
            ImportError: no live view is installed.
        """
        return load_entry_point(SHOW_ENTRY_POINTS, "run.show() needs the jupyter extra: pip "
                                "install 'wopdsl[jupyter]'")(self, **options)

    def _repr_html_(self) -> str:
        return run_html(self.state)

    def _repr_markdown_(self) -> str:
        return run_markdown(self.state)
