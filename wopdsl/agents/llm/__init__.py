"""The ``llm`` member engine: a chat model behind any OpenAI-compatible endpoint (§18).

Importing this package does not import ``openai``; the first model call does.
"""

from wopdsl.agents.llm.agent import REPAIR_PROMPT, LlmAgent
from wopdsl.agents.llm.answers import AnswerProblem, check_answer, result_schema
from wopdsl.agents.llm.client import CallFailure, Completion, ProfileClient
from wopdsl.agents.llm.prompts import (
    DEFAULT_SYSTEM_PROMPT,
    DEFAULT_TURN_PROMPT,
    ComposedPrompt,
    PromptTemplates,
    RoomView,
)
from wopdsl.agents.llm.tap import CALL_SITE, CallSite, ModelTap

__all__ = [
    "CALL_SITE",
    "DEFAULT_SYSTEM_PROMPT",
    "DEFAULT_TURN_PROMPT",
    "REPAIR_PROMPT",
    "AnswerProblem",
    "CallFailure",
    "CallSite",
    "Completion",
    "ComposedPrompt",
    "LlmAgent",
    "ModelTap",
    "ProfileClient",
    "PromptTemplates",
    "RoomView",
    "check_answer",
    "result_schema",
]
