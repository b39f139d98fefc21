"""Council declarations and turn shapes (frozen pydantic models)."""

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
