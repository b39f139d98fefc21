"""Private: how a run ends or continues — completed, failed, timed out, resumed — and checks.

:class:`Endings` writes a run's closing events (each room's conversation closed, then
``run.completed`` or ``run.failed``), marks a run continued after a crash or a fork
(``run.resumed``), keeps the council deadline (RFC 0005 §I, with a timer that fires it in a
process holding a waiting run) and checks
rosters and handlers before a run starts or resumes.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

from wopdsl._ids import SystemClock
from wopdsl.engine._writer import EventWriter
from wopdsl.errors import (
    DeclarationError,
    StoreConflict,
    StoreError,
    StoreUnavailable,
)

__all__ = ["Endings"]


class Endings(EventWriter):
    """Closing events, the council deadline and the pre-run checks."""

    max_participants: int
    """The host's roster limit per room (RFC 0101)."""
    _deadline: float | None
    """``time.monotonic()`` at which the council times out, once armed."""
    _expiry: asyncio.TimerHandle | None
    """Fires the council deadline of a waiting run this process holds (RFC 0005 §I)."""
    _expiring: asyncio.Task[bool] | None

    def _between(self) -> contextlib.AbstractAsyncContextManager[None]:
        raise NotImplementedError  # The engine's lock (Engine._between).



    def before_complete(self) -> None:
        """Called before the closing events of a completed run are emitted."""

    def _complete(self) -> None:
        self.before_complete()
        for room_id, room in self.state.rooms.items():
            self._close_room(room_id, {"messages": len(room.messages)}, "council completed")
        self._emit("run.completed", {"outputs": self.state.result(),
                                     "durationMs": self._duration()})

    def _fail(self, code: str, message: str, node: str | None,
              details: dict[str, Any] | None = None, closing_text: str | None = None) -> None:
        self._close_all(None, closing_text or f"run failed: {code}")
        error: dict[str, Any] = {"code": code, "message": message}
        if details:
            error["details"] = details
        payload: dict[str, Any] = {"error": error, "durationMs": self._duration()}
        if node is not None:
            payload["failedNodeId"] = node
        self._emit("run.failed", payload)

    def _fail_turn_limit(self, member_id: str) -> None:
        """Fail the run for a member requested after its cap: who asked, the cap, the fixes."""
        state = self.state
        cap = state.members[member_id].cap
        triggers = [state.messages[m] for m in state.queue.get(member_id, ())
                    if m in state.messages]
        asked = ", ".join(dict.fromkeys(f"{m.sender} in room '{m.room}'" for m in triggers))
        self._fail("TEAM_TURN_LIMIT",
                   f"{member_id} was {f'mentioned by {asked}' if asked else 'requested'} after "
                   f"using all {cap} of its turns (max_turns = {cap}); fix: raise its "
                   "max_turns (or max_turns_per_member), debate in a room with rounds = N (a "
                   "mention there never adds a turn), or end the discussion on a decision "
                   "([[decisions]]: members vote instead of asking again; see "
                   "docs/guides/deliberation.md)", member_id,
                   {"member": member_id, "limit": "max_turns", "value": cap,
                    "mentionedBy": list(dict.fromkeys(m.sender for m in triggers))})

    async def _fail_for_store(self, exc: StoreError) -> None:
        """End the run as failed (``STORE_ERROR``) if the log can still say so: honestly."""
        if isinstance(exc, StoreConflict | StoreUnavailable):
            return
        with contextlib.suppress(Exception):
            async with self._between():
                await self._resync()
                if self.state.terminal or self.state.last_sequence < 0:
                    return
                async with self._claim():
                    self._fail("STORE_ERROR", f"the store failed: {exc.message}", None)
                    await self._commit()

    def _time_out(self) -> None:
        timeout = self.graph.spec.council.timeout_ms
        for inflight in list(self.state.inflight.values()):
            self._emit("node.failed", {"nodeId": inflight.member, "attempts": inflight.attempt + 1,
                                       "error": {"code": "TIMEOUT",
                                                 "message": "the council timed out"}},
                       node_id=inflight.member)
        text = f"council timed out after {timeout} ms (timeout_ms)"
        self._fail("TIMEOUT", f"the council did not finish within timeout_ms = {timeout}", None,
                   closing_text=text)

    def _resumed(self, reason: str | None = None) -> None:
        """Mark a run continued after a crash, a fork, a store outage or a pause (``run.resumed``).

        (DESIGN.md §7; the caller commits.) Its in-flight turns are then retried
        (``node.retried`` before each new ``node.started``, in ``_next_batch``); a fork's gates
        closed at the cut end first. ``reason`` (``store-recovery``, ``unpaused``) marks the
        run even with nothing in flight.
        """
        state = self.state
        if state.terminal or state.last_sequence < 0 or \
                (reason is None and state.resumed_at == state.last_sequence):
            return  # (Just unpaused: that run.resumed said it.)
        origin = state.metadata.get("forkedFrom") or {}
        fork_start = origin.get("atSequence") == state.last_sequence
        # Interrupted turns only: not one waiting for an approval, nor one whose approval
        # was just decided (it runs again by design).
        active = sorted(m for m, i in state.inflight.items() if not i.suspended and not i.decided)
        if not active and not fork_start and reason is None:
            return
        payload: dict[str, Any] = {"reason": reason or ("fork" if fork_start
                                                        else "crash-recovery")}
        if active:
            payload["retrying"] = active
        self._emit("run.resumed", payload)
        self._finish_gates()

    # -- the deadline (RFC 0005 §I) --------------------------------------------------------

    def _arm_deadline(self) -> None:
        timeout = self.graph.spec.council.timeout_ms
        if timeout is None or self._deadline is not None:
            return
        elapsed = 0.0
        if isinstance(self.clock, SystemClock) and self.state.started_ms:
            elapsed = self.state.active_ms(self.clock.now_ms()) / 1000  # Pauses left out.
        self._deadline = time.monotonic() + timeout / 1000 - elapsed

    def _schedule_expiry(self) -> None:
        """Arm a timer that applies the council deadline to a run left waiting for input.

        A process that holds a waiting run (a notebook's ``Run``, the TUI) times it out on
        time; with no such process, the next one to act on the run applies it first.
        """
        if self._expiry is not None:
            self._expiry.cancel()
            self._expiry = None
        remaining = self._remaining()
        if remaining is None or self.state.terminal or self.state.paused is not None:
            return  # A paused run's clock stops (unpause arms the deadline again).
        loop = asyncio.get_running_loop()

        def fire() -> None:
            self._expiry = None
            self._expiring = loop.create_task(self.expire())

        self._expiry = loop.call_later(remaining, fire)

    def disarm(self) -> None:
        """Stop holding the run's deadline here (the next process to act applies it)."""
        if self._expiry is not None:
            self._expiry.cancel()
            self._expiry = None

    async def expire(self) -> bool:
        """Apply the council deadline now if it has passed; return whether it did.

        Nothing happens when the run ended meanwhile or another driver executes it (that
        driver applies the deadline itself).
        """
        async with self._between():
            await self._acatch_up()
            self._arm_deadline()
            if self.state.terminal or self.state.paused is not None or \
                    not self._deadline_passed():
                return False
            try:
                async with self._claim():
                    await self._acatch_up()
                    if self.state.terminal:
                        return False
                    self._time_out()
                    await self._commit()
            except StoreConflict:
                return False
            return True

    def _remaining(self) -> float | None:
        return None if self._deadline is None else max(0.0, self._deadline - time.monotonic())

    def _deadline_passed(self) -> bool:
        return self._deadline is not None and time.monotonic() >= self._deadline

    # -- checks ----------------------------------------------------------------------------

    def _check_rosters(self) -> None:
        self.graph.check_rosters(self.max_participants)

    def _require_handlers(self) -> None:
        unbound = self.graph.unbound()
        if unbound:
            raise DeclarationError(
                f"python members without a handler: {', '.join(unbound)}",
                hint="bind them with @council.bind('<member>'), set handler = 'module:function'"
                     " in the council file, or pass the council file to `wop resume`",
            )
