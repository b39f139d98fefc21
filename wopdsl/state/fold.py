"""Council run state as a pure, linear fold of the run's events."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterable, Sized
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from wopdsl._ids import parse_iso_ms
from wopdsl.model.construct import new_message
from wopdsl.protocol.codemap import ERA_V1, era_of
from wopdsl.protocol.envelope import RunEventDoc
from wopdsl.protocol.payloads import ASK_PREFIX, MEMBER_TYPE_ID, turn_sender
from wopdsl.state import lifecycle
from wopdsl.state.asks import AskState
from wopdsl.state.ids import exchange_member, position_of
from wopdsl.state.records import (
    Chair,
    DecisionState,
    Inflight,
    MemberState,
    RoomState,
    RunStatus,
)
from wopdsl.state.steering import STEERED, is_steer
from wopdsl.state.tools import ToolState, suspend
from wopdsl.state.usage import RunUsage
from wopdsl.state.views import StateViews

if TYPE_CHECKING:  # The model loads with the first message folded (wopdsl.model.construct).
    from wopdsl.model.turns import Message

__all__ = ["CouncilState", "exchange_member"]

_GC_PAUSE_EVENTS: Final = 1_000
"""Folds of at least this many events pause the cyclic GC."""


@dataclass(slots=True)
class CouncilState(StateViews):
    """Everything a council run's events say, folded in sequence order.

    ``apply`` is O(1) per event (plus the mentions of a post), so folding a log is linear.
    """

    run_id: str = ""
    workflow_id: str = ""
    task: str = ""
    council: dict[str, Any] = field(default_factory=dict)
    """The full declaration from ``run.started.metadata.council``."""
    metadata: dict[str, Any] = field(default_factory=dict)
    tail: int = 20
    concurrency: int = 1
    started_at: str = ""
    started_ms: int = 0
    ended_at: str = ""
    members: dict[str, MemberState] = field(default_factory=dict)
    rooms: dict[str, RoomState] = field(default_factory=dict)
    queue: dict[str, list[str]] = field(default_factory=dict)
    """Queued members (insertion order = queue order) with their triggering message ids."""
    inflight: dict[str, Inflight] = field(default_factory=dict)
    messages: dict[str, Message] = field(default_factory=dict)
    order: dict[str, int] = field(default_factory=dict)
    """Saved order of each message id."""
    sizes: dict[str, int] = field(default_factory=dict)
    """Per message id: a cheap upper-bound term of its size in a turn input (see _inputs)."""
    next_position: int = 1
    batch: int = 0
    """How many batches have been dispatched."""
    last_sequence: int = -1
    terminal: RunStatus | None = None
    error: dict[str, Any] | None = None
    failed_node: str | None = None
    outputs: dict[str, Any] | None = None
    divergences: list[dict[str, Any]] = field(default_factory=list)
    source_run_id: str | None = None
    """For a fork: the run it was forked from."""
    interrupts: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Awaited member -> ``(key, roomId)`` of its open ``conversation.exchange`` interrupt."""
    usage: RunUsage = field(default_factory=RunUsage)
    """Model usage per member and in total, from ``provider.usage``."""
    tools: ToolState = field(default_factory=ToolState)
    """Tool calls made and approvals awaited (``agent.toolCalled``, approval interrupts)."""
    asks: AskState = field(default_factory=AskState)
    """Questions ``a2a`` members' agents wait on, until a post in the room answers them."""
    paused: str | None = None
    """While an operator has paused the run (``run.paused``): the pause's reason."""
    paused_since_ms: int = 0
    """When the current pause began (epoch ms)."""
    paused_total_ms: int = 0
    """How long the run was paused before the current pause (the deadline does not count it)."""
    resumed_at: int = -1
    """The sequence of the last ``run.resumed``."""
    era: int = ERA_V1
    """The run's event-log era (``run.started``'s ``eventLogSchemaVersion``; absent: 2)."""
    decisions: dict[str, DecisionState] = field(default_factory=dict)
    """The council's decisions: votes and outcomes (DESIGN.md §22)."""
    chairing: Chair = field(default_factory=Chair)
    """The chair and its last turn (``[council] chair``)."""
    aliases: dict[str, str] = field(default_factory=dict)
    """Member → alias in anonymous rooms (``run.started.metadata.aliases``)."""
    steering: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Steering post id → the members whose turns in flight it stopped (steering.md)."""

    @classmethod
    def fold(cls, events: Iterable[RunEventDoc]) -> CouncilState:
        """Fold ``events`` (in sequence order) into a fresh state."""
        pause = _pause_gc(events)
        try:
            state = cls()
            state.apply_all(events)
        finally:
            if pause:
                gc.enable()
        return state

    def apply_all(self, events: Iterable[RunEventDoc]) -> None:
        """Apply ``events`` in sequence order (a long list with the cyclic GC paused)."""
        pause = _pause_gc(events)
        try:
            apply = self.apply
            for event in events:
                apply(event)
        finally:
            if pause:
                gc.enable()

    # -- the fold ------------------------------------------------------------------------

    def apply(self, event: RunEventDoc) -> None:
        """Apply one event. Unknown types are ignored (forward compatibility)."""
        self.last_sequence = event["sequence"]
        handler = _HANDLERS.get(event["type"])
        if handler is not None:
            handler(self, event)

    def _run_started(self, event: RunEventDoc) -> None:
        payload = event["payload"]
        self.run_id = event["runId"]
        self.workflow_id = payload["workflowId"]
        self.task = payload.get("inputs", {}).get("task", "")
        self.metadata = payload.get("metadata", {})
        self.era = era_of(payload)
        self.council = self.metadata.get("council", {})
        self.source_run_id = self.metadata.get("forkedFrom", {}).get("runId")
        self.started_at = event["timestamp"]
        self.started_ms = parse_iso_ms(event["timestamp"])
        settings = self.council.get("council", {})
        self.tail = settings.get("tail_messages", 20)
        self.concurrency = settings.get("global_concurrency", 1)
        default_cap = settings.get("max_turns_per_member", 8)
        rooms = self.council.get("rooms", [])
        for room in rooms:
            self.rooms[room["id"]] = RoomState(room["id"], tuple(room["members"]))
        for member in self.council.get("members", []):
            member_id = member["id"]
            self.members[member_id] = MemberState(
                id=member_id,
                role=member.get("role", ""),
                engine=member.get("engine", "python"),
                cap=member.get("max_turns") or default_cap,
                rooms=tuple(r["id"] for r in rooms if member_id in r["members"]),
            )
        self._setup_deliberation(self.council, self.metadata)
        for member in self.council.get("members", []):
            if self.queued_at_start(member["id"], member.get("initial_turn", True)):
                self.queue[member["id"]] = []

    def _node_started(self, event: RunEventDoc) -> None:
        payload = event["payload"]
        if payload.get("typeId") != MEMBER_TYPE_ID:
            return
        member = payload["nodeId"]
        current = self.inflight.get(member)
        if current is not None:
            # A retry of an interrupted turn: same position, next attempt; its triggers are
            # the first attempt's plus any steering post that stopped an attempt.
            current.restart(payload.get("attempt", current.attempt + 1), event["timestamp"],
                            self.paused_total_ms)
            for trigger in payload.get("triggers", ()):
                if trigger not in current.triggers:
                    current.triggers.append(trigger)
            if current.steered in current.triggers and \
                    current.steered in payload.get("triggers", ()):
                current.steered = None  # Restarted with the post in front of it.
            return
        self.start_turn(member, payload["position"], payload.get("attempt", 0),
                        payload["turn"] if "turn" in payload else self.members[member].turns + 1,
                        list(payload.get("triggers", ())), payload.get("batch", 0),
                        event["sequence"], event["timestamp"])

    def start_turn(self, member: str, position: int, attempt: int, turn: int,
                   triggers: list[str], batch: int, sequence: int, began: str) -> None:
        """A new turn of ``member`` is in flight (its ``node.started``, not a retry's)."""
        self.queue.pop(member, None)
        self.inflight[member] = Inflight(member, position, attempt, turn, triggers,
                                         since=sequence, began=began,
                                         began_paused_ms=self.paused_total_ms)
        if batch > self.batch:
            self.batch = batch
        if position >= self.next_position:
            self.next_position = position + 1

    def _node_resumed(self, event: RunEventDoc) -> None:
        room = self._room_of(event)
        if room is not None:
            room.gate_resumed = True
        elif (turn := self.inflight.get(event.get("nodeId", ""))) is not None:
            turn.suspended, turn.decided = None, turn.suspended is not None

    def _node_completed(self, event: RunEventDoc) -> None:
        room = self._room_of(event)
        if room is not None:
            room.gate_done = True
            return
        payload = event["payload"]
        self.complete_turn(payload.get("nodeId", ""), payload.get("outputs"))

    def complete_turn(self, node: str, outputs: Any) -> None:
        """Member ``node``'s turn in flight ended with ``outputs`` (its ``node.completed``)."""
        turn = self.inflight.get(node)
        member = self._finish(node)
        if member is not None and turn is not None:
            member.result = outputs
            member.failed = False
            if self.decisions and isinstance(outputs, dict) and "votes" in outputs:
                self._cast(member.id, outputs["votes"], turn.position)

    def _node_failed(self, event: RunEventDoc) -> None:
        member = self._finish(event["payload"].get("nodeId", ""))
        if member is not None:
            member.failed = True
            error = event["payload"].get("error")
            member.error = error if isinstance(error, dict) else None

    def _node_cancelled(self, event: RunEventDoc) -> None:
        self.inflight.pop(event["payload"].get("nodeId", ""), None)

    def _finish(self, node: str) -> MemberState | None:
        turn = self.inflight.pop(node, None)
        if turn is None:
            return None
        member = self.members[node]
        member.turns += 1
        self._answered(node, turn)
        return member

    def _opened(self, event: RunEventDoc) -> None:
        room = self._room_of(event)
        if room is not None:
            room.conversation_id = event["payload"]["conversationId"]
            room.last_event_id = event["eventId"]
            room.opened = True

    def _exchanged(self, event: RunEventDoc) -> None:
        room = self._room_of(event)
        if room is None:
            return
        payload = event["payload"]
        turn = payload["turn"]
        room.turn_index = payload["turnIndex"]
        room.last_event_id = event["eventId"]
        system = turn.get("role") == "system"
        if system and isinstance(turn.get("content"), dict):
            self._system_turn(room, turn["content"], event["sequence"])
        self._add_message(room, turn, queue=not system, steer=is_steer(turn))

    def _add_message(self, room: RoomState, turn: dict[str, Any], *, queue: bool,
                     steer: bool = False) -> None:
        content = turn.get("content") or {}
        if not isinstance(content, dict):
            content = {"text": str(content)}
        message_id = turn["messageId"]
        self.save_message(room, message_id, turn_sender(turn), content.get("text", ""),
                          list(content.get("mentions", [])), position_of(message_id),
                          queue=queue, steer=steer)

    def save_message(self, room: RoomState, message_id: str, sender: str, text: str,
                     mentions: list[str], position: int, *, queue: bool = True,
                     steer: bool = False) -> None:
        """Save a message of ``room`` and queue whom it requests (what folding its turn does).

        The engine calls it directly for the posts it writes (``EventWriter._post``), with
        the fields it built the turn from; ``mentions`` becomes the message's own list.
        """
        message = new_message(message_id, room.id, sender, text, mentions, position)
        self.order[message_id] = len(self.messages)
        size = len(text) + len(message_id) + 64 + 16 * len(mentions)
        self.sizes[message_id] = size
        self.messages[message_id] = message
        room.messages.append(message)
        room.sizes.append(size)
        if room.blind and queue:  # A blind round's posts, by sender (see RoomState.hidden_from).
            room.round_posts.setdefault(sender, []).append(message)
        if queue and mentions:
            member = self.members.get(sender)
            ask = self.asks.answered_by(room.id, mentions) if self.asks.open and \
                member is not None and member.awaited else None
            if ask is not None:  # The post is the asking member's input, not a request.
                mentions = [m for m in mentions if m != ask.member]
        if queue and steer:
            self._steer(room, sender, message_id, mentions)
        elif queue and mentions:
            self._request(room, sender, message_id, mentions)

    def _closed(self, event: RunEventDoc) -> None:
        room = self._room_of(event)
        if room is not None:
            room.closed = True
            room.turn_index = event["payload"]["turnIndex"]
            room.last_event_id = event["eventId"]
            final = event["payload"].get("finalTurn") or {}
            if final.get("role") in ("user", "agent"):
                # A close that carried a turn (RFC 0005 §E): the closing turn is a message.
                self._add_message(room, final, queue=False)
            # A person whose every room is closed can never answer: drop their request.
            for member_id in [m for m in self.queue if self.members[m].awaited]:
                if all(self.rooms[r].closed for r in self.members[member_id].rooms):
                    del self.queue[member_id]

    def _interrupt_requested(self, event: RunEventDoc) -> None:
        payload = event["payload"]
        if payload.get("kind") == "approval":
            self.tools.requested(event)
        if payload.get("kind") != "conversation.exchange":
            return
        if str(payload.get("key", "")).startswith(ASK_PREFIX):
            room_id = str((payload.get("data") or {}).get("conversationId", ""))
            self.asks.requested(event, room_id.rpartition(":room:")[2])
            return
        member = exchange_member(payload.get("key", ""))
        room = self._room_of(event)
        if member in self.members and room is not None:
            self.interrupts[member] = (payload["key"], room.id)

    def _interrupt_resolved(self, event: RunEventDoc) -> None:
        key = event["payload"].get("interruptId")
        if self.tools.resolved(str(key)) or self.asks.resolved(str(key)):
            return
        member = exchange_member(str(key))
        if self.interrupts.get(member, ("",))[0] == key:
            del self.interrupts[member]

    def _room_of(self, event: RunEventDoc) -> RoomState | None:
        node = event.get("nodeId", "")
        return self.rooms.get(node[5:]) if node.startswith("room:") else None

    def _provider_usage(self, event: RunEventDoc) -> None:
        self.usage.add(event)

    def _node_retried(self, event: RunEventDoc) -> None:
        payload = event["payload"]
        current = self.inflight.get(payload.get("nodeId", ""))
        if current is not None:
            current.retried = True
            error = payload.get("lastError")
            if isinstance(error, dict) and error.get("code") == STEERED:
                current.steers += 1


def _pause_gc(events: Iterable[RunEventDoc]) -> bool:
    """Pause the cyclic GC for a long fold; return whether the caller must re-enable it.

    A fold allocates objects that all survive (messages, in-flight records), which keeps
    triggering collections over a growing heap; it makes no reference cycles, so a long fold
    runs with the collector paused: about twice as fast at 30,000 events.
    """
    if isinstance(events, Sized) and len(events) >= _GC_PAUSE_EVENTS and gc.isenabled():
        gc.disable()
        return True
    return False


_HANDLERS: dict[str, Callable[[CouncilState, RunEventDoc], None]] = {
    "run.started": CouncilState._run_started,
    "node.started": CouncilState._node_started,
    "node.resumed": CouncilState._node_resumed,
    "node.completed": CouncilState._node_completed,
    "node.failed": CouncilState._node_failed,
    "node.cancelled": CouncilState._node_cancelled,
    "interrupt.requested": CouncilState._interrupt_requested,
    "interrupt.resolved": CouncilState._interrupt_resolved,
    "conversation.opened": CouncilState._opened,
    "conversation.exchanged": CouncilState._exchanged,
    "conversation.closed": CouncilState._closed,
    "run.completed": lifecycle.completed,
    "run.failed": lifecycle.failed,
    "run.cancelled": lifecycle.cancelled,
    "run.paused": lifecycle.paused,
    "run.resumed": lifecycle.resumed,
    "replay.diverged": lifecycle.diverged,
    "provider.usage": CouncilState._provider_usage,
    "node.retried": CouncilState._node_retried,
    "node.suspended": lambda state, event: suspend(state.inflight, event),
    "agent.toolCalled": lambda state, event: state.tools.called(event["payload"]),
}
