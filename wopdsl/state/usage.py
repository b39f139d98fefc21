"""Model usage of a run, summed from its ``provider.usage`` events (RFC 0026)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["RunUsage", "Usage"]


@dataclass(slots=True)
class Usage:
    """Model usage summed from ``provider.usage`` events (a member's, or the run's)."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    """Estimated cost; ``None`` while no call had a price."""

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    def add(self, payload: dict[str, Any]) -> None:
        """Add one ``provider.usage`` payload."""
        self.calls += 1
        self.input_tokens += int(payload.get("inputTokens", 0))
        self.output_tokens += int(payload.get("outputTokens", 0))
        cost = payload.get("costEstimateUsd")
        if cost is not None:
            self.cost_usd = (self.cost_usd or 0.0) + float(cost)

    def label(self) -> str:
        """``1,234 tokens`` (with ``· $0.0012`` when priced), as UIs show it."""
        text = f"{self.total_tokens:,} tokens"
        return text if self.cost_usd is None else f"{text} · ${self.cost_usd:.4f}"

    def to_json(self) -> dict[str, Any]:
        """``{calls, inputTokens, outputTokens, totalTokens, costUsd?}``."""
        out: dict[str, Any] = {"calls": self.calls, "inputTokens": self.input_tokens,
                               "outputTokens": self.output_tokens,
                               "totalTokens": self.total_tokens}
        if self.cost_usd is not None:
            out["costUsd"] = round(self.cost_usd, 6)
        return out


@dataclass(slots=True)
class RunUsage:
    """A run's model usage: per member (``llm`` members that made calls) and in total."""

    members: dict[str, Usage] = field(default_factory=dict)
    total: Usage = field(default_factory=Usage)

    def add(self, event: Mapping[str, Any]) -> None:
        """Fold one ``provider.usage`` event."""
        payload = event["payload"]
        node = payload.get("nodeId") or event.get("nodeId") or ""
        self.members.setdefault(node, Usage()).add(payload)
        self.total.add(payload)

    def to_json(self) -> dict[str, Any] | None:
        """``{members: {id: usage}, total: usage}``, or ``None`` when no model was called."""
        if not self.total.calls:
            return None
        return {"members": {m: u.to_json() for m, u in self.members.items()},
                "total": self.total.to_json()}
