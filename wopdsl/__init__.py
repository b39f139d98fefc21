"""wopdsl: multi-agent councils on the OpenWOP event protocol.

Declare a council in TOML (``load``) or with decorators (``Council``), run it on a durable
event log (SQLite by default), replay, resume, watch and join it.

The names below load on first use (``import wopdsl`` itself imports nothing heavy, so the
``wop`` command starts fast); ``from wopdsl import Council`` works as always.

Example:
    >>> import wopdsl
    >>> council = wopdsl.load("councils/release-team.toml")
    >>> run = council.run(store="memory:")
    >>> run.status
    'completed'
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING, Final

from wopdsl._lazy import lazy_exports
from wopdsl.errors import (
    DeclarationError,
    EventInvalid,
    RunBusy,
    RunFailed,
    RunNotFound,
    RunStateConflict,
    StoreConflict,
    StoreError,
    StoreUnavailable,
    TurnError,
    ValidationError,
    WopError,
)

if TYPE_CHECKING:
    from wopdsl.compile import CouncilGraph, compile
    from wopdsl.council import Council, load
    from wopdsl.engine import Engine, HumanInput, fork
    from wopdsl.model import (
        CouncilSettings,
        CouncilSpec,
        DecisionSpec,
        MemberSpec,
        Message,
        Post,
        Reply,
        RoomSpec,
        ScriptPost,
        ScriptStep,
        Turn,
        Vote,
    )
    from wopdsl.presence import Presence, PresenceSession, PresenceSnapshot
    from wopdsl.run import EventLog, Run, attach
    from wopdsl.state import CouncilState, RunStatus
    from wopdsl.store import EventStore, MemoryStore, RunInfo, SqliteStore, open_store

__version__ = "0.1.0"

_LAZY: Final[dict[str, str]] = {
    "CouncilGraph": "wopdsl.compile", "compile": "wopdsl.compile",
    "Council": "wopdsl.council", "load": "wopdsl.council",
    "Engine": "wopdsl.engine", "HumanInput": "wopdsl.engine", "fork": "wopdsl.engine",
    **dict.fromkeys(("CouncilSettings", "CouncilSpec", "DecisionSpec", "MemberSpec",
                     "Message", "Post", "Reply", "RoomSpec", "ScriptPost", "ScriptStep", "Turn",
                     "Vote"), "wopdsl.model"),
    "EventLog": "wopdsl.run", "Run": "wopdsl.run", "attach": "wopdsl.run",
    **dict.fromkeys(("Presence", "PresenceSession", "PresenceSnapshot"), "wopdsl.presence"),
    "CouncilState": "wopdsl.state", "RunStatus": "wopdsl.state",
    **dict.fromkeys(("EventStore", "MemoryStore", "RunInfo", "SqliteStore", "open_store"),
                    "wopdsl.store"),
}
"""Each lazily loaded public name and the module it comes from."""


__getattr__, __dir__ = lazy_exports("wopdsl", _LAZY, globals())


class _Api(types.ModuleType):
    """The module type of ``wopdsl``: it keeps the function ``wopdsl.compile``.

    Importing a submodule sets it on its parent, so loading ``wopdsl.compile.graph`` would
    otherwise replace the function with the subpackage of the same name.
    """

    def __setattr__(self, name: str, value: object) -> None:
        if name == "compile" and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Api

__all__ = [
    "Council",
    "CouncilGraph",
    "CouncilSettings",
    "CouncilSpec",
    "CouncilState",
    "DecisionSpec",
    "DeclarationError",
    "Engine",
    "EventInvalid",
    "EventLog",
    "EventStore",
    "HumanInput",
    "MemberSpec",
    "MemoryStore",
    "Message",
    "Post",
    "Presence",
    "PresenceSession",
    "PresenceSnapshot",
    "Reply",
    "RoomSpec",
    "Run",
    "RunBusy",
    "RunFailed",
    "RunInfo",
    "RunNotFound",
    "RunStateConflict",
    "RunStatus",
    "ScriptPost",
    "ScriptStep",
    "SqliteStore",
    "StoreConflict",
    "StoreError",
    "StoreUnavailable",
    "Turn",
    "TurnError",
    "ValidationError",
    "Vote",
    "WopError",
    "attach",
    "compile",
    "fork",
    "load",
    "open_store",
]
