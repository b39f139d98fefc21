"""Check a stored run's events against the OpenWOP schemas and the log's own rules.

What ``wop check RUN`` runs (DESIGN.md §7, §10). Two kinds of checks:

- **schemas** (bundled, :mod:`wopdsl.protocol.openwop`): each event's envelope, its payload's
  ``$defs`` entry, the RFC 0005/0101 conversation shapes and every turn;
- **log rules** the schemas cannot express, one event at a time in sequence order:
  ``sequence`` (0, 1, 2 … and one ``runId``); ``terminal`` (nothing after ``run.completed``,
  ``run.failed`` or ``run.cancelled``); ``node`` (no node started twice without an end, a
  ``node.retried`` or a resume between; no end of a node that is not running);
  ``conversation`` (opened once, before any turn; nothing after ``closed``); ``turnIndex``
  (contiguous per conversation: 0 opened, then +1 per exchanged, then closed);
  ``causation`` (``opened`` caused by its gate's ``node.suspended``, each ``exchanged`` and
  ``closed`` by the conversation's previous turn event); ``roster`` (RFC 0101: an agent turn
  names a ``speakerId`` of the roster; a user turn comes ``from`` the literal ``"user"``);
  ``interrupt`` (every ``interrupt.resolved`` answers an open ``interrupt.requested``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from wopdsl.protocol.openwop import OpenWopSchemas, bundled_schemas

__all__ = ["Violation", "check_events"]

_TERMINAL: Final = frozenset({"run.completed", "run.failed", "run.cancelled"})
_NODE_ENDS: Final = frozenset({"node.completed", "node.failed", "node.cancelled",
                               "node.skipped"})


@dataclass(frozen=True, slots=True)
class Violation:
    """One broken rule: where (event sequence and type), which check, and what."""

    sequence: int | None
    """The offending event's ``sequence`` (``None`` for the log as a whole)."""
    type: str
    """The offending event's ``type``."""
    check: str
    """The check: ``envelope``, ``payload``, ``turn``, ``turnIndex``, ``roster`` …"""
    message: str
    """What is wrong, with the field path where it applies."""

    def __str__(self) -> str:
        where = "log" if self.sequence is None else f"#{self.sequence} {self.type}"
        return f"{where}: {self.check}: {self.message}"


@dataclass(slots=True)
class _Conversation:
    node: str
    roster: frozenset[str] | None
    turn_index: int = 0
    last_event_id: str = ""
    closed: bool = False


@dataclass(slots=True)
class _Checker:
    run_id: str | None = None
    expected: int = 0
    ended: str | None = None
    running: dict[str, int] = field(default_factory=dict)
    """Node id -> sequence of the ``node.started`` whose attempt has not ended."""
    suspended: dict[str, str] = field(default_factory=dict)
    """Gate node id -> ``eventId`` of its latest ``node.suspended``."""
    conversations: dict[str, _Conversation] = field(default_factory=dict)
    interrupts: set[str] = field(default_factory=set)
    """Keys of the ``interrupt.requested`` not resolved yet."""
    humans: frozenset[str] | None = None
    """``host:<member>`` of the council's human members (when ``run.started`` says)."""
    out: list[Violation] = field(default_factory=list)

    def bad(self, event: Mapping[str, Any], check: str, message: str) -> None:
        self.out.append(Violation(event.get("sequence"), str(event.get("type")), check,
                                  message))

    def feed(self, event: Mapping[str, Any]) -> None:
        type_ = event.get("type")
        payload = event.get("payload")
        if not isinstance(type_, str) or not isinstance(payload, dict):
            return  # The envelope check reports it.
        self._sequence(event)
        if self.ended is not None:
            self.bad(event, "terminal", f"event after {self.ended}")
        if type_ in _TERMINAL:
            self.ended = self.ended or type_
            if self.running:
                self.bad(event, "node", f"the run ended with node(s) still running: "
                         f"{', '.join(sorted(self.running))} (every started node ends first;"
                         " a room's gate ends after conversation.closed)")
        elif type_ == "run.started":
            self._council(payload)
        node = event.get("nodeId") or payload.get("nodeId")
        if isinstance(node, str):
            self._node(event, type_, node, payload)
        if type_.startswith("conversation."):
            self._conversation(event, type_, payload)
        elif type_ == "interrupt.requested":
            key = payload.get("key")
            if isinstance(key, str):
                if key in self.interrupts:
                    self.bad(event, "interrupt", f"interrupt {key!r} requested twice")
                self.interrupts.add(key)
        elif type_ == "interrupt.resolved":
            key = payload.get("interruptId")
            if key not in self.interrupts:
                self.bad(event, "interrupt", f"interrupt {key!r} resolved but not pending")
            self.interrupts.discard(str(key))

    def _sequence(self, event: Mapping[str, Any]) -> None:
        sequence = event.get("sequence")
        if sequence != self.expected:
            self.bad(event, "sequence", f"expected sequence {self.expected}, got {sequence}")
        if isinstance(sequence, int):
            self.expected = sequence + 1
        run_id = event.get("runId")
        if self.run_id is None:
            self.run_id = run_id
        elif run_id != self.run_id:
            self.bad(event, "sequence", f"runId {run_id!r} differs from {self.run_id!r}")

    def _council(self, payload: Mapping[str, Any]) -> None:
        council = (payload.get("metadata") or {}).get("council")
        if isinstance(council, dict) and isinstance(council.get("members"), list):
            self.humans = frozenset(f"host:{m.get('id')}" for m in council["members"]
                                    if isinstance(m, dict) and m.get("engine") == "human")

    def _node(self, event: Mapping[str, Any], type_: str, node: str,
              payload: Mapping[str, Any]) -> None:
        if type_ == "node.started":
            if node in self.running:
                self.bad(event, "node", f"node {node!r} started again (attempt "
                         f"{payload.get('attempt')}) while its attempt started at "
                         f"#{self.running[node]} never ended; a retry appends node.retried "
                         "first")
            self.running[node] = int(event.get("sequence") or 0)
        elif type_ == "node.retried":
            if node not in self.running:
                self.bad(event, "node", f"node.retried for {node!r}, which is not running")
            self.running.pop(node, None)
        elif type_ in _NODE_ENDS:
            if node not in self.running:
                self.bad(event, "node", f"{type_} for {node!r}, which is not running")
            self.running.pop(node, None)
        elif type_ == "node.suspended":
            self.suspended[node] = str(event.get("eventId"))

    def _conversation(self, event: Mapping[str, Any], type_: str,
                      payload: Mapping[str, Any]) -> None:
        cid = payload.get("conversationId")
        if not isinstance(cid, str):
            return
        convo = self.conversations.get(cid)
        if type_ == "conversation.opened":
            if convo is not None:
                self.bad(event, "conversation", f"conversation {cid!r} opened twice")
                return
            node = str(event.get("nodeId", ""))
            participants = payload.get("participants")
            roster = (frozenset(str(p.get("agentId")) for p in participants
                                if isinstance(p, dict))
                      if isinstance(participants, list) else None)
            self.conversations[cid] = _Conversation(node, roster,
                                                    last_event_id=str(event.get("eventId")))
            cause = self.suspended.get(node)
            if cause is not None and event.get("causationId") != cause:
                self.bad(event, "causation", f"causationId should be {cause!r} (the gate's "
                         "node.suspended)")
            self._turn(event, payload.get("initialTurn"), 0, None)
            return
        if convo is None:
            self.bad(event, "conversation", f"{type_} of {cid!r} before conversation.opened")
            return
        if convo.closed:
            self.bad(event, "conversation", f"{type_} after conversation {cid!r} closed")
        index = payload.get("turnIndex")
        if index != convo.turn_index + 1:
            self.bad(event, "turnIndex", f"turnIndex {index} should be {convo.turn_index + 1}"
                     " (contiguous per conversation)")
        if event.get("causationId") != convo.last_event_id:
            self.bad(event, "causation", f"causationId should be {convo.last_event_id!r} "
                     "(the conversation's previous turn event)")
        turn = payload.get("turn" if type_ == "conversation.exchanged" else "finalTurn")
        self._turn(event, turn, index, convo.roster)
        if isinstance(index, int):
            convo.turn_index = index
        convo.last_event_id = str(event.get("eventId"))
        if type_ == "conversation.closed":
            convo.closed = True

    def _turn(self, event: Mapping[str, Any], turn: Any, index: Any,
              roster: frozenset[str] | None) -> None:
        if not isinstance(turn, dict):
            return  # The schema check reports it.
        if turn.get("turnIndex") != index:
            self.bad(event, "turnIndex", f"the turn's turnIndex {turn.get('turnIndex')} "
                     f"differs from the event's {index}")
        role = turn.get("role")
        speaker = turn.get("speakerId")
        if role == "agent" and roster is not None and speaker not in roster:
            self.bad(event, "roster", f"agent turn speakerId {speaker!r} is not a participant"
                     f" ({', '.join(sorted(roster)) or 'empty roster'})")
        elif role == "user":
            if turn.get("from") != "user":
                self.bad(event, "roster", f"a user turn's from must be the literal 'user' "
                         f"(got {turn.get('from')!r})")
            if speaker is not None and self.humans is not None and speaker not in self.humans:
                self.bad(event, "roster", f"user turn speakerId {speaker!r} is not a human "
                         "member of the council")


def check_events(events: Iterable[Mapping[str, Any]], *,
                 schemas: OpenWopSchemas | None = None) -> list[Violation]:
    """Return every violation of the schemas and the log rules, in event order.

    Args:
        events: One run's events, in sequence order.
        schemas: The schemas to validate against (default: the bundled ones).
    """
    schemas = schemas or bundled_schemas()
    checker = _Checker()
    for event in events:
        for check, message in schemas.event_errors(event):
            checker.bad(event, check, message)
        checker.feed(event)
    return checker.out
