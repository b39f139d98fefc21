"""Member engines: ``python`` handlers, ``script`` steps and ``human`` input."""

from wopdsl.agents.base import MemberAgent, turn_context
from wopdsl.agents.human import ExternalAgent, HumanAgent
from wopdsl.agents.python import Handler, PythonAgent
from wopdsl.agents.script import ScriptAgent

__all__ = [
    "ExternalAgent",
    "Handler",
    "HumanAgent",
    "MemberAgent",
    "PythonAgent",
    "ScriptAgent",
    "turn_context",
]
