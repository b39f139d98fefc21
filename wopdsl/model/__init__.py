"""Council declarations and turn shapes (frozen pydantic models).

The names load on first use, so importing one module (``wopdsl.model.turns``) does not
build every declaration model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from wopdsl._lazy import lazy_exports

if TYPE_CHECKING:
    from wopdsl.model.deliberation import DecisionSpec
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
    from wopdsl.model.turns import Message, Post, Reply, Turn, Vote

__all__ = [
    "CouncilSettings",
    "CouncilSpec",
    "DecisionSpec",
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
    "Vote",
]

_LAZY: Final[dict[str, str]] = {
    "ModelProfile": "wopdsl.model.llm",
    "DecisionSpec": "wopdsl.model.deliberation",
    **dict.fromkeys(("CouncilSettings", "CouncilSpec", "EngineKind", "MemberSpec", "RoomSpec",
                     "ScriptPost", "ScriptStep"), "wopdsl.model.spec"),
    **dict.fromkeys(("Message", "Post", "Reply", "Turn", "Vote"), "wopdsl.model.turns"),
}


__getattr__, __dir__ = lazy_exports("wopdsl.model", _LAZY, globals())
