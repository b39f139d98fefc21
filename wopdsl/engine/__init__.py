"""The embedded engine: runs compiled councils, one durable event at a time."""

from wopdsl.engine.core import DEFAULT_MAX_PARTICIPANTS, Engine, HumanInput
from wopdsl.engine.fork import ForkMode, ReplayEngine, engine_for, fork
from wopdsl.engine.state import TERMINAL, CouncilState, Inflight, MemberState, RoomState, RunStatus

__all__ = [
    "DEFAULT_MAX_PARTICIPANTS",
    "TERMINAL",
    "CouncilState",
    "Engine",
    "ForkMode",
    "HumanInput",
    "Inflight",
    "MemberState",
    "ReplayEngine",
    "RoomState",
    "RunStatus",
    "engine_for",
    "fork",
]
