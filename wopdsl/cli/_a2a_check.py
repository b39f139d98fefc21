"""Private: ``wop validate``'s look at ``a2a`` members' agents — read and check each card.

Each ``a2a`` member's card is read at its ``url`` (``/.well-known/agent-card.json``), with its
headers, and checked (:func:`wopdsl.agents.a2a.card_problems`: a name, skills, a JSON-RPC
interface, text in or out). A card that cannot be read or is not fit is a
``DECLARATION_INVALID`` located at the member's ``url`` (or at the header whose variable is
not set), saying what is wrong with it.
"""

from __future__ import annotations

from typing import Any

from wopdsl import Council, DeclarationError
from wopdsl.errors import Problem

__all__ = ["agent_lines"]


async def agent_lines(council: Council) -> dict[str, dict[str, Any]]:
    """Each ``a2a`` member's agent as its card says: ``{name, version, skills, streaming}``.

    Raises:
        DeclarationError: a card cannot be read, or is not fit (located at the member).
    """
    from wopdsl.agents.a2a import A2aAgent, A2aSetupError, RemoteFailure, card_problems

    graph = council.compile()
    found: dict[str, dict[str, Any]] = {}
    for index, member in enumerate(council.spec.members):
        agent = graph.members[member.id].agent
        if not isinstance(agent, A2aAgent):
            continue
        where = f"members[{index}] ({member.id})"
        try:
            await agent.start()
            assert agent.remote is not None
            await agent.remote.open()
            card = agent.remote.card
        except A2aSetupError as exc:
            raise _located(council, Problem(exc.message, path=f"{where}.headers.{exc.header}",
                                            hint=exc.hint)) from None
        except RemoteFailure as failure:
            raise _located(council, Problem(
                failure.message, path=f"{where}.url",
                hint="start the agent, or fix url (its base URL: the card is read at "
                     "/.well-known/agent-card.json under it) and the headers")) from None
        finally:
            await agent.stop()
        problems = card_problems(card)
        if problems:
            raise _located(council, Problem(
                f"the agent card at {member.url} is not fit for a member: "
                + "; ".join(problems), path=f"{where}.url",
                hint="fix the agent's card, or point url at another agent"))
        found[member.id] = {
            "name": card.get("name", ""), "version": card.get("version", ""),
            "skills": [s.get("id", "") for s in card.get("skills") or ()],
            "streaming": bool((card.get("capabilities") or {}).get("streaming"))}
    return found


def _located(council: Council, problem: Problem) -> DeclarationError:
    declaration = council._declaration
    return DeclarationError(declaration.locate([problem]) if declaration is not None
                            else [problem])
