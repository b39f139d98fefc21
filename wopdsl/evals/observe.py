"""What an eval reads from one stored run: its status, answer, figures and deliberation.

Everything comes from the run's event log (one read, one fold), so a run finished in an
earlier ``wop eval`` — or by anything else — is observed exactly like one run just now.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from wopdsl import CouncilState
from wopdsl._ids import parse_iso_ms
from wopdsl.projections.metrics import RunMetrics, metrics_of
from wopdsl.projections.transcript import render_transcript
from wopdsl.protocol.envelope import RunEventDoc

__all__ = ["Observation", "as_text", "observe"]


@dataclass(slots=True)
class Observation:
    """One run, as the checks and the report see it."""

    run_id: str
    state: CouncilState
    metrics: RunMetrics
    last_summary: str | None
    """The summary of the last member turn that completed (the answer without a chair)."""
    wall_s: float
    """From the run's first event to its last."""

    @property
    def status(self) -> str:
        """The run status (``completed``, ``failed`` …)."""
        return self.state.status

    @property
    def error(self) -> dict[str, Any] | None:
        """``{code, message}`` of a failed run."""
        return self.state.error

    @property
    def turns(self) -> int:
        """Member turns taken."""
        return sum(member.turns for member in self.state.members.values())

    @property
    def usage(self) -> dict[str, Any] | None:
        """Model usage totals, or ``None`` for a run without model calls.

        ``calls``, ``inputTokens``, ``outputTokens``, ``totalTokens``, and ``costUsd`` when
        the profiles have prices.
        """
        usage = self.state.usage.to_json()
        return usage["total"] if usage is not None else None

    def target(self, kind: str, ident: str | None) -> Any:
        """The value a check looks at (``None`` when the run has none).

        ``answer``: the chair's answer, else the last member turn's summary; ``result``: the
        run result; ``transcript``: the transcript text; ``decision:ID``: the decision's
        outcome once closed; ``member:ID``: the member's last summary.
        """
        state = self.state
        outputs = state.outputs if state.terminal == "completed" else None
        if kind == "answer":
            if outputs is None:
                return None
            answer = outputs.get("answer")
            return answer if answer is not None else self.last_summary
        if kind == "result":
            return outputs
        if kind == "transcript":
            return render_transcript(state)
        if kind == "decision":
            decision = state.decisions.get(ident or "")
            return decision.outcome if decision is not None and decision.closed else None
        member = state.members.get(ident or "")
        result = member.result if member is not None else None
        return result.get("summary") if isinstance(result, dict) else None


def observe(run_id: str, events: list[RunEventDoc],
            state: CouncilState | None = None) -> Observation:
    """Observe a run from its events (``state``: their fold, when known already)."""
    if state is None or state.last_sequence != (events[-1]["sequence"] if events else -1):
        state = CouncilState.fold(events)
    metrics = metrics_of(events, state)
    last = None
    for event in reversed(events):
        if event["type"] == "node.completed" and event.get("nodeId") in state.members:
            outputs = event["payload"].get("outputs") or {}
            last = outputs.get("summary") if isinstance(outputs, dict) else None
            break
    wall = 0.0
    if events:
        wall = max(0.0, (parse_iso_ms(events[-1]["timestamp"])
                         - parse_iso_ms(events[0]["timestamp"])) / 1000)
    return Observation(run_id, state, metrics, last, wall)


def as_text(value: Any) -> str:
    """A target as text: strings as they are, anything else as its JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)

