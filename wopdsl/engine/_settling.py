"""Private: how a settled batch is written — completions, failures, retries — as events.

:class:`Settling` turns each outcome of a batch's turns into events (``node.completed`` and
the member's posts as ``conversation.exchanged``, or ``node.retried`` for a failed turn with
retries left, or ``node.failed``) and ends the run when a turn failed for good or the council
timed out. :class:`~wopdsl.engine.core.Engine` commits them with the next batch's dispatch.
"""

from __future__ import annotations

from typing import Any

from wopdsl._ids import message_id
from wopdsl.engine._asks import Asks
from wopdsl.engine._steering import Steering, steered_retry
from wopdsl.engine._turns import NOT_RETRIED, retry_delay_ms
from wopdsl.errors import TurnAsks, TurnError, TurnSuspended
from wopdsl.state import Inflight

__all__ = ["Settling"]


class Settling(Steering, Asks):
    """Writes a settled batch's outcomes (the caller commits them)."""

    _retry_wait: float | None
    """Seconds to wait before re-dispatching turns that failed with retries left."""

    def after_settle(self, batch: list[Inflight]) -> None:
        """Called after a batch's completions are emitted (before they are flushed)."""

    def _settle(self, batch: list[Inflight], outcomes: list[dict[str, Any] | TurnError],
                *, timed_out: bool) -> None:
        if len(batch) == 1 and not timed_out:
            # The common batch: one turn that produced a result and no steer stopped.
            inflight, outcome = batch[0], outcomes[0]
            if type(outcome) is dict and self._steered_now(inflight, outcome) is None:
                self._completed(inflight, outcome)
                self.after_settle(batch)
                return
        failure: tuple[str, TurnError] | None = None
        outcomes = [(self._unanswerable(i, o) or o) if isinstance(o, TurnAsks) else o
                    for i, o in zip(batch, outcomes, strict=True)]
        # A turn a steer stopped runs again first, whatever it produced (steering.md).
        steered = [None if timed_out else self._steered_now(i, o)
                   for i, o in zip(batch, outcomes, strict=True)]
        # A failed turn with retries left runs again (node.retried, then after its delay a
        # new node.started) unless another turn of the batch failed for good.
        retry = [s is None and isinstance(o, TurnError) and self._retryable(i, o)
                 for i, o, s in zip(batch, outcomes, steered, strict=True)]
        fatal = timed_out or any(s is None and isinstance(o, TurnError) and not r and
                                 not isinstance(o, TurnSuspended)
                                 for o, r, s in zip(outcomes, retry, steered, strict=True))
        for inflight, outcome, again, stop in zip(batch, outcomes, retry, steered,
                                                  strict=True):
            member = inflight.member
            if stop is not None:
                self._emit("node.retried", steered_retry(stop), node_id=member)
                continue
            if isinstance(outcome, TurnAsks):  # its agent asks: the run waits for an answer
                self._write_ask(inflight, outcome)
            if isinstance(outcome, TurnSuspended):
                continue  # it stays in flight, waiting for a decision (its node.suspended)
            if isinstance(outcome, TurnError):
                error = {"code": outcome.code, "message": outcome.message or outcome.code,
                         **({"details": outcome.details} if outcome.details else {})}
                if again and not fatal:
                    delay = retry_delay_ms(self.graph.members[member], inflight.attempt + 1)
                    self._emit("node.retried", {"nodeId": member,
                                                "attempt": inflight.attempt + 1,
                                                "delayMs": delay, "lastError": error},
                               node_id=member)
                    self._retry_wait = max(self._retry_wait or 0.0, delay / 1000)
                    continue
                self._emit("node.failed", {"nodeId": member, "attempts": inflight.attempt + 1,
                                           "error": error}, node_id=member)
                failure = failure or (member, outcome)
                continue
            self._completed(inflight, outcome)
        self.after_settle(batch)
        if timed_out:
            self._time_out()
        elif failure is not None:
            member, err = failure
            budget = err.code == "BUDGET_EXHAUSTED"  # RFC 0084: the run fails on it
            self._fail(err.code if budget else "TEAM_NODE_FAILED", err.message if budget
                       else f"member {member} failed: {err.code}: {err.message}", member,
                       details={"nodeError": err.code})
        # The caller commits: the completions of one settled batch share one transaction.

    def _completed(self, inflight: Inflight, outcome: dict[str, Any]) -> None:
        """``node.completed`` of a turn, then each of its posts (``conversation.exchanged``)."""
        member = inflight.member
        # Written and folded in one step (what _emit does, without looking the fold up).
        event = self._event("node.completed", {"nodeId": member, "outputs": outcome}, member,
                            None)
        self.state.last_sequence = event["sequence"]
        self.state.complete_turn(member, outcome)
        self._pending.append(event)
        posts = outcome.get("posts")
        if posts:
            model = getattr(self.graph.members[member].agent, "provenance", None)
            for index, post in enumerate(posts):
                self._post(post["roomId"], message_id(member, inflight.position, index),
                           member, post["text"], post["mentions"], inflight.position, model)

    def _retryable(self, inflight: Inflight, error: TurnError) -> bool:
        current = self.state.inflight.get(inflight.member, inflight)
        # Attempts a steer stopped are not failures: they do not spend retries.
        return error.code not in NOT_RETRIED and \
            current.attempt - current.steers < self.graph.members[inflight.member].retries
