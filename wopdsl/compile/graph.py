"""The executable form of a council: ``CouncilGraph`` and its compiled members and rooms."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from wopdsl.agents.base import MemberAgent
from wopdsl.agents.templates import Renderer
from wopdsl.errors import RosterExceeded
from wopdsl.model.spec import CouncilSpec, MemberSpec

__all__ = ["CompiledMember", "CompiledRoom", "Compiles", "CouncilGraph"]


@dataclass(frozen=True, slots=True)
class CompiledRoom:
    """A room, ready to check posts against."""

    id: str
    """Room id."""
    members: tuple[str, ...]
    """Members in declaration order of the room."""
    member_set: frozenset[str]
    """The same, for membership tests."""
    title: str
    """Title for UIs (defaults to the id)."""
    turn_schema: dict[str, Any] | None
    """JSON Schema for post content, if declared."""
    check_content: Callable[[dict[str, Any]], str | None] | None
    """Returns a violation message for content breaking ``turn_schema``, else ``None``."""


@dataclass(frozen=True, slots=True)
class CompiledMember:
    """A member, ready to run."""

    spec: MemberSpec
    """The declaration."""
    index: int
    """Position in declaration order."""
    cap: int
    """Most turns in one run."""
    rooms: tuple[str, ...]
    """Rooms this member belongs to, in room declaration order."""
    brief: Renderer
    """The compiled brief template."""
    agent: MemberAgent | None
    """Who produces turns; ``None`` for a python member with no handler bound yet."""
    turn_timeout_s: float | None
    """Per-turn timeout in seconds."""
    max_input_bytes: int
    """Turn-input size cap."""
    max_output_bytes: int
    """Turn-result size cap."""
    retries: int = 0
    """How many times a failed turn runs again."""
    masked: bool = False
    """Whether it is in a blind or anonymous room (its input is not a plain tail)."""
    retry_backoff_ms: int = 100
    """Base delay before a retry (doubling with each retry)."""

    @property
    def id(self) -> str:
        """The member id."""
        return self.spec.id

    @property
    def human(self) -> bool:
        """Whether a person produces this member's turns."""
        return self.spec.engine == "human"

    @property
    def external(self) -> bool:
        """Whether an agent outside the process submits this member's turns (DESIGN.md §6)."""
        return self.spec.engine == "external"

    @property
    def awaited(self) -> bool:
        """Whether the run waits for this member's turns to be submitted (human, external)."""
        return self.spec.engine in ("human", "external")


@dataclass(frozen=True, slots=True)
class CouncilGraph:
    """A compiled council: what the engine executes. Build it with ``compile()``."""

    spec: CouncilSpec
    """The declaration it was compiled from."""
    members: dict[str, CompiledMember]
    """Members by id, in declaration order."""
    rooms: dict[str, CompiledRoom]
    """Rooms by id, in declaration order."""
    digest: str
    """``sha256:`` digest of the declaration."""
    source: str | None = None
    """The council file, when loaded from one (recorded in ``run.started``)."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Extra ``run.started`` metadata (e.g. handler names of decorator councils)."""
    definition: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    """The declaration as JSON data (``run.started`` metadata ``council``), built once and
    shared by every run started from this graph: read-only."""

    @property
    def id(self) -> str:
        """The council id."""
        return self.spec.council.id

    deliberates: bool = field(init=False, compare=False, repr=False, default=False)
    """Whether the council has rounds, decisions or a chair (DESIGN.md §22)."""

    awaits: bool = field(init=False, compare=False, repr=False, default=False)
    """Whether some member's turns come from outside (``human``, ``external``)."""

    def __post_init__(self) -> None:
        spec = self.spec
        object.__setattr__(self, "deliberates", bool(spec.decisions) or
                           spec.council.chair is not None or
                           any(room.rounds is not None for room in spec.rooms))
        object.__setattr__(self, "awaits", any(m.engine in ("human", "external")
                                               for m in spec.members))

    def participants(self, room_id: str) -> list[str]:
        """Return the room's RFC 0101 roster: its agent (non-human) members, in room order."""
        return [m for m in self.rooms[room_id].members if not self.members[m].human]

    def check_rosters(self, max_participants: int) -> None:
        """Refuse a room with more agent participants than the host allows (RFC 0101).

        Raises:
            RosterExceeded: a room's roster exceeds ``max_participants`` (a
                ``ValidationError`` whose wire code is ``conversation_roster_exceeded``).
        """
        for room_id in self.rooms:
            roster = self.participants(room_id)
            count = len(roster)
            if count > max_participants:
                raise RosterExceeded(
                    f"room '{room_id}' has {count} participants; this host allows at most "
                    f"{max_participants} (multiPartyConversation.maxParticipants)",
                    hint="split the room, or raise --max-participants",
                    details={"maxParticipants": max_participants, "roomId": room_id,
                             "participants": count},
                )

    def toolsets(self) -> dict[str, Any]:
        """Each ``llm`` member's :class:`~wopdsl.agents.tools.Toolset`, by member id."""
        found = {m.id: getattr(m.agent, "toolset", None) for m in self.members.values()}
        return {member: toolset for member, toolset in found.items() if toolset is not None}

    def unbound(self) -> list[str]:
        """Return the python members that have no handler bound."""
        return [m.id for m in self.members.values() if m.agent is None]

    def to_json(self) -> dict[str, Any]:
        """Return a stable JSON description of the graph (for snapshots and docs)."""
        return {
            "id": self.id,
            "digest": self.digest,
            "limits": {
                "global_concurrency": self.spec.council.global_concurrency,
                "tail_messages": self.spec.council.tail_messages,
            },
            "rooms": [
                {"id": r.id, "members": list(r.members), "schema": r.turn_schema is not None}
                for r in self.rooms.values()
            ],
            "members": [
                {
                    "id": m.id,
                    "role": m.spec.role,
                    "engine": m.spec.engine,
                    "initial_turn": m.spec.initial_turn,
                    "cap": m.cap,
                    "rooms": list(m.rooms),
                }
                for m in self.members.values()
            ],
        }

    def to_mermaid(self) -> str:
        """Return a Mermaid flowchart: rooms as subgraphs, members as nodes."""
        lines = ["flowchart LR"]
        for member in self.members.values():
            shape = f'{member.id}[/"{member.id} ({member.spec.role})"/]' if member.human else (
                f'{member.id}["{member.id} ({member.spec.role})"]'
            )
            lines.append(f"    {shape}")
        for room in self.rooms.values():
            lines.append(f'    subgraph room_{_mermaid_id(room.id)}["{room.title}"]')
            lines.extend(f"        {m}" for m in room.members)
            lines.append("    end")
        return "\n".join(lines) + "\n"

    def __repr__(self) -> str:
        return f"CouncilGraph({json.dumps(self.id)}, members={list(self.members)})"


def _mermaid_id(text: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in text)


class Compiles(Protocol):
    """What a run needs of a council to drive it: its compiled graph (``wopdsl.Council``)."""

    def compile(self) -> CouncilGraph:
        """Return the council's graph, handlers bound."""
        ...
