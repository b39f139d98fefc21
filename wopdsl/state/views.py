"""What readers ask of a folded run: its status, a member's phase, who is awaited, the result."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from wopdsl.state.records import Chair, DecisionState, Inflight, MemberState, RunStatus
from wopdsl.state.steering import SteeringFold
from wopdsl.state.usage import RunUsage

if TYPE_CHECKING:
    from wopdsl.model.turns import Message

__all__ = ["StateViews"]


class StateViews(SteeringFold):
    """Views derived from the fold (a mixin of ``CouncilState``)."""

    __slots__ = ()

    # The CouncilState fields this mixin reads (declared there).
    task: str
    last_sequence: int
    terminal: RunStatus | None
    started_ms: int
    paused: str | None
    paused_since_ms: int
    paused_total_ms: int
    members: dict[str, MemberState]
    queue: dict[str, list[str]]
    inflight: dict[str, Inflight]
    messages: dict[str, Message]
    decisions: dict[str, DecisionState]
    chairing: Chair
    usage: RunUsage

    @property
    def status(self) -> RunStatus:
        """The run status derived from the log."""
        if self.terminal is not None:
            return self.terminal
        if self.last_sequence < 0:
            return "pending"
        if self.paused is not None:
            return "paused"
        if self.inflight:  # all suspended (awaiting approvals): nothing runs until decided
            return "running" if any(not i.suspended for i in self.inflight.values()) \
                else "waiting-input"
        if any(not self.members[m].awaited for m in self.queue):
            return "running"
        if self.queue:
            return "waiting-input"
        return "running"

    def active_ms(self, now_ms: int) -> int:
        """Milliseconds the run has been going at ``now_ms`` (epoch), pauses left out.

        The council deadline (``timeout_ms``, RFC 0005 §I) counts this: a paused run's
        clock stops.
        """
        paused = self.paused_total_ms
        if self.paused is not None:
            paused += max(0, now_ms - self.paused_since_ms)
        return max(0, now_ms - self.started_ms - paused)

    def member_phase(self, member_id: str) -> str:
        """Return the member's phase: queued, running, waiting (for input), failed, done or idle."""
        member = self.members[member_id]
        if member_id in self.inflight:
            return "waiting" if self.inflight[member_id].suspended else "running"
        if member_id in self.queue:
            return "waiting" if member.awaited else "queued"
        if member.failed:
            return "failed"
        return "done" if member.turns else "idle"

    @property
    def waiting_for(self) -> list[str]:
        """Human and external members whose requested turn is pending."""
        return [m for m in self.queue if self.members[m].awaited]

    def result(self) -> dict[str, Any]:
        """The council result: ``{task, agents: [{name, role, result}], answer?, …}``.

        ``answer`` is the chair's last summary, ``decisions`` the closed decisions'
        outcomes; ``usage`` the model usage.
        """
        result: dict[str, Any] = {"task": self.task, "agents": [
            {"name": m.id, "role": m.role, "result": m.result} for m in self.members.values()]}
        if self.chair is not None:
            chair = self.members[self.chair].result if self.chairing.done else None
            result["answer"] = chair.get("summary") if isinstance(chair, dict) else None
        if self.decisions:
            result["decisions"] = [d.summary or {"id": d.id, "outcome": None}
                                   for d in self.decisions.values()]
        if self.usage.total.calls:
            result["usage"] = self.usage.to_json()
        return result

    def transcript_messages(self) -> list[Message]:
        """Every saved message in saved order."""
        return list(self.messages.values())
