"""The member-engine contract: who produces a member's turns."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from wopdsl.model.turns import Turn

if TYPE_CHECKING:
    from wopdsl.agents.budget import RunBudget
    from wopdsl.agents.tools.journal import ToolJournal

__all__ = ["MemberAgent", "TurnRecorder", "turn_context"]


class TurnRecorder(Protocol):
    """What an agent may write to the run's log while its turn runs (given by the engine).

    Events are appended in call order, made durable without waiting for the batch to settle
    (live viewers see them), and attributed to the turn's node.
    """

    node_id: str
    """The member's node id."""
    attempt: int
    """The turn's current attempt (0-based; raised by :meth:`retried`)."""
    position: int
    """The turn's dispatch position in the run (1 first; the middle of its message ids)."""
    budget: RunBudget | None
    """The run's budget, shared by the turns in flight (``None``: no limits, no usage)."""
    requestable: frozenset[str]
    """The members a post of this turn may mention: those queued already, and those with a
    turn left under their cap once the turns in flight are counted (a mention of anyone
    else would fail the run with ``TEAM_TURN_LIMIT``)."""
    endpoints: dict[str, str]
    """Model profile name → the base URL the run recorded for it (``run.started`` metadata
    ``models``), for profiles without ``base_url``: resume and forks call the same server."""
    @property
    def journal(self) -> ToolJournal:
        """What the turn's tool calls keep, for exactly-once effects (DESIGN.md §20)."""

    def record(self, type_: str, payload: dict[str, Any]) -> None:
        """Append one event (``prompt.composed``, ``provider.usage``, ``budget.*`` …)."""

    def chunk(self, text: str, *, last: bool = False) -> None:
        """Stream output: coalesced into ``output.chunk`` events for live subscribers."""

    def retried(self, delay_ms: int, error: dict[str, Any]) -> None:
        """Record a retry: ``node.retried`` then the turn's ``node.started`` as attempt + 1."""


class MemberAgent(ABC):
    """Produces a member's turn results. One instance per member per compiled graph."""

    kind: ClassVar[str]
    """The ``engine`` name in the council file."""

    inline: ClassVar[bool] = False
    """Whether the engine may await a lone turn in its own task rather than a new one.

    For agents whose turns do not depend on running in a task of their own: the ``script``
    engine (no user code) and ``python`` handlers, which keep a context of their own (see
    :func:`wopdsl.agents.python.in_context`), so context variables they set never leak.
    """

    @property
    def quick(self) -> bool:
        """Whether this agent's next turn is known to end at once, in place, never suspending.

        A lone quick turn may run while the turns settled just before it are still being
        gathered into one commit (docs/performance.md, "Quick turns commit together").
        """
        return False

    @abstractmethod
    async def take_turn(self, turn: Turn) -> object:
        """Return the raw turn result: a ``Reply``, a JSON dict or a summary string.

        Raises:
            TurnError: the turn failed with a stable code (e.g. ``SCRIPT_EXHAUSTED``).
        """

    records: ClassVar[bool] = False
    """Whether the engine calls :meth:`take_recorded_turn` with a :class:`TurnRecorder`."""

    async def take_recorded_turn(self, turn: Turn, recorder: TurnRecorder) -> object:
        """Like :meth:`take_turn`, writing events through ``recorder`` (``records`` agents)."""
        return await self.take_turn(turn)

    async def start(self) -> None:  # noqa: B027 - optional hook, a no-op by default
        """A run that may call this agent starts being driven (open connections lazily)."""

    async def stop(self) -> None:  # noqa: B027 - optional hook, a no-op by default
        """That run stops being driven (close what :meth:`start` opened)."""


def turn_context(turn: Turn) -> dict[str, Any]:
    """Return the turn input as plain JSON data (what templates and byte limits see).

    ``decisions``, ``rounds`` and ``peers`` are there when the council deliberates
    (DESIGN.md §22).
    """
    context = {
        "task": turn.task,
        "member": turn.member,
        "role": turn.role,
        "brief": turn.brief,
        "turn": turn.turn,
        "result": turn.result,
        "messages": [m.to_wire() for m in turn.messages],
        "triggers": [m.to_wire() for m in turn.triggers],
    }
    if turn.decisions:
        context["decisions"] = turn.decisions
    if turn.rounds:
        context["rounds"] = turn.rounds
    if turn.peers:
        context["peers"] = turn.peers
    return context
