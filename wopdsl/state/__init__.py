"""The state of a run: a pure fold of its OpenWOP events, read by every reader.

The engine, ``Run``, the CLI, the TUI, the notebook view and the HTTP host all read run
state through :class:`CouncilState` (council semantics: queue, in-flight turns, turns used,
status) and :func:`build_snapshot` (the v1 ``RunSnapshot``, whose status is :func:`wire_status`);
none re-implements them.
"""

from wopdsl.state.fold import CouncilState
from wopdsl.state.records import (
    TERMINAL,
    TERMINAL_EVENTS,
    DecisionState,
    Inflight,
    MemberState,
    RoomState,
    RunStatus,
    VoteRecord,
    status_of_event,
    tags_of,
)
from wopdsl.state.snapshot import build_snapshot, channels, wire_status
from wopdsl.state.usage import RunUsage, Usage

__all__ = [
    "TERMINAL",
    "TERMINAL_EVENTS",
    "CouncilState",
    "DecisionState",
    "Inflight",
    "MemberState",
    "RoomState",
    "RunStatus",
    "RunUsage",
    "Usage",
    "VoteRecord",
    "build_snapshot",
    "channels",
    "status_of_event",
    "tags_of",
    "wire_status",
]
