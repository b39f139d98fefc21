"""wopdsl: multi-agent councils on the OpenWOP event protocol.

Declare a council in TOML (``load``) or with decorators (``Council``), run it on a durable
event log (SQLite by default), replay, resume, watch and join it.

Example:
    >>> import wopdsl
    >>> council = wopdsl.load("councils/release-team.toml")
    >>> run = council.run(store="memory:")
    >>> run.status
    'completed'
"""

from wopdsl.compile import CouncilGraph, compile
from wopdsl.council import Council, load
from wopdsl.engine import Engine, HumanInput, fork
from wopdsl.errors import (
    DeclarationError,
    EventInvalid,
    RunBusy,
    RunFailed,
    RunNotFound,
    StoreConflict,
    StoreError,
    TurnError,
    ValidationError,
    WopError,
)
from wopdsl.model import (
    CouncilSettings,
    CouncilSpec,
    MemberSpec,
    Message,
    Post,
    Reply,
    RoomSpec,
    ScriptPost,
    ScriptStep,
    Turn,
)
from wopdsl.run import EventLog, Run, attach
from wopdsl.state import CouncilState, RunStatus
from wopdsl.store import EventStore, MemoryStore, RunInfo, SqliteStore, open_store

__version__ = "0.1.0"

__all__ = [
    "Council",
    "CouncilGraph",
    "CouncilSettings",
    "CouncilSpec",
    "CouncilState",
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
    "Reply",
    "RoomSpec",
    "Run",
    "RunBusy",
    "RunFailed",
    "RunInfo",
    "RunNotFound",
    "RunStatus",
    "ScriptPost",
    "ScriptStep",
    "SqliteStore",
    "StoreConflict",
    "StoreError",
    "Turn",
    "TurnError",
    "ValidationError",
    "WopError",
    "attach",
    "compile",
    "fork",
    "load",
    "open_store",
]
