"""Private: running a dispatched batch of turns, then settling it with the next dispatch.

:class:`Batches` runs a batch's turns — in tasks, or a lone inline turn in the drive's own
task — while posts made meanwhile are saved at once and steering posts stop the turns they
name (:mod:`wopdsl.engine._steering`); then it settles the batch and chains the next
dispatch in one commit. :class:`~wopdsl.engine.core.Engine` plans the batches.

Quick turns commit together. While the drive keeps the event loop to itself running lone
quick turns (``MemberAgent.quick``: a script, a sync handler known to return within a
millisecond), a settled batch and the next dispatch wait to be committed with the next
settlement, for at most :data:`_YIELD_EVERY`: nothing of this process can read the run
meanwhile, and nothing is shown before it is durable. Anything else commits first: a turn
that is not quick, someone waiting, the end of the drive, a yield to the loop. A kill loses
at most those turns, and a resume runs them again, as it does the one turn in flight.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Coroutine
from typing import Any, Final

from wopdsl.agents.stopping import stop_turns
from wopdsl.engine._recorder import LiveRecords
from wopdsl.engine._settling import Settling
from wopdsl.engine._steering import STOPPED
from wopdsl.engine._turns import take_turn
from wopdsl.errors import StoreConflict, TurnError
from wopdsl.state import Inflight

__all__ = ["Batches"]

_YIELD_EVERY: Final = 0.001
"""Seconds of inline turns after which the drive lets the event loop run other tasks (and
the most time the settled quick turns wait to be committed together)."""

_GROUP_EVENTS: Final = 64
"""The most events a group of quick turns gathers before it is committed."""


class Batches(Settling, LiveRecords):
    """Runs and settles batches (the engine plans them: ``_next_batch``)."""

    _waiting: int
    """Callers waiting for the lock to act between batches."""
    _driver: asyncio.Task[Any] | None
    """The task running the drive, once it has started."""
    _in_place: bool
    """Whether a lone sync handler turn may run in place (not on a host's loop)."""
    _yielded: float = -_YIELD_EVERY
    """When the drive last yielded to the event loop before an inline turn."""
    _group: tuple[list[Inflight], list[dict[str, Any] | TurnError], int, int] | None = None
    """The uncommitted group of quick turns: its first settled batch, that batch's outcomes,
    the last sequence before it and how many pending events the group holds so far."""

    def _next_batch(self) -> list[Inflight] | None:
        raise NotImplementedError  # Engine._next_batch

    async def _only_human_input_since(self, base: int, batch: list[Inflight]) -> bool:
        raise NotImplementedError  # HumanDoor._only_human_input_since

    async def _run_batch(self, batch: list[Inflight]) -> list[Inflight] | None:
        """Run a dispatched batch in tasks and settle it; return the next batch if chained.

        A lone turn of an inline agent without a council deadline goes to :meth:`_run_inline`.
        """
        tasks = [asyncio.ensure_future(self._take_turn(i)) for i in batch]
        pending: set[asyncio.Task[dict[str, Any] | TurnError]] = set()
        current = asyncio.current_task()
        try:
            with self._steering(batch, tasks, self.state.last_sequence):
                if len(tasks) == 1 and self._deadline is None:
                    # The common one-turn batch without a council deadline awaits its task
                    # directly: asyncio.wait costs a waiter future and callbacks on every turn.
                    try:
                        await tasks[0]
                    except asyncio.CancelledError:
                        if not tasks[0].cancelled() or (current and current.cancelling()):
                            raise
                        # A steer stopped the turn: its settlement retries it.
                    if current is not None and current.cancelling():
                        raise asyncio.CancelledError  # the turn swallowed the cancellation
                else:
                    _done, pending = await asyncio.wait(tasks, timeout=self._remaining())
        except asyncio.CancelledError:
            # The drive was stopped (a pause, a cancel, Run.detach): its turns stop with it,
            # unsaved, once their tool calls in flight have ended and been recorded.
            await stop_turns(tasks)
            raise
        await stop_turns(pending)  # the council's deadline passed
        timed_out = TurnError("TIMEOUT", "the council's timeout_ms expired during this turn")
        outcomes = [timed_out if task in pending else STOPPED if task.cancelled()
                    else task.result() for task in tasks]
        return await self._settle_after_input(batch, outcomes, timed_out=bool(pending))

    async def _settle_after_input(self, batch: list[Inflight],
                                  outcomes: list[dict[str, Any] | TurnError], *,
                                  timed_out: bool, inline: bool = False
                                  ) -> list[Inflight] | None:
        """Settle ``batch`` and chain the next dispatch; both committed in one transaction.

        ``inline``: ``batch`` ran in the drive's task (:meth:`_run_inline`), so when the next
        dispatch is a lone quick turn, this settlement may wait to be committed with a later
        one (the group of quick turns: see the module's docstring).
        """
        if self._foreign:
            await self._atake_in()  # posts made while the batch ran
        base = self.state.last_sequence
        while True:
            group = self._group
            try:
                self._settle(batch, outcomes, timed_out=timed_out)
                following = self._chain()
                if inline and self._joins_group(outcomes[0], following):
                    first = (batch, outcomes, base) if group is None else group[:3]
                    self._group = (*first, len(self._pending))
                    return following
                self._group = None
                if self._blocking:
                    await self._commit()
                else:
                    self._flush()  # What _commit does for a store that never blocks.
                return following
            except StoreConflict:
                # Another process saved human input while the batch ran: settle after it.
                # After a group's commit, that is its first batch; the turns after it were
                # never durable nor seen, and are dispatched (and run) again.
                if group is not None:
                    batch, outcomes, base, _ = group
                    timed_out = False
                    self._retry_wait = None  # Only a later, dropped settlement could set it.
                if not await self._only_human_input_since(base, batch):
                    raise
                base = self.state.last_sequence

    def _joins_group(self, outcome: dict[str, Any] | TurnError,
                     following: list[Inflight] | None) -> bool:
        """Whether a settled lone turn may wait to be committed with the next one.

        Only when that one is a lone quick turn, which the drive then runs inline (a quick
        agent is an inline one), and the group is young and small.
        """
        if following is None or len(following) != 1 or type(outcome) is not dict or \
                self._blocking or not self._in_place or self._deadline is not None or \
                len(self._pending) > _GROUP_EVENTS or \
                time.monotonic() - self._yielded >= _YIELD_EVERY:
            return False
        member = self.graph.members[following[0].member]
        agent = member.agent
        return agent is not None and agent.quick and member.turn_timeout_s is None

    def _commit_group(self) -> None:
        """Commit the group of quick turns, before the drive stops with an error."""
        group, self._group = self._group, None
        if group is None:
            return
        # The group's events end with the next turn's dispatch: a consistent prefix.
        events, self._pending = self._pending[:group[3]], self._pending[group[3]:]
        try:
            self._append(events, None)
        except Exception:  # The drive's own error is the one to raise.
            self._pending = []
            self.state = self._refolded()

    def _chain(self) -> list[Inflight] | None:
        """Dispatch the next batch (unflushed) unless the run stops or someone waits."""
        if self.state.terminal or self._waiting or self._retry_wait is not None or \
                (self._deadline is not None and self._deadline_passed()):
            return None
        return self._next_batch()

    def _inline(self, inflight: Inflight) -> bool:
        agent = self.graph.members[inflight.member].agent
        # An async handler's turn runs in a task where someone may steer: a steer stops it.
        return agent is not None and agent.inline and not (
            self._steerable and not getattr(agent, "runs_inline", True))

    async def _run_inline(self, inflight: Inflight) -> list[Inflight] | None:
        """Run a lone turn of an inline agent (``script``, ``python``) in the drive's task.

        Saves a task and an event-loop iteration per turn. Turns that never suspend (scripts,
        handlers that await nothing) would keep the loop to themselves, so the drive yields
        to it before a turn whenever :data:`_YIELD_EVERY` seconds have passed since it last
        did: other tasks (a UI, a human's post, ``cancel``) wait at most that long.
        """
        now = time.monotonic()
        if now - self._yielded >= _YIELD_EVERY and self._group is None:
            self._yielded = now
            await asyncio.sleep(0)
        try:
            outcome = await self._take_turn(inflight, alone=self._in_place)
            if self._driver is not None and self._driver.cancelling():
                raise asyncio.CancelledError  # the turn swallowed the drive's cancellation
            return await self._settle_after_input([inflight], [outcome], timed_out=False,
                                                  inline=True)
        except BaseException:
            self._commit_group()  # Ctrl-C in a handler, an error: keep what was settled.
            raise

    def _take_turn(self, inflight: Inflight, *, alone: bool = False
                   ) -> Coroutine[Any, Any, dict[str, Any] | TurnError]:
        member = self.graph.members[inflight.member]
        return take_turn(self.graph, self.state, member, inflight, alone=alone,
                         call=lambda turn: self._agent_call(member, turn, inflight))
