"""The engine's door for turns submitted from outside: people and external agents.

:class:`HumanDoor` checks a submitted turn completely (:func:`wopdsl.engine.intake.accept`:
roster, role, speakerId, room, mentions, size, turn schema) and appends it as the member's
turn and the room's exchange (or the room's close, keeping a closing turn). It also writes
the waits: an ``interrupt.requested`` (``conversation.exchange``) for each awaited turn and
``interrupt.resolved`` when it lands; a post that answers an ``a2a`` member's question
resolves that wait too (:mod:`wopdsl.engine._asks`). :class:`~wopdsl.engine.core.Engine`
calls it between batches, holding its lock.
"""

from __future__ import annotations

from typing import Any

from wopdsl._ids import message_id
from wopdsl.engine._asks import Asks
from wopdsl.engine.intake import Accepted, HumanInput, accept
from wopdsl.protocol import payloads as p
from wopdsl.state import Inflight

__all__ = ["HumanDoor", "HumanInput"]


class HumanDoor(Asks):
    """Checks and writes a submitted turn (the caller holds the engine's lock)."""

    def apply_human(self, entry: HumanInput) -> str | None:
        """Check and emit a submitted turn (the caller holds the engine lock and commits).

        Raises:
            ValidationError: refused; nothing was appended.
        """
        turn = accept(self.graph, self.state, entry)
        self._resolve_wait(turn)
        if turn.operation == "close":
            final = None
            if turn.has_turn:
                room = self.state.rooms[turn.room]
                final = p.post_turn(f"{room.conversation_id}:{room.turn_index + 1}:"
                                    f"{turn.role}", turn.member, human=turn.role == "user",
                                    text=turn.text, mentions=turn.mentions,
                                    ts=self._ms() if turn.ts is None else turn.ts,
                                    index=room.turn_index + 1, room_id=turn.room)
            self._close_room(turn.room, turn.outcome, f"closed by {turn.member}", final)
            self._drop_asks(turn.room)  # a question nobody may answer any more
            self._request_waits()
            return None
        member = self.state.members[turn.member]
        position = self.state.next_position
        triggers = list(self.state.queue.get(turn.member, []))
        mid = message_id(turn.member, position, 0)
        result: dict[str, Any] = {"summary": turn.text or _voted(turn.votes)}
        if turn.text:
            result["posts"] = [{"roomId": turn.room, "text": turn.text,
                                "mentions": turn.mentions}]
        if turn.votes:
            result["votes"] = turn.votes
        self._emit("node.started", p.member_started(
            turn.member, attempt=0, turn=member.turns + 1, position=position,
            triggers=triggers), node_id=turn.member)
        self._emit("node.completed", {"nodeId": turn.member, "outputs": result},
                   node_id=turn.member)
        if turn.text:
            ask = self._asked(turn.room, turn.mentions)  # an agent's question it answers
            self._exchange(turn.room, mid, turn.member, turn.text, turn.mentions,
                           human=turn.role == "user", ts=turn.ts, steer=turn.steer)
            if ask is not None:
                self._answer_ask(ask, mid, turn.resume_value)
        self._request_waits()
        return mid if turn.text else None

    def _resolve_wait(self, turn: Accepted) -> None:
        """``interrupt.resolved`` for the member's open exchange interrupt, if any."""
        pending = self.state.interrupts.get(turn.member)
        if pending is not None:
            key, room_id = pending
            self._emit("interrupt.resolved",
                       p.interrupt_resolved(p.room_node_id(room_id), key, turn.resume_value),
                       node_id=p.room_node_id(room_id))

    def _request_waits(self) -> None:
        """``interrupt.requested`` (``conversation.exchange``) for each newly awaited turn.

        A human or external member whose turn is requested (queued) and not asked for yet is
        asked in the room of its latest trigger (its first open room for an initial turn).
        """
        state = self.state
        if state.terminal or not self.graph.awaits:
            return
        for member_id, triggers in state.queue.items():
            member = state.members[member_id]
            if not member.awaited or member_id in state.interrupts:
                continue
            room_id = state.messages[triggers[-1]].room if triggers and \
                triggers[-1] in state.messages else None
            if room_id is None or state.rooms[room_id].closed:
                room_id = next((r for r in member.rooms if not state.rooms[r].closed), None)
            if room_id is None:
                continue
            room = state.rooms[room_id]
            who = "a person" if member.human else "an external agent"
            prompt = (f"{member_id} ({who}): turn {member.turns + 1} in room {room_id}"
                      + (f", asked by {', '.join(triggers)}" if triggers else ""))
            self._emit("interrupt.requested",
                       p.interrupt_exchange(room.conversation_id, member_id, member.turns + 1,
                                            prompt), node_id=p.room_node_id(room_id))

    async def _only_human_input_since(self, base: int, batch: list[Inflight]) -> bool:
        """After a conflict (state re-folded), whether this driver may carry on.

        True when others appended only human posts since ``base`` and left ``batch`` in
        flight (a human joined from another process, e.g. ``wop reply`` or the TUI).
        """
        if self.state.terminal:
            return False
        for inflight in batch:
            now = self.state.inflight.get(inflight.member)
            if now is None or (now.position, now.attempt) != (inflight.position,
                                                              inflight.attempt):
                return False  # another driver took the turn over
        for event in await self.store.call(self.store.read, self.run_id, base):
            node = event.get("nodeId", "")
            if event["type"] == "conversation.exchanged":
                speaker = str(event["payload"].get("turn", {}).get("speakerId", ""))[5:]
                if speaker not in self.graph.members or \
                        not self.graph.members[speaker].awaited:
                    return False
            elif event["type"] in {"interrupt.requested", "interrupt.resolved"}:
                continue
            elif event["type"] not in {"node.started", "node.completed"} or not (
                    node in self.graph.members and self.graph.members[node].awaited):
                return False
        return True


def _voted(votes: list[dict[str, Any]]) -> str:
    return "; ".join(f"voted {v['choice']} on {v['decision']}" for v in votes)
