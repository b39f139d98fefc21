"""Member engines: ``python`` handlers, ``script`` steps and ``human`` input."""

from wopdsl.agents.base import MemberAgent, turn_context
from wopdsl.agents.human import HumanAgent
from wopdsl.agents.python import Handler, PythonAgent
from wopdsl.agents.script import ScriptAgent

__all__ = ["Handler", "HumanAgent", "MemberAgent", "PythonAgent", "ScriptAgent", "turn_context"]
