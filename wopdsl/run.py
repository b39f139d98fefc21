"""``Run``: the handle UIs, notebooks and tests use on a run, here or in another process."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wopdsl._lazy import load_entry_point
from wopdsl._sync import run_sync
from wopdsl.compile import compile
from wopdsl.compile.graph import Compiles
from wopdsl.engine import Engine, HumanInput, KeepAnswer, engine_for
from wopdsl.engine.addressing import address, default_member
from wopdsl.errors import RunBusy, RunNotFound, RunStateConflict, ValidationError
from wopdsl.model.mentions import parse_mentions
from wopdsl.model.spec import CouncilSpec
from wopdsl.model.turns import Message
from wopdsl.presence import Presence
from wopdsl.projections.log import EventLog
from wopdsl.projections.metrics import RunMetrics, decisions_of, metrics_of
from wopdsl.projections.notebook import run_html, run_markdown
from wopdsl.projections.trace import export_configured, live_trace
from wopdsl.projections.transcript import render_transcript
from wopdsl.protocol.envelope import RunEventDoc
from wopdsl.state import TERMINAL, CouncilState, RunStatus, build_snapshot, tags_of
from wopdsl.store import EventStore, open_store, require_run

if TYPE_CHECKING:
    from wopdsl.projections.diff import RunDiff
    from wopdsl.projections.trace.live import LiveTrace

__all__ = ["Compiles", "EventLog", "Run", "attach", "parse_mentions", "run_sync"]

_STOPPED = frozenset({*TERMINAL, "waiting-input", "paused"})
"""Statuses in which nothing is appended until someone acts."""


class Run:
    """A handle on one run: status, result, transcript, events, reply, pause, cancel, wait.

    Works the same on a run executing in this process (``council.start()``) and on one
    executing in another process that shares the store (:func:`attach`): it reads events.
    """

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
        self.events = EventLog(store, run_id, self._follow)
        """The run's events (a sequence, and ``run.events(after)`` to follow live)."""
        # Live tracing exports what happens after this (earlier spans are another's to send).
        self._traced = store.last_sequence(run_id) if export_configured() else -1
        self._live: LiveTrace | None = None  # one for all drives: no span is sent twice
        self._presence: Presence | None = None

    # -- state, read from the log ----------------------------------------------------------

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

    def diff(self, other: Run) -> RunDiff:
        """Compare with ``other`` (any store): transcripts, speaking order, work, outcome.

        The result prints as ``wop diff`` does, renders as HTML in a notebook and has
        ``equal`` and ``to_json()``.
        """
        from wopdsl.projections.diff import diff_runs

        return diff_runs(self.store.read(self.run_id), other.store.read(other.run_id))

    # -- driving ---------------------------------------------------------------------------

    def _begin(self, *, start: bool, follow_if_busy: bool = False) -> None:
        engine = self._require_engine()

        started = self._started = asyncio.Event()

        async def go() -> RunStatus:
            trace = self._trace()
            try:
                if start:
                    await engine.start()
            finally:
                started.set()
            try:
                return await engine.drive()
            except RunBusy:
                if not follow_if_busy:
                    raise
                # Another driver took the run up meanwhile (a reply from elsewhere): it
                # executes the run, this post included; follow it to its next stop.
                return await self._watch()
            finally:
                if trace is not None:
                    self._traced = await trace.stop()

        self._task = asyncio.ensure_future(go())

    def _trace(self) -> LiveTrace | None:
        """This handle's live trace, started for one more drive (``None``: not exporting)."""
        if self._live is None:
            self._live = live_trace(self.store, self.run_id, self._traced)
        return self._live.start() if self._live is not None else None

    async def _watch(self) -> RunStatus:
        """Follow the log until the run stops (for a run another driver executes)."""
        # Read the status and the position together: another process may append in between.
        state = await self.astate()
        status, after = state.status, state.last_sequence
        if status in _STOPPED:
            # Already stopped: nothing is appended until someone acts, so return now.
            return status
        async for event in self.store.subscribe(self.run_id, after):
            if event["sequence"] >= await self.store.call(self.store.last_sequence, self.run_id):
                status = await self.astatus()
                if status in _STOPPED:
                    break
        return await self.astatus()

    async def wait(self) -> RunStatus:
        """Wait until the run completes, fails, is cancelled, waits for input or is paused."""
        task = self._task
        if task is not None:
            try:
                await asyncio.shield(task)
            except asyncio.CancelledError:
                current = asyncio.current_task()
                if not task.cancelled() or (current is not None and current.cancelling()):
                    raise  # This waiter was cancelled, not the run's driving task.
                if self._landing is not None:  # A pause or cancel cut it: hear the status.
                    await asyncio.shield(self._landing)
            return await self.astatus()
        return await self._watch()

    async def resume(self) -> RunStatus:
        """Continue an interrupted or waiting run in this process, then wait for it."""
        if self._task is not None and not self._task.done():
            return await self.wait()
        await self._aengine()
        self._begin(start=False)
        return await self.wait()

    async def reply(self, text: str = "", *, room: str | None = None, as_: str | None = None,
                    mentions: list[str] | None = None, operation: str = "exchange",
                    outcome: Any = None, resume: dict[str, Any] | None = None,
                    answer: KeepAnswer | None = None, steer: bool = False) -> str | None:
        """Post as a human member, or submit an external member's turn.

        ``@member`` in ``text`` becomes a mention. Every way in is checked the same at the
        door (RFC 0101 roster, role, room, mentions, size); a refused turn appends nothing
        and the run keeps waiting. A post is saved at once, even while turns run (their
        batch takes it in when it settles).

        Args:
            text: The message text.
            room: The room (default: the payload's ``groupId``, else the member's only open
                room).
            as_: The member: a ``human`` one (its turns are ``role: "user"``) or an
                ``external`` one (``role: "agent"`` with its ``speakerId``). Default: the
                payload's ``speakerId``, else the one member whose turn is awaited, else the
                only human member.
            mentions: Explicit mentions (default: the ``@member`` words of ``text``).
            operation: ``exchange`` (post) or ``close`` (end the room's conversation).
            outcome: For ``close``: the conversation's outcome.
            resume: An RFC 0005 §E payload ``{operation, turn, outcome?}`` or bare turn fields
                (``{"role": "agent", "speakerId": "host:a", "content": {"text": ...}}``);
                overrides the above. A ``close`` keeps its ``turn`` as the closing turn.
            answer: For a host's request with an ``Idempotency-Key``: from the message id and
                the run's status, the :class:`~wopdsl.store.Answer` kept with the turn.
            steer: Steer (a person's post only): the members the post mentions (without
                mentions, the room's members) stop their running turns at once and take
                them again with the post among their triggers (docs/guides/steering.md).

        Returns:
            The saved message id (``None`` for ``close``).

        Raises:
            ValidationError: the input was refused; nothing was appended.
        """
        if self._started is not None and not self._started.is_set():
            # Right after council.start(): let the opening events land before posting.
            await self._started.wait()
        if mentions is not None and not isinstance(mentions, list | tuple):
            raise ValidationError(f"mentions must be a list of member ids (got "
                                  f"{type(mentions).__name__})", hint='e.g. mentions=["writer"]')
        member, target = address(await self.astate(), as_, room, resume)
        entry = HumanInput(member=member, room=target, text=text,
                           mentions=tuple(mentions if mentions is not None
                                          else parse_mentions(text)),
                           operation=operation, outcome=outcome, resume=resume, answer=answer,
                           steer=steer)
        engine = await self._aengine()
        was_waiting = await self.astatus() == "waiting-input"
        message = await engine.post(entry)
        await self._drive_on(was_waiting)
        return message

    async def vote(self, decision: str, choice: str | int | float, *, reason: str = "",
                   as_: str | None = None, text: str = "") -> str | None:
        """Vote as a human member on an open decision (DESIGN.md §22), then go on.

        A voter may vote again while the decision is open (its last vote counts; the log
        keeps every one). ``text`` also posts a message in the decision's room with the vote.

        Args:
            decision: The decision's id.
            choice: One of its options, or a score on its scale.
            reason: Why (shown with the tally, and with the dissent if the vote loses).
            as_: The human voter (default: the decision's only human voter).
            text: An optional message posted with the vote.

        Returns:
            The saved message id when ``text`` posted one, else ``None``.

        Raises:
            ValidationError: no such open decision, not a voter, or not an option;
                nothing was appended.
        """
        state = await self.astate()
        found = state.decisions.get(decision)
        if found is None:
            raise ValidationError(f"decision {decision!r} does not exist (decisions: "
                                  f"{', '.join(state.decisions) or 'none'})",
                                  hint="vote on one of the council's [[decisions]]")
        if as_ is None:
            humans = [v for v in found.voters if state.members[v].human]
            if len(humans) != 1:
                raise ValidationError(
                    f"decision {decision!r} has {len(humans) or 'no'} human voters"
                    + (f" ({', '.join(humans)}); say which" if humans else ""),
                    hint="pass as_='<member>' (CLI: --as MEMBER)" if humans else
                    "only a human voter votes from outside the run")
            as_ = humans[0]
        entry = HumanInput(member=as_, room=found.room, text=text,
                           mentions=tuple(parse_mentions(text)),
                           votes=({"decision": decision, "choice": choice, "reason": reason},))
        engine = await self._aengine()
        was_waiting = await self.astatus() == "waiting-input"
        message = await engine.post(entry)
        await self._drive_on(was_waiting)
        return message

    async def approve(self, call: str | None = None, *, as_: str | None = None,
                      reject: bool = False, reason: str = "",
                      principal: str | None = None) -> str:
        """Decide a tool call waiting for approval (``approval = MEMBER``); return its id.

        ``call``: the call id (default: the one waiting); a rejection is the tool's result.
        ``principal``: who decided, when someone other than the store's owner decides for the
        approver (a host's authenticated caller); the log records it as ``decidedBy`` and
        ``approval.granted``/``approval.rejected`` ``principal`` (default: the approver).
        Whether that principal may decide is the caller's check (``wop serve`` does it).

        Raises:
            ValidationError: nothing waits, several do and ``call`` is missing, or ``as_``
                is not the approver; nothing was appended.
        """
        engine = await self._aengine()
        was_waiting = await self.astatus() == "waiting-input"
        decided = await engine.decide(call, as_=as_, grant=not reject, reason=reason,
                                      principal=principal)
        await self._drive_on(was_waiting)
        return decided

    async def _drive_on(self, was_waiting: bool) -> None:
        """After input: drive the run here if this handle drove it or nobody did.

        A run executing in another process keeps its own driver. Checked after the input
        landed (it waits for a batch this handle drives to settle first).
        """
        drove = was_waiting or (self._task is not None and self._task.done())
        if drove and await self.astatus() not in _STOPPED:
            self._begin(start=False, follow_if_busy=True)

    async def cancel(self, reason: str = "cancelled by user") -> None:
        """Cancel the run: running turns stop, conversations close, ``run.cancelled``.

        A tool call in flight is let finish (within its ``timeout_ms``) and its result
        recorded before the run ends, so the log says what the tool did.
        """
        engine = await self._aengine()
        await self._cut(lambda: engine.cancel(reason))

    async def pause(self, reason: str = "paused by user", *, drain: bool = False) -> None:
        """Pause a running run (``run.paused``): no turn starts until :meth:`unpause`.

        ``drain=False`` (``immediate``) stops the turns running here at once, unsaved: each
        runs again as ``attempt + 1`` after :meth:`unpause`. A tool call in flight is let
        finish (within its ``timeout_ms``) and its result recorded first, so that attempt
        uses it: a pause never puts a call in doubt (docs/guides/tools.md). ``drain=True``
        (``drain-current-node``) lets them finish and be saved first, then pauses. The
        council's ``timeout_ms`` does not count paused time. A paused run stays paused across
        restarts (``wop resume`` and a restarted host leave it be); :meth:`cancel` still ends it.

        Raises:
            RunStateConflict: the run is not running (already paused, waiting for input,
                or ended); nothing was appended.
        """
        engine = await self._aengine()
        if not drain and self._task is not None and not self._task.done():
            status = await self.astatus()
            if status != "running":  # Checked before any turn is cut off.
                raise RunStateConflict(self.run_id, status, "paused")
            await self._cut(lambda: engine.pause(reason))
            return
        await engine.pause(reason)

    async def _cut(self, then: Callable[[], Awaitable[None]]) -> None:
        """Stop this handle's driving task, then ``then()``; its waiters hear the status after."""
        task, self._task = self._task, None
        landing = self._landing = asyncio.get_running_loop().create_future()
        try:
            if task is not None and not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
            await then()
        finally:
            landing.set_result(None)
            if self._landing is landing:
                self._landing = None

    async def unpause(self) -> RunStatus:
        """Resume a paused run (``run.resumed {reason: "unpaused"}``) and drive it here.

        Returns the status right after (``running``); :meth:`wait` follows the run on.

        Raises:
            RunStateConflict: the run is not paused; nothing was appended.
        """
        status = await self.astatus()
        if status != "paused":  # At once: a running batch holds the engine until it settles.
            raise RunStateConflict(self.run_id, status, "unpaused")
        await (await self._aengine()).unpause()
        if self._task is None or self._task.done():
            self._begin(start=False, follow_if_busy=True)
        return await self.astatus()

    async def detach(self) -> None:
        """Stop driving the run in this process and leave it resumable (nothing is appended).

        Unlike :meth:`cancel`, the run does not end: a turn cut off here runs again as
        ``attempt + 1`` on ``wop resume`` (or ``await run.resume()``), with the result of a
        tool call it had in flight (let finish and recorded first). UIs call this on quit.
        """
        if self._engine is not None:
            self._engine.disarm()
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def close(self, *, room: str | None = None, outcome: Any = None,
                    as_: str | None = None) -> None:
        """Close the human's room conversations (RFC 0005 §E ``close``) and let the run end."""
        state = await self.astate()
        member = as_ or default_member(state)
        rooms = [room] if room else [r for r in state.members[member].rooms
                                     if not state.rooms[r].closed]
        for target in rooms:
            await self.reply(room=target, as_=member, operation="close", outcome=outcome)

    async def _follow(self, after: int) -> AsyncIterator[RunEventDoc]:
        store = self.store
        async for event in store.subscribe(self.run_id, after):
            yield event
            if event["sequence"] >= await store.call(store.last_sequence, self.run_id) and \
                    await self._stopped():
                return

    async def _stopped(self) -> bool:
        if self._task is not None:
            return self._task.done()
        return await self.astatus() in _STOPPED

    # -- helpers ---------------------------------------------------------------------------

    def _require_engine(self) -> Engine:
        """The engine that writes to this run, built on the first write (reads never need it)."""
        if self._engine is None:
            self._engine = self._build_engine(self.state)
        return self._engine

    async def _aengine(self) -> Engine:
        """:meth:`_require_engine`, built on a worker thread for a blocking store."""
        if self._engine is None and self.store.blocking:
            engine = await self.store.call(self._build_engine, await self.astate())
            self._engine = self._engine or engine
        return self._require_engine()

    def _build_engine(self, state: CouncilState) -> Engine:
        if state.last_sequence < 0:
            raise RunNotFound.of(self.run_id)
        if self.council is not None:
            graph = self.council.compile()
        else:
            # The log alone rebuilds the council (``run.started`` carries its full
            # definition); ``handler = "module:fn"`` references resolve beside its file.
            source = state.metadata.get("source")
            graph = compile(CouncilSpec.model_validate(state.council), source=source,
                            base_dir=Path(source).resolve().parent if source else None)
        return engine_for(graph, self.store, self.run_id)

    # -- sync twins, for scripts outside an event loop ----------------------------------------

    def reply_sync(self, text: str = "", **options: Any) -> str | None:
        """Synchronous twin of :meth:`reply`: post, then wait until the run stops again.

        Takes the same arguments as :meth:`reply`. The run is driven in this call (to its
        end, or until it waits for a person again), so the script may exit right after.
        """

        async def go() -> str | None:
            message = await self.reply(text, **options)
            await self.wait()
            return message

        return run_sync(go(), "reply_sync()", "await run.reply(...)")

    def vote_sync(self, decision: str, choice: str | int | float, **options: Any) -> str | None:
        """Synchronous twin of :meth:`vote`: vote, then wait until the run stops again."""

        async def go() -> str | None:
            message = await self.vote(decision, choice, **options)
            await self.wait()
            return message

        return run_sync(go(), "vote_sync()", "await run.vote(...)")

    def wait_sync(self) -> RunStatus:
        """Synchronous twin of :meth:`wait`."""
        return run_sync(self.wait(), "wait_sync()", "await run.wait()")

    def resume_sync(self) -> RunStatus:
        """Synchronous twin of :meth:`resume`."""
        return run_sync(self.resume(), "resume_sync()", "await run.resume()")

    def cancel_sync(self, reason: str = "cancelled by user") -> None:
        """Synchronous twin of :meth:`cancel`."""
        run_sync(self.cancel(reason), "cancel_sync()", "await run.cancel()")

    def pause_sync(self, reason: str = "paused by user", *, drain: bool = False) -> None:
        """Synchronous twin of :meth:`pause`."""
        run_sync(self.pause(reason, drain=drain), "pause_sync()", "await run.pause()")

    def unpause_sync(self) -> RunStatus:
        """Synchronous twin of :meth:`unpause`: resume the run, then wait until it stops."""

        async def go() -> RunStatus:
            await self.unpause()
            return await self.wait()

        return run_sync(go(), "unpause_sync()", "await run.unpause()")

    def close_sync(self, *, room: str | None = None, outcome: Any = None,
                   as_: str | None = None) -> RunStatus:
        """Synchronous twin of :meth:`close`: close, then wait until the run stops."""

        async def go() -> RunStatus:
            await self.close(room=room, outcome=outcome, as_=as_)
            return await self.wait()

        return run_sync(go(), "close_sync()", "await run.close(...)")

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

    def __repr__(self) -> str:
        return f"Run({self.run_id!r}, status={self.status!r})"


SHOW_ENTRY_POINTS = "wopdsl.show"
"""The entry-point group :meth:`Run.show` finds its live view in (``pyproject.toml``)."""


def attach(store: str | os.PathLike[str] | EventStore | None, run_id: str,
           council: Compiles | None = None) -> Run:
    """Return a handle on a stored run (executing here, elsewhere, or finished).

    Args:
        store: A path, ``"memory:"`` or a store object (``None``: the default store).
        run_id: The run.
        council: The council to drive the run with (re-binds python handlers); by default
            it is rebuilt from the log on the first write.

    Raises:
        RunNotFound: the store has no such run.
    """
    return Run(require_run(open_store(store), run_id), run_id, council=council)
