"""Council declarations and turn shapes (frozen pydantic models).

The names load on first use, so importing one module (``wopdsl.model.turns``) does not
build every declaration model.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from wopdsl.model.llm import ModelProfile
    from wopdsl.model.spec import (
        CouncilSettings,
        CouncilSpec,
        EngineKind,
        MemberSpec,
        RoomSpec,
        ScriptPost,
        ScriptStep,
    )
    from wopdsl.model.turns import Message, Post, Reply, Turn

__all__ = [
    "CouncilSettings",
    "CouncilSpec",
    "EngineKind",
    "MemberSpec",
    "Message",
    "ModelProfile",
    "Post",
    "Reply",
    "RoomSpec",
    "ScriptPost",
    "ScriptStep",
    "Turn",
]

_LAZY: Final[dict[str, str]] = {
    "ModelProfile": "wopdsl.model.llm",
    **dict.fromkeys(("CouncilSettings", "CouncilSpec", "EngineKind", "MemberSpec", "RoomSpec",
                     "ScriptPost", "ScriptStep"), "wopdsl.model.spec"),
    **dict.fromkeys(("Message", "Post", "Reply", "Turn"), "wopdsl.model.turns"),
}


def __getattr__(name: str) -> Any:
    """Load a public name from its module on first use (PEP 562)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'wopdsl.model' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The module's names, lazy ones included."""
    return sorted({*globals(), *_LAZY})
