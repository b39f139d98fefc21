"""The OpenWOP v2 event codemap: the v2 name of each v1 event type (RFC 0176 §A.1).

v2 renames 36 of the 117 registered types to its grammar (``domain.verb-ed``: kebab case,
two segments); the other 81 keep their v1 name. The renamed rows below are those of the
spec's ``spec/v2/event-codemap.json`` (openwop/openwop at
96c270a400e82fefd9a73ca451b4b437c6e4f4ec, ``version: "2.0"``, ``counts.renamed: 36``; see
``schemas/SOURCES.md``). wopdsl folds events by their v1 names; the v2 wire serves the v2
ones, and an era-3 log is stored under them (:mod:`wopdsl.store`).
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["ERA_V1", "ERA_V2", "EVENT_LOG_SCHEMA_VERSION", "V2_GRAMMAR", "era_of", "renamed",
           "stored_type", "v1_type", "v2_type"]

ERA_V1: Final = 2
"""The event-log era of a log in v1 vocabulary (a ``run.started`` without the era key)."""
ERA_V2: Final = 3
"""The event-log era of a log in v2 vocabulary (v2 ``persistence.md`` §The era key)."""
EVENT_LOG_SCHEMA_VERSION: Final = ERA_V2
"""The event-log era new runs are written in (v2 ``persistence.md`` §The era key): 3, the v2
vocabulary. A run's own era is in its ``run.started`` (absent: 2, the v1 era; v1
``version-negotiation.md`` §Stamping accepts 2 and above)."""

V2_GRAMMAR: Final = re.compile(r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*\.[a-z][a-z0-9]*(?:-[a-z0-9]+)*$")
"""The codemap's ``grammar``: every v2 name matches it."""

_RENAMED: Final[dict[str, str]] = {
    "run.resuming": "run.resume-started",
    "run.dead_lettered": "run.dead-lettered",
    "replay.divergedAtRefusal": "replay.diverged-at-refusal",
    "agent.reasoning.delta": "agent.reasoning-delta",
    "agent.promptResolved": "agent.prompt-resolved",
    "model.capability.substituted": "model.capability-substituted",
    "model.capability.insufficient": "model.capability-insufficient",
    "envelope.retry.attempted": "envelope.retry-attempted",
    "envelope.retry.exhausted": "envelope.retry-exhausted",
    "envelope.nlToFormat.engaged": "envelope.nl-to-format-engaged",
    "envelope.recovery.applied": "envelope.recovery-applied",
    "agent.toolCalled": "agent.tool-called",
    "agent.toolReturned": "agent.tool-returned",
    "agent.invocation.started": "agent.invocation-started",
    "agent.invocation.completed": "agent.invocation-completed",
    "deployment.canary.adjusted": "deployment.canary-adjusted",
    "deployment.state.changed": "deployment.state-changed",
    "roster.run.initiated": "roster.run-initiated",
    "tool.session.opened": "tool.session-opened",
    "tool.session.closed": "tool.session-closed",
    "trigger.subscription.state.changed": "trigger.subscription-state-changed",
    "trigger.delivery.attempted": "trigger.delivery-attempted",
    "budget.threshold.crossed": "budget.threshold-crossed",
    "runOrchestrator.decided": "orchestrator.decided",
    "core.dispatch.fanOut": "dispatch.fanned-out",
    "core.dispatch.join": "dispatch.joined",
    "agent.memory.consolidated": "agent.memory-consolidated",
    "core.workflowChain.event": "workflow-chain.event",
    "core.workflowChain.confidence-escalated": "workflow-chain.confidence-escalated",
    "connector.auth_expired": "connector.auth-expired",
    "voice.speech_start": "voice.speech-start",
    "voice.endpoint_candidate": "voice.endpoint-candidate",
    "voice.turn_commit": "voice.turn-commit",
    "voice.synthesis_chunk": "voice.synthesis-chunk",
    "voice.barge_in": "voice.barge-in",
    "compensation.manual_intervention_required": "compensation.manual-intervention-required",
}
_BACK: Final = {v2: v1 for v1, v2 in _RENAMED.items()}
assert len(_RENAMED) == len(_BACK) == 36, "the codemap renames 36 types, one-to-one"
assert all(V2_GRAMMAR.match(name) for name in _BACK), "every v2 name is in the grammar"


def v2_type(event_type: str) -> str:
    """The v2 name of the v1 event type ``event_type`` (itself when v2 keeps it)."""
    return _RENAMED.get(event_type, event_type)


def v1_type(event_type: str) -> str:
    """The v1 name of the v2 event type ``event_type`` (itself when v2 kept it)."""
    return _BACK.get(event_type, event_type)


def era_of(run_started_payload: object) -> int:
    """The era a ``run.started`` payload stamps (its ``eventLogSchemaVersion``; absent: 2)."""
    era = run_started_payload.get("eventLogSchemaVersion") \
        if isinstance(run_started_payload, dict) else None
    return era if isinstance(era, int) and not isinstance(era, bool) else ERA_V1


def stored_type(event_type: str, era: int) -> str:
    """The name ``event_type`` (a v1 name, as wopdsl folds them) is stored under in ``era``."""
    return v2_type(event_type) if era >= ERA_V2 else event_type


def renamed(event_type: str) -> bool:
    """Whether v2 names ``event_type`` (a v1 name) otherwise."""
    return event_type in _RENAMED
