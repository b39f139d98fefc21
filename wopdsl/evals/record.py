"""One run of an eval, as the report keeps it: who, how it went, what it cost, its checks."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from wopdsl.evals.checks import CheckResult
from wopdsl.evals.observe import Observation
from wopdsl.projections.metrics import RunMetrics

__all__ = ["DELIBERATION_KEYS", "RunRecord", "deliberation_figures"]

DELIBERATION_KEYS = ("votes", "flips", "mentionsMade", "mentionsAnswered", "firstAnswers",
                     "firstAnswersKept", "agreed", "decided", "decisions", "unanimous",
                     "dissent", "margin", "firstRoundDecisions", "changedByDebate")
"""The per-run sums the report aggregates into the §22 figures."""


def deliberation_figures(metrics: RunMetrics) -> dict[str, float]:
    """A run's deliberation metrics summed over its members and decisions."""
    members = list(metrics.members.values())
    decisions = [d for d in metrics.decisions.values() if d.closed]
    compared = [d for d in decisions if d.first_round_outcome is not None]
    return {
        "votes": sum(m.votes for m in members),
        "flips": sum(m.flips for m in members),
        "mentionsMade": sum(m.mentions_made for m in members),
        "mentionsAnswered": sum(m.mentions_answered for m in members),
        "firstAnswers": sum(m.first_answers for m in members),
        "firstAnswersKept": sum(m.first_answers_kept for m in members),
        "agreed": sum(m.agreed for m in members),
        "decided": sum(m.decided for m in members),
        "decisions": len(decisions),
        "unanimous": sum(1 for d in decisions if d.unanimous),
        "dissent": sum(d.dissent for d in decisions),
        "margin": round(sum(d.margin for d in decisions), 6),
        "firstRoundDecisions": len(compared),
        "changedByDebate": sum(1 for d in compared if d.first_round_outcome != d.outcome),
    }


@dataclass(slots=True)
class RunRecord:
    """One arm × case × repeat."""

    arm: str
    case: str
    repeat: int
    run_id: str
    status: str
    wall_s: float = 0.0
    turns: int = 0
    usage: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    deliberation: dict[str, float] = field(default_factory=dict)
    checks: dict[str, CheckResult] = field(default_factory=dict)
    how: str = "ran"
    """``ran`` here, ``resumed`` (interrupted before, finished now) or ``reused`` (finished
    in an earlier ``wop eval``)."""
    judge_usage: dict[str, Any] | None = None
    """What its judges' model calls used (``totalTokens``, ``costUsd``), apart from the
    run's own."""

    def add_judge_usage(self, usage: dict[str, Any] | None) -> None:
        """Count a judge run's usage."""
        if not usage:
            return
        total = self.judge_usage or {"totalTokens": 0}
        total["totalTokens"] += int(usage.get("totalTokens", 0))
        if usage.get("costUsd") is not None:
            total["costUsd"] = round(total.get("costUsd", 0.0) + usage["costUsd"], 6)
        self.judge_usage = total

    @classmethod
    def of(cls, arm: str, case: str, repeat: int, observation: Observation,
           how: str) -> RunRecord:
        """A record from an observed run (checks added after)."""
        return cls(arm, case, repeat, observation.run_id, observation.status,
                   round(observation.wall_s, 3), observation.turns, observation.usage,
                   observation.error, deliberation_figures(observation.metrics), how=how)

    @property
    def tokens(self) -> int:
        """Model tokens used (0 without model calls)."""
        return int(self.usage.get("totalTokens", 0)) if self.usage else 0

    @property
    def cost(self) -> float | None:
        """Estimated cost in USD, when the profiles have prices."""
        return self.usage.get("costUsd") if self.usage else None

    def to_json(self) -> dict[str, Any]:
        """The record as the JSON report holds it."""
        doc: dict[str, Any] = {
            "runId": self.run_id, "arm": self.arm, "case": self.case, "repeat": self.repeat,
            "status": self.status, "how": self.how, "wallS": self.wall_s, "turns": self.turns,
            "tokens": self.tokens, "deliberation": self.deliberation,
            "checks": {k: v.to_json() for k, v in self.checks.items()}}
        if self.cost is not None:
            doc["costUsd"] = self.cost
        if self.judge_usage is not None:
            doc["judges"] = dict(self.judge_usage)
        if self.error:
            doc["error"] = {"code": self.error.get("code"), "message": self.error.get("message")}
        return doc

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> RunRecord:
        """Read :meth:`to_json` back (``--compare``)."""
        usage = {"totalTokens": doc.get("tokens", 0)}
        if "costUsd" in doc:
            usage["costUsd"] = doc["costUsd"]
        return cls(str(doc["arm"]), str(doc["case"]), int(doc["repeat"]), str(doc["runId"]),
                   str(doc["status"]), float(doc.get("wallS", 0)), int(doc.get("turns", 0)),
                   usage, doc.get("error"), dict(doc.get("deliberation") or {}),
                   {k: CheckResult.from_json(v) for k, v in (doc.get("checks") or {}).items()},
                   str(doc.get("how", "ran")), doc.get("judges"))
