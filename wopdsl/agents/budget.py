"""A run's budget (RFC 0084): model tokens and estimated cost, reserved before each call.

A call is made only if its worst case — the prompt's token estimate plus the output cap —
fits what is left after everything consumed and everything reserved by calls in flight.
Consumption comes from ``provider.usage`` events, so a resumed run starts from its log.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

__all__ = ["Breach", "RunBudget", "estimate_tokens"]


def estimate_tokens(text: str) -> int:
    """A conservative token estimate without a tokenizer: one token per 3 UTF-8 bytes.

    Real tokenizers average about 4 bytes per token on English text; the engine knows no
    tokenizer for an arbitrary OpenAI-compatible model, so it errs on the safe side.
    """
    return math.ceil(len(text.encode()) / 3)


@dataclass(frozen=True, slots=True)
class Breach:
    """A call refused by the budget: which dimension, what was used and the limit."""

    dimension: str
    """``tokens``, ``cost`` or ``toolCalls`` (RFC 0084 dimension names)."""
    consumed: float
    """What the run had consumed (reservations in flight included)."""
    limit: float
    wanted: float
    """The refused call's worst case."""


class RunBudget:
    """The run's limits and what is consumed and reserved against them.

    Args:
        max_tokens: Most tokens (input + output) the run may use, or ``None``.
        max_cost_usd: Most estimated cost in USD, or ``None``.
        tokens: Tokens already consumed (from the log).
        cost: Cost already consumed (from the log).
    """

    def __init__(self, max_tokens: int | None, max_cost_usd: float | None, *,
                 tokens: int = 0, cost: float = 0.0, max_tool_calls: int | None = None,
                 tool_calls: int = 0) -> None:
        self.max_tokens = max_tokens
        self.max_cost_usd = max_cost_usd
        self.tokens = tokens
        self.cost = cost
        self.max_tool_calls = max_tool_calls
        """Most tool calls in the run (RFC 0084 ``toolCalls``), or ``None``."""
        self.tool_calls = tool_calls
        self._reserved_tokens = 0
        self._reserved_cost = 0.0

    @property
    def limited(self) -> bool:
        """Whether any dimension has a limit."""
        return self.max_tokens is not None or self.max_cost_usd is not None

    def reserve(self, tokens: int, cost: float | None) -> Breach | None:
        """Reserve a call's worst case; return the breach instead when it would not fit."""
        if self.max_tokens is not None:
            used = self.tokens + self._reserved_tokens
            if used + tokens > self.max_tokens:
                return Breach("tokens", used, self.max_tokens, tokens)
        if self.max_cost_usd is not None and cost is not None:
            spent = self.cost + self._reserved_cost
            if spent + cost > self.max_cost_usd + 1e-12:
                return Breach("cost", spent, self.max_cost_usd, cost)
        self._reserved_tokens += tokens
        self._reserved_cost += cost or 0.0
        return None

    def reserve_tool_call(self) -> Breach | None:
        """Count one tool call, or return the breach when the run has made its last."""
        if self.max_tool_calls is not None and self.tool_calls >= self.max_tool_calls:
            return Breach("toolCalls", self.tool_calls, self.max_tool_calls, 1)
        self.tool_calls += 1
        return None

    def tool_calls_event(self) -> dict[str, Any] | None:
        """The ``budget.consumed`` payload of the tool-call dimension, when it is limited."""
        if self.max_tool_calls is None:
            return None
        return {"dimension": "toolCalls", "consumed": self.tool_calls,
                "limit": self.max_tool_calls,
                "remaining": self.max_tool_calls - self.tool_calls}

    def settle(self, reserved_tokens: int, reserved_cost: float | None, tokens: int,
               cost: float | None) -> None:
        """Replace a reservation by what the call actually consumed."""
        self._reserved_tokens = max(0, self._reserved_tokens - reserved_tokens)
        self._reserved_cost = max(0.0, self._reserved_cost - (reserved_cost or 0.0))
        self.tokens += tokens
        self.cost += cost or 0.0

    def consumed_events(self) -> list[dict[str, Any]]:
        """``budget.consumed`` payloads for each limited dimension."""
        out: list[dict[str, Any]] = []
        if self.max_tokens is not None:
            out.append({"dimension": "tokens", "consumed": self.tokens, "limit": self.max_tokens,
                        "remaining": self.max_tokens - self.tokens})
        if self.max_cost_usd is not None:
            cost = round(self.cost, 9)
            out.append({"dimension": "cost", "consumed": cost, "limit": self.max_cost_usd,
                        "remaining": round(self.max_cost_usd - cost, 9)})
        return out
