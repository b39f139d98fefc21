"""The comparison of two runs as data: what ``wop diff --json`` prints and the views render.

Plain frozen dataclasses; :meth:`DiffData.to_json` gives the stable JSON document (described
in ``docs/guides/diff.md``). Unchanged stretches of a transcript are kept as counts, not as
messages, so the result grows with the differences, not with the runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

__all__ = ["DiffData", "Divergence", "Entry", "ForkLink", "MemberDiff", "MemberStats", "Msg",
           "OrderDiff", "Outcome", "Point", "RoomDiff", "RunSide"]


class Msg(NamedTuple):
    """A saved message as the diff shows it."""

    id: str
    sender: str
    mentions: tuple[str, ...]
    text: str

    def to_json(self) -> dict[str, Any]:
        """``{id, sender, mentions, text}``."""
        return {"id": self.id, "sender": self.sender, "mentions": list(self.mentions),
                "text": self.text}


@dataclass(frozen=True, slots=True)
class Entry:
    """One step of an aligned room: a stretch both runs share, or one message's change."""

    op: Literal["same", "added", "removed", "changed"]
    """``same`` (``count`` messages alike), ``added`` (only in B), ``removed`` (only in A),
    ``changed`` (same sender, other text or mentions)."""
    a: Msg | None = None
    """A's message (for ``same``: the stretch's first message in A)."""
    b: Msg | None = None
    """B's message (for ``same``: the stretch's last message in A)."""
    count: int = 1
    """How many messages (``same`` only)."""

    def to_json(self) -> dict[str, Any]:
        """``{op: same, count}`` or ``{op, a?, b?}``."""
        if self.op == "same":
            return {"op": "same", "count": self.count}
        doc: dict[str, Any] = {"op": self.op}
        if self.a is not None:
            doc["a"] = self.a.to_json()
        if self.b is not None:
            doc["b"] = self.b.to_json()
        return doc


@dataclass(frozen=True, slots=True)
class RoomDiff:
    """One room's transcripts aligned."""

    room: str
    members_a: tuple[str, ...] | None
    """The room's members in A (``None``: A has no such room)."""
    members_b: tuple[str, ...] | None
    entries: tuple[Entry, ...]

    def count(self, op: str) -> int:
        """How many messages are ``op`` (``same``, ``added``, ``removed``, ``changed``)."""
        return sum(e.count for e in self.entries if e.op == op)

    @property
    def equal(self) -> bool:
        """Whether both runs have the room with the same messages."""
        return self.members_a == self.members_b and all(e.op == "same" for e in self.entries)

    def to_json(self) -> dict[str, Any]:
        """``{room, membersA, membersB, equal, same, added, removed, changed, entries}``."""
        return {"room": self.room, "membersA": _list(self.members_a),
                "membersB": _list(self.members_b), "equal": self.equal,
                **{op: self.count(op) for op in ("same", "added", "removed", "changed")},
                "entries": [e.to_json() for e in self.entries]}


class MemberStats(NamedTuple):
    """One member's work in one run."""

    turns: int
    failed: int
    calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    tool_calls: int

    def to_json(self) -> dict[str, Any]:
        """``{turns, failed, modelCalls, inputTokens, outputTokens, costUsd, toolCalls}``."""
        return {"turns": self.turns, "failed": self.failed, "modelCalls": self.calls,
                "inputTokens": self.input_tokens, "outputTokens": self.output_tokens,
                "costUsd": None if self.cost_usd is None else round(self.cost_usd, 6),
                "toolCalls": self.tool_calls}


@dataclass(frozen=True, slots=True)
class MemberDiff:
    """A member's turns, tokens, cost and tool calls in both runs."""

    member: str
    a: MemberStats | None
    """``None``: the member is not in A's council."""
    b: MemberStats | None
    result_changed: bool
    """Whether its final result differs."""

    @property
    def equal(self) -> bool:
        """Same work and the same final result."""
        return self.a == self.b and not self.result_changed

    def to_json(self) -> dict[str, Any]:
        """``{member, equal, resultChanged, a, b}``."""
        return {"member": self.member, "equal": self.equal,
                "resultChanged": self.result_changed,
                "a": None if self.a is None else self.a.to_json(),
                "b": None if self.b is None else self.b.to_json()}


@dataclass(frozen=True, slots=True)
class OrderDiff:
    """Who spoke in which order: the member of each dispatched turn."""

    a: tuple[str, ...]
    b: tuple[str, ...]

    @property
    def first_difference(self) -> int | None:
        """The 0-based turn where the orders part (``None``: the same order)."""
        for index, (x, y) in enumerate(zip(self.a, self.b, strict=False)):
            if x != y:
                return index
        return None if len(self.a) == len(self.b) else min(len(self.a), len(self.b))

    def to_json(self) -> dict[str, Any]:
        """``{equal, firstDifference, a, b}``."""
        first = self.first_difference
        return {"equal": first is None, "firstDifference": first, "a": list(self.a),
                "b": list(self.b)}


class Point(NamedTuple):
    """Where a fact is in one run: its event (sequence and type) and what happened."""

    sequence: int
    event: str
    """The event's type (``node.completed``, ``conversation.exchanged`` …)."""
    label: str
    """What happened, in words."""


@dataclass(frozen=True, slots=True)
class Divergence:
    """The first council fact (turn, result, message, end) where the runs part."""

    index: int
    """0-based number of the fact in both runs' fact lists."""
    a: Point | None
    """A's fact there (``None``: A has no more facts)."""
    b: Point | None

    def to_json(self) -> dict[str, Any]:
        """``{fact, a: {sequence, event, what} | null, b: …}``."""
        def side(point: Point | None) -> dict[str, Any] | None:
            return None if point is None else {"sequence": point.sequence,
                                               "event": point.event, "what": point.label}

        return {"fact": self.index, "a": side(self.a), "b": side(self.b)}


@dataclass(frozen=True, slots=True)
class ForkLink:
    """One run forked from the other (or both from a third)."""

    child: Literal["a", "b", "both"]
    source: str
    """The source run id."""
    at_sequence: int
    mode: str

    def to_json(self) -> dict[str, Any]:
        """``{child, source, atSequence, mode}``."""
        return {"child": self.child, "source": self.source, "atSequence": self.at_sequence,
                "mode": self.mode}


@dataclass(frozen=True, slots=True)
class RunSide:
    """One of the two runs, in brief."""

    run_id: str
    council: str
    version: Any
    digest: str
    status: str
    events: int
    messages: int
    error: dict[str, Any] | None
    forked_from: dict[str, Any] | None
    """``run.started.metadata.forkedFrom`` ``{runId, atSequence, mode}``."""
    divergences: tuple[dict[str, Any], ...]
    """Its own ``replay.diverged`` reports (replay forks)."""

    def to_json(self) -> dict[str, Any]:
        """The run in brief: ``{runId, council, version, digest, status, …}``."""
        return {"runId": self.run_id, "council": self.council, "version": self.version,
                "digest": self.digest, "status": self.status, "events": self.events,
                "messages": self.messages, "error": self.error,
                "forkedFrom": self.forked_from, "replayDiverged": list(self.divergences)}


@dataclass(frozen=True, slots=True)
class Outcome:
    """How each run ended."""

    a: str
    b: str
    error_a: dict[str, Any] | None
    error_b: dict[str, Any] | None
    results_equal: bool
    """Whether the council results (``run.completed.outputs``) are the same."""

    @property
    def equal(self) -> bool:
        """Same status, same error code, same result."""
        return self.a == self.b and _code(self.error_a) == _code(self.error_b) and \
            self.results_equal

    def to_json(self) -> dict[str, Any]:
        """``{equal, a, b, errorA, errorB, resultsEqual}``."""
        return {"equal": self.equal, "a": self.a, "b": self.b, "errorA": self.error_a,
                "errorB": self.error_b, "resultsEqual": self.results_equal}


@dataclass(frozen=True, slots=True)
class DiffData:
    """Two runs compared (built by :func:`wopdsl.projections.diff.diff_runs`)."""

    a: RunSide
    b: RunSide
    fork: ForkLink | None
    divergence: Divergence | None
    rooms: tuple[RoomDiff, ...]
    order: OrderDiff
    members: tuple[MemberDiff, ...]
    outcome: Outcome

    @property
    def same_council(self) -> bool:
        """Whether both are runs of the same council id."""
        return self.a.council == self.b.council

    @property
    def same_declaration(self) -> bool:
        """Whether both ran the same declaration (same council digest)."""
        return self.same_council and self.a.digest == self.b.digest

    @property
    def equal(self) -> bool:
        """Same declaration, transcripts, speaking order, work per member and outcome."""
        return (self.same_declaration and self.divergence is None
                and all(r.equal for r in self.rooms) and self.order.first_difference is None
                and all(m.equal for m in self.members) and self.outcome.equal)

    def to_json(self) -> dict[str, Any]:
        """The ``wop diff --json`` document (see ``docs/guides/diff.md``)."""
        return {"equal": self.equal, "sameCouncil": self.same_council,
                "sameDeclaration": self.same_declaration, "a": self.a.to_json(),
                "b": self.b.to_json(),
                "fork": None if self.fork is None else self.fork.to_json(),
                "firstDivergence": None if self.divergence is None else
                self.divergence.to_json(),
                "rooms": [r.to_json() for r in self.rooms], "order": self.order.to_json(),
                "members": [m.to_json() for m in self.members],
                "outcome": self.outcome.to_json()}


def _list(members: tuple[str, ...] | None) -> list[str] | None:
    return None if members is None else list(members)


def _code(error: dict[str, Any] | None) -> Any:
    return None if error is None else error.get("code")
