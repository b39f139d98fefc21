"""How a run's life is folded: ``run.completed/failed/cancelled/paused/resumed``, divergences.

``CouncilState`` applies these to itself (its status is :meth:`StateViews.status`).
"""

from __future__ import annotations

from typing import Any, Protocol

from wopdsl._ids import parse_iso_ms
from wopdsl.protocol.envelope import RunEventDoc
from wopdsl.state.records import Inflight, RunStatus

__all__ = ["Life", "cancelled", "completed", "diverged", "failed", "paused", "resumed"]


class Life(Protocol):
    """The fields of ``CouncilState`` a run's life sets."""

    terminal: RunStatus | None
    outputs: dict[str, Any] | None
    error: dict[str, Any] | None
    failed_node: str | None
    ended_at: str
    paused: str | None
    paused_since_ms: int
    paused_total_ms: int
    resumed_at: int
    inflight: dict[str, Inflight]
    divergences: list[dict[str, Any]]


def completed(state: Life, event: RunEventDoc) -> None:
    """``run.completed``."""
    state.terminal = "completed"
    state.outputs = event["payload"].get("outputs")
    state.ended_at = event["timestamp"]


def failed(state: Life, event: RunEventDoc) -> None:
    """``run.failed``."""
    state.terminal = "failed"
    state.error = event["payload"].get("error")
    state.failed_node = event["payload"].get("failedNodeId")
    state.ended_at = event["timestamp"]


def cancelled(state: Life, event: RunEventDoc) -> None:
    """``run.cancelled``."""
    state.terminal = "cancelled"
    state.ended_at = event["timestamp"]


def paused(state: Life, event: RunEventDoc) -> None:
    """``run.paused``."""
    if state.paused is None:
        state.paused_since_ms = parse_iso_ms(event["timestamp"])
    state.paused = str(event["payload"].get("reason") or "")


def resumed(state: Life, event: RunEventDoc) -> None:
    """``run.resumed``."""
    state.resumed_at = event["sequence"]
    if event["payload"].get("reason") == "fork":
        for turn in state.inflight.values():
            turn.anew()
    if state.paused is not None:
        state.paused_total_ms += max(
            0, parse_iso_ms(event["timestamp"]) - state.paused_since_ms)
        state.paused = None


def diverged(state: Life, event: RunEventDoc) -> None:
    """``replay.diverged``."""
    state.divergences.append(dict(event["payload"]))
