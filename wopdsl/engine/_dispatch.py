"""Private: planning the next batch — who takes a turn next, or how the run stops.

:class:`Dispatch` writes a batch's ``node.started`` events (new turns in queue order, up to
``global_concurrency``; after a resume, the turns still in flight again as ``attempt + 1``)
or ends the run (completed once nobody is queued, failed on a member's turn limit). The
caller commits what it writes before any member of the batch runs;
:class:`~wopdsl.engine.core.Engine` drives the batches.
"""

from __future__ import annotations

from wopdsl.engine._batches import Batches
from wopdsl.engine._deliberation import Deliberation
from wopdsl.engine._steering import steered_retry
from wopdsl.protocol import payloads as p
from wopdsl.state import Inflight

__all__ = ["Dispatch"]


class Dispatch(Batches, Deliberation):
    """Plans each batch (``_next_batch``); :class:`Batches` runs and settles it."""

    def _request_waits(self) -> None:
        raise NotImplementedError  # HumanDoor._request_waits

    def _next_batch(self) -> list[Inflight] | None:
        """Dispatch the next batch and return it; ``None`` when the run stops.

        The caller commits what this emits (:meth:`_commit`) before any member of the batch
        runs: the dispatch, or the run's end.
        """
        state = self.state
        if state.inflight:
            # Resume: a turn that started but never completed runs again as attempt + 1,
            # its unfinished attempt closed by node.retried first (never started twice).
            # A turn waiting for an approval runs again once it is decided; until then the
            # run waits (nothing else is dispatched).
            batch = sorted((i for i in state.inflight.values() if not i.suspended),
                           key=lambda i: i.position)
            if not batch:
                return None
            for inflight in batch:
                if not inflight.retried:  # a failed turn's retry already said node.retried
                    self._emit("node.retried", steered_retry(inflight) if inflight.steered
                               else p.node_retried(inflight.member, inflight.attempt + 1),
                               node_id=inflight.member)
                self._emit("node.started", p.member_started(
                    inflight.member, attempt=inflight.attempt + 1, turn=inflight.turn,
                    position=inflight.position, triggers=inflight.triggers,
                    batch=state.batch), node_id=inflight.member)
            return batch
        graph = self.graph
        if graph.deliberates:
            self._deliberate()
        queue, members = state.queue, state.members
        for member_id in queue:
            member = members[member_id]
            if member.turns >= member.cap:
                self._fail_turn_limit(member_id)
                return None
        if graph.awaits:
            self._request_waits()
        chosen: list[str] = []
        limit = state.concurrency
        for member_id in queue:  # The first `limit` queued members not awaited.
            if not members[member_id].awaited:
                chosen.append(member_id)
                if len(chosen) == limit:
                    break
        if not chosen:
            if not state.queue:
                self._complete()
            return None
        number = state.batch + 1
        for member_id in chosen:
            turn, position = members[member_id].turns + 1, state.next_position
            triggers = list(queue[member_id])
            # Written and folded in one step (what _emit does, without looking the fold up).
            event = self._event("node.started", p.member_started(
                member_id, attempt=0, turn=turn, position=position, triggers=triggers,
                batch=number), member_id, None)
            state.last_sequence = event["sequence"]
            state.start_turn(member_id, position, 0, turn, list(triggers), number,
                             event["sequence"], event["timestamp"])
            self._pending.append(event)
        # Committed before running (by the caller): after a crash the turn must be retried,
        # not forgotten.
        return [state.inflight[m] for m in chosen]
