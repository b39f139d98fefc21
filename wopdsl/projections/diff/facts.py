"""What ``wop diff`` reads from one run: its folded state plus a few facts the fold lacks.

:class:`RunFacts` folds a run's events once, in sequence order (any iterable: the events may
stream). It keeps the run's :class:`~wopdsl.state.CouncilState` (rooms, messages, members,
turns, usage, outcome: the one fold every reader shares) and adds what only a comparison
needs: the speaking order, tool calls per member, and a compact list of *facts* (a turn
dispatched, a turn's result, a message saved, the run's end), each a hash with the event's
sequence and type and a short label in words, to find where two runs first diverge. Memory
is linear in the run; no event is kept.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from wopdsl.protocol.envelope import RunEventDoc
from wopdsl.protocol.payloads import MEMBER_TYPE_ID, posted_turn, turn_sender
from wopdsl.state import TERMINAL_EVENTS, CouncilState

__all__ = ["Fact", "RunFacts", "canonical", "fold_facts"]


class Fact(NamedTuple):
    """One council fact of a run, in log order."""

    key: int
    """Hash of what happened (no ids, no timestamps): equal facts have equal keys."""
    sequence: int
    """The sequence of the event that recorded it."""
    event: str
    """That event's type (``node.completed``, ``conversation.exchanged`` …)."""
    label: str
    """What happened, in words (``me's turn 1 ended: "Aurora"``)."""


@dataclass(slots=True)
class RunFacts:
    """A run folded for comparison (see the module docs)."""

    state: CouncilState = field(default_factory=CouncilState)
    """The run's state (the shared fold)."""
    order: list[str] = field(default_factory=list)
    """The member of each dispatched turn, in dispatch order (people included)."""
    tool_calls: Counter[str] = field(default_factory=Counter)
    """``agent.toolCalled`` events per member."""
    failures: Counter[str] = field(default_factory=Counter)
    """Failed turns per member."""
    facts: list[Fact] = field(default_factory=list)
    """The council facts, in log order."""
    _positions: set[int] = field(default_factory=set)
    _turns: Counter[str] = field(default_factory=Counter)
    """Turns dispatched per member (a member's turns run one at a time)."""

    def apply(self, event: RunEventDoc) -> None:
        """Fold one event (in sequence order)."""
        self.state.apply(event)
        kind = event["type"]
        payload = event["payload"]
        if kind == "node.started" and payload.get("typeId") == MEMBER_TYPE_ID:
            position = payload.get("position", 0)
            if position not in self._positions:  # a retry keeps its turn's position
                self._positions.add(position)
                member = payload["nodeId"]
                self.order.append(member)
                self._turns[member] += 1
                self._fact(event, f"{member}'s turn {self._turns[member]} began", "turn",
                           member, position)
        elif kind in ("node.completed", "node.failed") and \
                payload.get("nodeId") in self.state.members:
            member = payload["nodeId"]
            if kind == "node.completed":
                outputs = payload.get("outputs")
                if isinstance(outputs, dict):
                    # Its posts are facts of their own (the messages saved), compared apart.
                    outputs = {k: v for k, v in outputs.items() if k != "posts"}
                summary = outputs.get("summary", "") if isinstance(outputs, dict) else ""
                self._fact(event, f"{member}'s turn {self._turns[member]} ended: "
                           f"{_quoted(str(summary))}", "result", member, canonical(outputs))
            else:
                self.failures[member] += 1
                code = (payload.get("error") or {}).get("code", "")
                self._fact(event, f"{member}'s turn {self._turns[member]} failed ({code})",
                           "failed", member, code)
        elif kind == "agent.toolCalled":
            member = str(event.get("nodeId") or payload.get("agentId", ""))
            self.tool_calls[member.removeprefix("host:")] += 1
        elif kind in TERMINAL_EVENTS:
            status = TERMINAL_EVENTS[kind]
            detail = payload.get("outputs") if status == "completed" else \
                (payload.get("error") or {}).get("code")
            code = f" ({detail})" if status != "completed" and detail else ""
            self._fact(event, f"the run {status}{code}", "end", status, canonical(detail))
        else:
            turn = posted_turn(event)
            if turn is not None:
                content = turn.get("content") or {}
                if not isinstance(content, dict):
                    content = {"text": str(content)}
                room = str(turn.get("groupId") or event.get("nodeId", "")[5:])
                sender = turn_sender(turn)
                text = str(content.get("text", ""))
                self._fact(event, f"{sender} said in room {room} ({turn.get('messageId')}): "
                           f"{_quoted(text)}", "message", room, sender, text,
                           tuple(content.get("mentions", ())))

    def _fact(self, event: RunEventDoc, label: str, *key: Any) -> None:
        self.facts.append(Fact(hash(key), event["sequence"], event["type"], label))


def fold_facts(events: Iterable[RunEventDoc]) -> RunFacts:
    """Fold ``events`` (in sequence order) into :class:`RunFacts`."""
    facts = RunFacts()
    apply = facts.apply
    for event in events:
        apply(event)
    return facts


def _quoted(text: str, most: int = 60) -> str:
    """``text`` on one line, at most ``most`` characters, in double quotes."""
    line = text.replace("\n", " ")
    return '"' + (line if len(line) <= most else line[: most - 1] + "…") + '"'


def canonical(value: Any) -> str:
    """``value`` as compact JSON with sorted keys (to compare JSON values)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
