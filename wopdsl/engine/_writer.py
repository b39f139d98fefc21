"""Private: the engine's event writer — every change of a run as an OpenWOP event.

:class:`EventWriter` builds each event, folds it into the run's :class:`CouncilState` at once
(so later events of the same step see it) and commits what is pending in one transaction
(:meth:`EventWriter._flush`). It also writes the rooms' conversation lifecycle (RFC 0005,
with RFC 0101 rosters). :class:`~wopdsl.engine.core.Engine` adds the scheduling on top.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from wopdsl._ids import (
    Clock,
    FixedClock,
    SystemClock,
    conversation_id,
    event_id,
    iso_ms,
    parse_iso_ms,
)
from wopdsl.compile.graph import CouncilGraph
from wopdsl.errors import StoreUnavailable, ValidationError
from wopdsl.protocol import payloads as p
from wopdsl.protocol.envelope import SCHEMA_VERSION, RunEventDoc
from wopdsl.state import CouncilState
from wopdsl.store.base import Answer, EventStore

__all__ = ["EventWriter"]


class EventWriter:
    """Writes one run's events: built, folded into :attr:`state`, committed by ``_flush``.

    Args:
        graph: The compiled council.
        store: Where the run's events live.
        run_id: The run (new or existing); its log is read and folded here.
        clock: Time source for timestamps; a deterministic run (``metadata.clock`` is
            ``"fixed"``) resumes on a fixed clock that continues after its last event.
    """

    def __init__(self, graph: CouncilGraph, store: EventStore, run_id: str, *,
                 clock: Clock | None = None) -> None:
        self.graph = graph
        self.store = store
        self.run_id = run_id
        events = store.read(run_id)
        self.state = CouncilState.fold(events)
        if clock is None and events and self.state.metadata.get("clock") == "fixed":
            # A deterministic run stays deterministic when resumed: its clock continues.
            clock = FixedClock(start_ms=parse_iso_ms(events[-1]["timestamp"]) + 1)
        self.clock: Clock = clock or SystemClock()
        self._pending: list[RunEventDoc] = []
        self._blocking = store.blocking
        self._commit_lock: asyncio.Lock | None = None
        self._outage = False
        """Whether the store became unreachable during this drive (see ``Engine.drive``)."""
        self._rosters: dict[str, frozenset[str]] = {}
        self._stamp_second = -1
        self._stamp_prefix = ""
        self._stamp_ms = -1
        self._stamp = ""

    @property
    def settled(self) -> bool:
        """Whether every event applied to :attr:`state` is durable (none awaits a flush)."""
        return not self._pending

    # -- the event writer ------------------------------------------------------------------

    def _ms(self) -> int:
        return self.clock.now_ms()

    def _duration(self) -> int:
        return max(0, self._ms() - self.state.started_ms) if self.state.started_ms else 0

    def _emit(self, type_: str, payload: dict[str, Any], *, node_id: str | None = None,
              causation: str | None = None) -> RunEventDoc:
        event = self._event(type_, payload, node_id, causation)
        # Applied at once so later events of the same step see it; made durable by _flush.
        self.state.apply(event)
        self._pending.append(event)
        return event

    def _event(self, type_: str, payload: dict[str, Any], node_id: str | None,
               causation: str | None) -> RunEventDoc:
        """The next event of the run (the caller folds it, then adds it to ``_pending``)."""
        sequence = self.state.last_sequence + 1
        event: RunEventDoc = {
            "eventId": event_id(self.run_id, sequence),
            "runId": self.run_id,
            "type": type_,
            "payload": payload,
            "timestamp": self._timestamp(self.clock.now_ms()),
            "sequence": sequence,
            "schemaVersion": SCHEMA_VERSION,
        }
        if node_id is not None:
            event["nodeId"] = node_id
        if causation:
            event["causationId"] = causation
        return event

    def _timestamp(self, ms: int) -> str:
        """``iso_ms(ms)``, formatted once per millisecond (the date once per second)."""
        if ms == self._stamp_ms:
            return self._stamp
        second, millis = divmod(ms, 1000)
        if second != self._stamp_second:
            self._stamp_prefix = iso_ms(second * 1000)[:-5]  # Drops ".000Z".
            self._stamp_second = second
        self._stamp_ms = ms
        self._stamp = f"{self._stamp_prefix}.{millis:03d}Z"
        return self._stamp

    def _flush(self, answer: Answer | None = None) -> None:
        if not self._pending:
            return
        events, self._pending = self._pending, []
        try:
            self._append(events, answer)
        except BaseException:
            self.state = self._refolded()
            raise

    def _append(self, events: list[RunEventDoc], answer: Answer | None) -> None:
        if answer is None:
            self.store.append(self.run_id, events, events[0]["sequence"])
        else:
            self.store.append_answered(self.run_id, events, events[0]["sequence"], answer)

    async def _commit(self, answer: Answer | None = None) -> None:
        """Make the pending events durable, never holding the event loop on the store.

        In place for stores whose calls do not block (SQLite, memory: a thread hop would cost
        more than the append); on a worker thread for those whose calls may wait on a
        network (``EventStore.blocking``: PostgreSQL), commits in the order they were made.
        ``answer`` (an idempotent request's) is kept in the same transaction.
        """
        if not self._blocking:
            self._flush(answer)
            return
        if self._commit_lock is None:
            self._commit_lock = asyncio.Lock()
        async with self._commit_lock:
            if not self._pending:
                return
            events, self._pending = self._pending, []
            try:
                await asyncio.to_thread(self._append, events, answer)
            except StoreUnavailable:
                # Nothing can be read either: the drive stops, and the next one (the retry
                # after the outage) folds the log again before it goes on.
                self._outage = True
                raise
            except BaseException:
                self.state = await asyncio.to_thread(self._refolded)
                raise

    def _refolded(self) -> CouncilState:
        """The state of what is durable, after a failed append left the speculative one ahead.

        Empty when the store cannot be read either (it is unreachable): the next catch-up
        then folds the whole log again.
        """
        try:
            return CouncilState.fold(self.store.read(self.run_id))
        except Exception:
            return CouncilState()

    @contextlib.asynccontextmanager
    async def _claim(self) -> AsyncIterator[None]:
        """Hold the run's claim (``EventStore.claim``); taken on a worker thread if blocking."""
        claim = self.store.claim(self.run_id)
        if not self._blocking:
            with claim:
                yield
            return
        await asyncio.to_thread(claim.__enter__)
        try:
            yield
        finally:
            await asyncio.to_thread(claim.__exit__, None, None, None)

    def _catch_up(self) -> None:
        self.state.apply_all(self.store.read(self.run_id, self.state.last_sequence))

    async def _resync(self) -> None:
        """Fold the whole log again and drop what was not committed (after an outage)."""
        events = await self.store.call(self.store.read, self.run_id)
        self._pending = []
        self.state = CouncilState.fold(events)

    async def _acatch_up(self) -> None:
        """:meth:`_catch_up`, with the read on a worker thread for a blocking store."""
        if not self._blocking:
            self._catch_up()
            return
        events = await asyncio.to_thread(self.store.read, self.run_id, self.state.last_sequence)
        self.state.apply_all(events)

    # -- rooms -----------------------------------------------------------------------------

    def _open_room(self, room_id: str) -> None:
        room = self.graph.rooms[room_id]
        node = p.room_node_id(room_id)
        cid = conversation_id(self.run_id, room_id)
        self._emit("node.started", {"nodeId": node, "typeId": p.ROOM_TYPE_ID, "attempt": 0},
                   node_id=node)
        self._emit("interrupt.requested", p.interrupt_requested(cid, room.title), node_id=node)
        suspended = self._emit("node.suspended", {
            "nodeId": node, "interruptId": f"{cid}:start", "key": f"{cid}:start",
            "reason": "conversation-input"}, node_id=node)
        participants = [
            {"agentId": p.agent_ref(m), "name": self.graph.members[m].spec.role}
            for m in self.graph.participants(room_id)
        ]
        initial = p.system_turn(cid, 0, self.graph.spec.task, self._ms(), room_id)
        self._emit("conversation.opened",
                   p.conversation_opened(cid, participants, initial, room.turn_schema),
                   node_id=node, causation=suspended["eventId"])

    def _exchange(self, room_id: str, mid: str, sender: str, text: str, mentions: list[str],
                  *, human: bool, ts: int | None = None,
                  model: dict[str, str] | None = None, steer: bool = False) -> None:
        room = self.state.rooms[room_id]
        if room.closed:
            raise ValidationError(f"conversation of room '{room_id}' is closed",
                                  hint="no turn may follow conversation.closed")
        turn = p.post_turn(mid, sender, human=human, text=text, mentions=mentions,
                           ts=self._ms() if ts is None else ts, index=room.turn_index + 1,
                           room_id=room_id, model=model, steer=steer)
        if not human and turn.get("speakerId") not in self._roster(room_id):
            # Fail closed (RFC 0101 §Security): never append an unattributed agent turn.
            raise ValidationError(f"speaker {sender} is not a participant of room '{room_id}'")
        self._emit("conversation.exchanged", p.conversation_exchanged(room.conversation_id, turn),
                   node_id=p.room_node_id(room_id), causation=room.last_event_id)

    def _post(self, room_id: str, mid: str, sender: str, text: str, mentions: list[str],
              position: int, model: dict[str, str] | None) -> None:
        """A member's checked post: :meth:`_exchange` and the fold of its event in one step.

        Writes the same event as ``_exchange(..., human=False)`` and leaves the state as
        folding it would (``CouncilState.save_message`` with the fields the turn was built
        from), without reading them back out of the event.
        """
        state = self.state
        room = state.rooms[room_id]
        if room.closed:
            raise ValidationError(f"conversation of room '{room_id}' is closed",
                                  hint="no turn may follow conversation.closed")
        index = room.turn_index + 1
        # The event's own list: the result's (a later turn's ``Turn.result``, which its
        # handler may change) is not the logged one, and observers read events after that.
        turn = p.post_turn(mid, sender, human=False, text=text, mentions=list(mentions),
                           ts=self._ms(), index=index, room_id=room_id, model=model)
        if turn["speakerId"] not in self._roster(room_id):
            # Fail closed (RFC 0101 §Security): never append an unattributed agent turn.
            raise ValidationError(f"speaker {sender} is not a participant of room '{room_id}'")
        event = self._event("conversation.exchanged",
                            p.conversation_exchanged(room.conversation_id, turn),
                            p.room_node_id(room_id), room.last_event_id)
        state.last_sequence = event["sequence"]
        room.turn_index = index
        room.last_event_id = event["eventId"]
        state.save_message(room, mid, sender, text, list(mentions), position)
        self._pending.append(event)

    def _note(self, room_id: str, text: str, **facts: Any) -> None:
        """A ``system`` turn in the room's conversation carrying ``facts`` in its content."""
        room = self.state.rooms[room_id]
        turn = p.system_turn(room.conversation_id, room.turn_index + 1, text, self._ms(),
                             room_id)
        turn["content"].update(facts)
        self._emit("conversation.exchanged", p.conversation_exchanged(room.conversation_id,
                                                                      turn),
                   node_id=p.room_node_id(room_id), causation=room.last_event_id)

    def _roster(self, room_id: str) -> frozenset[str]:
        roster = self._rosters.get(room_id)
        if roster is None:  # The graph never changes: build each room's roster once.
            roster = frozenset(p.agent_ref(m) for m in self.graph.participants(room_id))
            self._rosters[room_id] = roster
        return roster

    def _close_room(self, room_id: str, outcome: Any, text: str,
                    final: dict[str, Any] | None = None) -> None:
        """Close a room's conversation, then resume and end its gate node.

        ``final`` is the closing turn a ``close`` carried (else a ``system`` turn says
        ``text``). A room closed earlier whose gate never ended (a fork cut between
        ``conversation.closed`` and the gate's ``node.completed``) gets its gate finished.
        """
        room = self.state.rooms[room_id]
        if not room.opened:
            return
        if room.closed:
            self._finish_gate(room_id, outcome)
            return
        node = p.room_node_id(room_id)
        if final is None:
            final = p.system_turn(room.conversation_id, room.turn_index + 1, text, self._ms(),
                                  room_id)
        self._emit("conversation.closed",
                   p.conversation_closed(room.conversation_id, final, outcome),
                   node_id=node, causation=room.last_event_id)
        self._finish_gate(room_id, outcome)

    def _finish_gate(self, room_id: str, outcome: Any) -> None:
        room = self.state.rooms[room_id]
        node = p.room_node_id(room_id)
        if not room.gate_resumed:
            self._emit("node.resumed", {
                "nodeId": node, "interruptId": f"{room.conversation_id}:start",
                "resumeValue": {"operation": "close", "outcome": outcome}},
                node_id=node, causation=room.last_event_id)
        if not room.gate_done:
            self._emit("node.completed", {"nodeId": node, "outputs": {
                "conversationId": room.conversation_id, "messages": len(room.messages)}},
                node_id=node)

    def _finish_gates(self) -> None:
        """End the gate of every closed room whose gate is still open (see _close_room)."""
        for room_id, room in self.state.rooms.items():
            if room.closed and not room.gate_done:
                self._finish_gate(room_id, None)

    def _close_all(self, outcome: Any, text: str) -> None:
        for room_id in self.state.rooms:
            self._close_room(room_id, outcome, text)
