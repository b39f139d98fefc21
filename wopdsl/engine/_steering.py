"""Private: posts that land while a batch runs, and steering posts that stop turns.

A person's post is durable the moment it is made (DESIGN.md §24): while a batch's turns run,
:meth:`Steering._post_now` appends it through an :class:`Intake` — a second writer with a
fold of its own, so the driver's speculative state is never touched — and the driver takes
it in when the batch settles (catching up, or re-folding after an append conflict, as for a
post from another process).

A steering post (docs/guides/steering.md) also stops the running turns it names, at once:
in this process the intake tells the driver directly; from another process the batch's
watcher (:meth:`Steering._watch_steers`) sees it through the store's change notifications.
Stopping cancels the turn's task (:mod:`wopdsl.agents.stopping`: a tool call in flight
finishes and is recorded first, a model stream is aborted); the fold has marked the turn
steered, and the settlement writes ``node.retried`` (``STEERED``) for it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Final

from wopdsl.agents.stopping import stop_once
from wopdsl.engine._writer import EventWriter
from wopdsl.engine.human import HumanDoor
from wopdsl.engine.intake import HumanInput
from wopdsl.errors import RunBusy, StoreConflict, TurnError
from wopdsl.protocol.envelope import RunEventDoc
from wopdsl.protocol.payloads import turn_sender
from wopdsl.state import Inflight
from wopdsl.state.steering import STEERED, is_steer, steer_targets

__all__ = ["POST_ATTEMPTS", "STOPPED", "Intake", "Steering", "steered_retry"]

POST_ATTEMPTS: Final = 200
"""How often a submitted turn that lost an append race is re-checked and appended again."""

STOPPED: Final = TurnError(STEERED, "stopped by a steering post")
"""The outcome of a turn whose task a steer cancelled (its settlement retries it)."""


class Intake(HumanDoor):
    """The writer of posts made while a batch runs: its own fold of the durable log."""


def steered_retry(inflight: Inflight) -> dict[str, Any]:
    """``node.retried`` of an attempt a steering post stopped (the post is its last error)."""
    post = inflight.steered
    error: dict[str, Any] = {
        "code": STEERED, "retryable": True,
        "message": f"stopped by the steering post {post}" if post else "stopped by a steer"}
    if post:
        error["details"] = {"messageId": post}
    return {"nodeId": inflight.member, "attempt": inflight.attempt + 1, "delayMs": 0,
            "lastError": error}


class Steering(EventWriter):
    """Posts while a batch runs, and stopping the turns a steering post names."""

    _running: bool = False
    """Whether a batch's turns run now (a post then goes through the intake)."""
    _foreign: bool = False
    """Whether another writer appended while the batch ran (the driver catches up)."""
    _turn_tasks: dict[str, asyncio.Task[Any]] | None = None
    """The running batch's turn tasks, by member."""
    _intake: Intake | None = None
    _intake_lock: asyncio.Lock | None = None

    _can_steer: bool | None = None

    @property
    def _steerable(self) -> bool:
        """Whether anyone may steer this council: it has a human member."""
        if self._can_steer is None:
            self._can_steer = any(m.human for m in self.graph.members.values())
        return self._can_steer

    # -- posts while a batch runs ----------------------------------------------------------

    async def _post_now(self, entry: HumanInput) -> str | None:
        """Append a post at once through the intake; stop the turns it steers.

        Raises:
            ValidationError: the post breaks a rule; nothing was appended.
        """
        if self._intake_lock is None:
            self._intake_lock = asyncio.Lock()
        async with self._intake_lock:
            intake = self._intake
            if intake is None:
                intake = self._intake = await self.store.call(self._new_intake)
            for attempt in range(POST_ATTEMPTS):
                await intake._acatch_up()
                try:
                    message = intake.apply_human(entry)
                    events = list(intake._pending)
                    answer = entry.answer
                    await intake._commit(None if answer is None
                                         else answer(message, intake.state.status))
                except RunBusy:
                    raise
                except StoreConflict:
                    if attempt + 1 == POST_ATTEMPTS:
                        raise
                    await asyncio.sleep(min(0.05, 0.001 * (attempt + 1)))
                    continue
                self._foreign = True
                for event in events:
                    self._stop_steered(event)
                return message
        return None  # pragma: no cover - the loop returns or raises.

    def _new_intake(self) -> Intake:
        return Intake(self.graph, self.store, self.run_id, clock=self.clock)

    def _take_in(self) -> None:
        """Fold what another writer appended meanwhile (when nothing of ours awaits a flush)."""
        if self._foreign and self.settled and not self._blocking:
            self._foreign = False
            self._catch_up()

    async def _atake_in(self) -> None:
        """:meth:`_take_in`, reading on a worker thread for a blocking store."""
        live = getattr(self, "_live_tasks", None)
        if self._foreign and self.settled and not live:
            self._foreign = False
            await self._acatch_up()

    # -- stopping ----------------------------------------------------------------------------

    @contextmanager
    def _steering(self, batch: list[Inflight], tasks: list[asyncio.Task[Any]],
                  base: int) -> Iterator[None]:
        """While ``tasks`` run: posts go through the intake and steers stop them."""
        self._running = True
        self._turn_tasks = {i.member: t for i, t in zip(batch, tasks, strict=True)}
        watcher = asyncio.ensure_future(self._watch_steers(base)) if self._steerable else None
        try:
            yield
        finally:
            self._running = False
            self._turn_tasks = None
            if watcher is not None:
                watcher.cancel()

    def _stop_steered(self, event: RunEventDoc) -> None:
        """Cancel the running turns a durable steering post names (any other event: none)."""
        tasks = self._turn_tasks
        if not tasks or event["type"] != "conversation.exchanged":
            return
        turn = event["payload"].get("turn")
        if not is_steer(turn):
            return
        room = self.graph.rooms.get(str(turn.get("groupId", "")))
        if room is None:
            return
        mentions = turn["content"].get("mentions") or []
        for member in steer_targets(room.members, turn_sender(turn), mentions):
            task = tasks.get(member)
            if task is not None and not task.done():
                stop_once(task)  # the intake and the watcher may both see the post

    async def _watch_steers(self, after: int) -> None:
        """Follow the log while a batch runs; stop what a steering post from elsewhere names."""
        store = self.store
        cursor = after
        while True:
            await store.wait_for_change(self.run_id, cursor)
            for event in await store.call(store.read, self.run_id, cursor):
                cursor = event["sequence"]
                if event["type"] == "conversation.exchanged" and \
                        event["payload"].get("turn", {}).get("role") == "user":
                    self._foreign = True
                    self._stop_steered(event)

    def _steered_now(self, inflight: Inflight, outcome: object) -> Inflight | None:
        """The turn in flight, when its settlement must retry it because a steer stopped it."""
        current = self.state.inflight.get(inflight.member)
        if current is None or current.position != inflight.position or \
                current.suspended is not None:
            return None
        return current if current.steered is not None or outcome is STOPPED else None
