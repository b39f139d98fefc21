"""The ``a2a`` member engine: a remote A2A agent, through the official ``a2a-sdk`` (§25).

Importing this package does not import the SDK; a member's first turn does.
"""

from wopdsl.agents.a2a.agent import A2aAgent, A2aSetupError
from wopdsl.agents.a2a.remote import Remote, RemoteFailure, card_problems

__all__ = ["A2aAgent", "A2aSetupError", "Remote", "RemoteFailure", "card_problems"]
