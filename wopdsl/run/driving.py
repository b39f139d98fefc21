"""Driving a run: the engine that writes to it, waiting, posting, voting, pausing, cancelling."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wopdsl.compile import compile
from wopdsl.engine import Engine, HumanInput, KeepAnswer, engine_for
from wopdsl.engine.addressing import address, default_member
from wopdsl.errors import RunBusy, RunNotFound, RunStateConflict, ValidationError
from wopdsl.model.mentions import parse_mentions
from wopdsl.model.spec import CouncilSpec
from wopdsl.projections.trace import live_trace
from wopdsl.run.reading import STOPPED, RunReader
from wopdsl.state import CouncilState, RunStatus

if TYPE_CHECKING:
    from wopdsl.projections.trace.live import LiveTrace

__all__ = ["RunDriver"]


class RunDriver(RunReader):
    """What a :class:`~wopdsl.Run` does: drive it here, follow it, and act on it."""

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
        if status in STOPPED:
            # Already stopped: nothing is appended until someone acts, so return now.
            return status
        async for event in self.store.subscribe(self.run_id, after):
            if event["sequence"] >= await self.store.call(self.store.last_sequence, self.run_id):
                status = await self.astatus()
                if status in STOPPED:
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
        if drove and await self.astatus() not in STOPPED:
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
