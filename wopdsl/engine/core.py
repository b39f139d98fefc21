"""The embedded asyncio engine: runs a compiled council, writing every change as an event."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from wopdsl._ids import Clock
from wopdsl.agents.python import ctrl_c_in_place, guard_loop, in_place_allowed
from wopdsl.compile.graph import CouncilGraph
from wopdsl.engine._approvals import Approvals
from wopdsl.engine._dispatch import Dispatch
from wopdsl.engine._outage import Outage
from wopdsl.engine._steering import POST_ATTEMPTS
from wopdsl.engine.human import HumanDoor, HumanInput
from wopdsl.errors import (
    RunBusy,
    RunStateConflict,
    StoreConflict,
    StoreError,
    StoreUnavailable,
)
from wopdsl.model.aliases import assign_aliases
from wopdsl.protocol import payloads as p
from wopdsl.protocol.capabilities import DEFAULT_MAX_PARTICIPANTS
from wopdsl.state import RunStatus
from wopdsl.store.base import EventStore

__all__ = ["Engine", "HumanInput"]


class Engine(HumanDoor, Approvals, Dispatch):
    """Drives one run of a compiled council against an event store.

    The engine keeps a :class:`CouncilState` that is exactly the fold of the events it has
    read or appended: every change is emitted as an event, applied to the state, and made
    durable before anything depends on it. A batch's ``node.started`` events are committed
    before its members run; when the batch settles, its completions are committed in one
    transaction together with the next batch's ``node.started`` events (one commit per
    batch), unless somebody waits to act between batches (a human posting, a cancel): then
    the completions are committed on their own and the lock is handed over first.

    Args:
        graph: The compiled council.
        store: Where the run's events live.
        run_id: The run (new or existing).
        clock: Time source for timestamps (inject a fixed clock for deterministic logs).
        max_participants: The host's roster limit per room (RFC 0101).
    """

    def __init__(
        self,
        graph: CouncilGraph,
        store: EventStore,
        run_id: str,
        *,
        clock: Clock | None = None,
        max_participants: int = DEFAULT_MAX_PARTICIPANTS,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(graph, store, run_id, clock=clock)
        self.max_participants = max_participants
        self.metadata = dict(metadata or {})
        self._lock = asyncio.Lock()
        self._waiting = 0
        """Callers waiting for the lock to act between batches (see :meth:`_between`)."""
        self._deadline: float | None = None
        self._driver: asyncio.Task[Any] | None = None
        """The task running :meth:`drive`, once it has started."""
        self._in_place = True
        """Whether a lone sync handler turn may run in place (not on a host's loop)."""
        self._expiry: asyncio.TimerHandle | None = None
        """Fires the council deadline of a waiting run this process holds (RFC 0005 §I)."""
        self._expiring: asyncio.Task[bool] | None = None
        self._retry_wait: float | None = None
        """Seconds to wait before re-dispatching turns that failed with retries left."""

    # -- public operations -----------------------------------------------------------------

    @property
    def status(self) -> RunStatus:
        """The run's status, from the folded log."""
        return self.state.status

    async def start(self) -> None:
        """Append the run's opening events: ``run.started`` and each room's conversation.

        Raises:
            ValidationError: a room has more agent participants than ``max_participants``.
            StoreConflict: the run id is already taken.
        """
        async with self._between():
            self.graph.check_rosters(self.max_participants)
            if self.state.last_sequence >= 0:
                raise StoreConflict(f"run {self.run_id} already exists",
                                    hint="choose another --run-id, or resume that run")
            spec = self.graph.spec
            extra = {**self._start_metadata(), **self.metadata}
            anonymous = [m for room in spec.rooms if room.anonymous for m in room.members]
            if anonymous:  # Fixed for the run (a fork keeps them): DESIGN.md §22.
                extra.setdefault("aliases", assign_aliases(self.run_id, anonymous))
            if self.graph.source:
                extra.setdefault("source", self.graph.source)
            definition = self.graph.definition or spec.definition()
            self._emit("run.started", p.run_started(spec.id, spec.task, definition,
                                                    self.graph.digest, extra))
            self._reserve_budget()
            for room in self.graph.rooms.values():
                self._open_room(room.id)
            await self._commit()

    async def drive(self) -> RunStatus:
        """Run batches until the run ends or waits for human input; return the status.

        The run is claimed while it is driven (:meth:`EventStore.claim`): one driver at a
        time, in this process or (SQLite) any other.

        A store that becomes unreachable (:class:`StoreUnavailable`: a lost connection, a
        server restarting) is waited for, with backoff, for up to its ``reconnect_s``; the
        drive then goes on from the log with ``run.resumed {reason: "store-recovery"}``.
        Another store failure ends the run ``failed`` (``STORE_ERROR``) if the log can still
        say so.

        Raises:
            StoreConflict: another driver is executing the run, or took it over meanwhile.
            StoreUnavailable: the store stayed unreachable for longer than ``reconnect_s``.
        """
        self._driver = asyncio.current_task()  # Where inline turns run (see _run_inline).
        self._in_place = in_place_allowed()
        outage: Outage | None = None
        while True:
            try:
                async with self._lock:
                    if outage is None:
                        await self._acatch_up()
                    else:
                        await self._resync()
                    if self.state.terminal or self.state.paused is not None:
                        return self.state.status  # A paused run waits for unpause().
                    self._require_handlers()
                    self._arm_deadline()
                await self._drive_claimed(recovered=outage is not None)
                break
            except StoreConflict as exc:
                if isinstance(exc, RunBusy) or not self._outage:
                    raise
                # After an outage an append may have landed unseen: read the log again.
                outage = outage or Outage(self.run_id, self.store.reconnect_s, exc)
            except StoreUnavailable as exc:
                outage = outage or Outage(self.run_id, self.store.reconnect_s, exc)
                outage.failure = exc
            except StoreError as exc:
                await self._fail_for_store(exc)
                raise
            self._outage = False
            await outage.wait()  # Raises StoreUnavailable once the store stayed away too long.
        self._schedule_expiry()
        return self.state.status

    async def _drive_claimed(self, *, recovered: bool = False) -> None:
        async with self._claim():
            async with self._lock:
                await self._acatch_up()  # What a driver that just let go appended.
                self._resumed("store-recovery" if recovered else None)
                await self._commit()
            guard_loop()  # A handler's loop.stop() fails its turn, not the whole process.
            with ctrl_c_in_place():
                while True:
                    async with self._recording_agents():
                        await self._drive_batches()
                        seen = self.state.last_sequence
                    async with self._lock:  # input that landed while the agents stopped
                        await self._acatch_up()  # (a decision on a tool call) is driven here
                        if self.state.terminal or self.state.status in ("waiting-input", "paused") \
                                or self.state.last_sequence == seen:
                            break

    async def _drive_batches(self) -> None:
        while True:
            if self._retry_wait is not None:
                # A retry waits its delay outside the lock (a human may post meanwhile).
                wait, self._retry_wait = self._retry_wait, None
                remaining = self._remaining()
                await asyncio.sleep(wait if remaining is None else min(wait, remaining))
            # The lock covers one batch at a time, so a human may post between batches.
            async with self._lock:
                if self.state.terminal or self.state.paused is not None:
                    break
                if self._deadline_passed():
                    self._time_out()
                    await self._commit()
                    break
                base = self.state.last_sequence
                try:
                    batch = self._next_batch()
                    await self._commit()
                except StoreConflict:
                    # Another process saved human input first: plan again on top of it.
                    if await self._only_human_input_since(base, []):
                        continue
                    raise
                if batch is None:
                    if self.state.status == "waiting-input" and self.supply_input():
                        await self._commit()
                        continue
                    break
                # Batch after batch, each settlement committed with the next dispatch, while
                # nobody waits between batches; the lock is released with nothing in flight.
                while batch is not None:
                    if len(batch) == 1 and self._deadline is None and self._inline(batch[0]):
                        batch = await self._run_inline(batch[0])
                    else:
                        batch = await self._run_batch(batch)

    async def post(self, entry: HumanInput) -> str | None:
        """Save a turn submitted from outside (between batches); return its message id.

        A human's post or an external member's turn: checked completely at the door
        (roster, role, room, mentions, size, the room's turn schema) before anything is
        appended. A post that loses an append race to another process (``STORE_CONFLICT``)
        is checked again on top of the new log and appended again, transparently.
        An expired council deadline is applied first (RFC 0005 §I). While a batch's turns
        run, a post (not a close) is appended at once and applied when the batch settles; a
        steering post also stops the turns it names (docs/guides/steering.md).

        Raises:
            ValidationError: the input breaks a rule; nothing was appended.
        """
        if self._running and not _closes(entry):
            return await self._post_now(entry)
        async with self._between():
            for attempt in range(POST_ATTEMPTS):
                await self._acatch_up()
                self._arm_deadline()
                try:
                    if self._deadline_passed() and not self.state.terminal:
                        self._time_out()
                        await self._commit()
                    message = self.apply_human(entry)
                    answer = entry.answer
                    await self._commit(None if answer is None
                                       else answer(message, self.state.status))
                    return message
                except RunBusy:
                    raise
                except StoreConflict:
                    if attempt + 1 == POST_ATTEMPTS:
                        raise
                    # Another writer appended first: the state was re-folded; try again.
                    await asyncio.sleep(min(0.05, 0.001 * (attempt + 1)))
        return None  # pragma: no cover - the loop returns or raises.

    async def decide(self, call: str | None, *, as_: str | None = None, grant: bool,
                     reason: str = "", principal: str | None = None) -> str:
        """Record a person's decision on a tool call waiting for approval; return its id.

        Raises:
            ValidationError: nothing waits, the choice is ambiguous, or ``as_`` may not
                decide (see :meth:`~wopdsl.engine._approvals.Approvals.apply_decision`).
        """
        async with self._between():
            for attempt in range(POST_ATTEMPTS):
                await self._acatch_up()
                try:
                    decided = self.apply_decision(call, as_=as_, grant=grant, reason=reason,
                                                  principal=principal)
                    await self._commit()
                    return decided
                except StoreConflict:
                    if attempt + 1 == POST_ATTEMPTS:
                        raise
                    await asyncio.sleep(min(0.05, 0.001 * (attempt + 1)))
        raise AssertionError("unreachable")  # pragma: no cover

    async def cancel(self, reason: str = "cancelled by user") -> None:
        """End the run as ``cancelled``: in-flight turns cancelled, conversations closed."""
        async with self._between():
            await self._acatch_up()
            if self.state.terminal:
                return
            for inflight in list(self.state.inflight.values()):
                self._emit("node.cancelled", {"nodeId": inflight.member, "reason": reason},
                           node_id=inflight.member)
            self._close_all(None, f"run cancelled: {reason}")
            self._emit("run.cancelled", {"reason": reason, "cancelledBy": "user"})
            await self._commit()

    async def pause(self, reason: str = "paused by user") -> None:
        """Pause the run (``run.paused``): no turn is dispatched until :meth:`unpause`.

        Waits for the running batch to settle first (its turns finish and are saved: the
        ``drain-current-node`` policy); to cut running turns off instead, stop the drive
        first (:meth:`wopdsl.Run.pause`). The council deadline stops while paused.

        Raises:
            RunStateConflict: the run is not running (already paused, waiting for input,
                or ended); nothing was appended.
        """
        async with self._between():
            await self._acatch_up()
            status = self.state.status
            if status != "running":
                raise RunStateConflict(self.run_id, status, "paused")
            self._emit("run.paused", {"reason": reason})
            await self._commit()
        self.disarm()

    async def unpause(self) -> None:
        """Resume a paused run: ``run.resumed {reason: "unpaused"}``; drive it again after.

        Turns cut off by an immediate pause are retried (``retrying``), as after a crash.

        Raises:
            RunStateConflict: the run is not paused; nothing was appended.
        """
        async with self._between():
            await self._acatch_up()
            status = self.state.status
            if status != "paused":
                raise RunStateConflict(self.run_id, status, "unpaused")
            self._resumed("unpaused")
            await self._commit()
            self._deadline = None  # Armed again on the next drive, pauses left out.

    # -- hooks for subclasses (fork in replay mode; after_settle is in _settling) ----------

    def supply_input(self) -> bool:
        """Called when the run would wait for a human; return True if input was appended."""
        return False

    # -- batches ---------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def _between(self) -> AsyncIterator[None]:
        """Hold the lock to act between batches; the drive hands it over at the next one."""
        self._waiting += 1
        try:
            await self._lock.acquire()
        finally:
            self._waiting -= 1
        try:
            yield
        finally:
            self._lock.release()


def _closes(entry: HumanInput) -> bool:
    """Whether a submission closes its room (applied between batches, never mid-batch)."""
    resume = entry.resume
    if isinstance(resume, dict) and "operation" in resume:
        return bool(resume["operation"] != "exchange")
    return entry.operation != "exchange"
