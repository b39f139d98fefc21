"""The agent card of a council served as an A2A agent (``wop serve --a2a``; DESIGN.md §25).

Each served council is an agent at ``/a2a/{councilId}``: its card is at the standard
well-known path under it (``/a2a/{councilId}/.well-known/agent-card.json``; also at
``/.well-known/agent-card.json`` when the host serves one council). The card says what is
served, no more:

* ``name`` the council id, ``description`` its task, ``version`` its declaration's version;
* one JSON-RPC interface (A2A 1.0) at the council's URL, as the request reached the host;
* ``capabilities``: streaming (``SendStreamingMessage``, ``SubscribeToTask``), no push
  notifications, no extended card;
* one skill, the council: its task, its members' roles as tags, and whether people take
  part (a task may then wait for input: ``TASK_STATE_INPUT_REQUIRED``);
* with the host's tokens, the HTTP bearer scheme, required.
"""

from __future__ import annotations

from typing import Any, Final

from wopdsl import Council

__all__ = ["CARD_PATH", "agent_card", "council_url", "is_card_path"]

CARD_PATH: Final = "/.well-known/agent-card.json"
"""The card's path under an agent's URL (A2A's well-known path)."""


def is_card_path(path: str) -> bool:
    """Whether ``path`` is an agent card's (served without a token, like discovery)."""
    return path == CARD_PATH or (path.startswith("/a2a/") and path.endswith(CARD_PATH)
                                 and path.count("/") == 4)


def council_url(base_url: str, council_id: str) -> str:
    """The JSON-RPC URL of a council served as an agent on the host at ``base_url``."""
    return f"{base_url.rstrip('/')}/a2a/{council_id}"


def agent_card(council: Council, base_url: str, *, secured: bool) -> dict[str, Any]:
    """The council's agent card (JSON form, as the A2A SDK serves cards)."""
    spec = council.spec
    awaited = [m for m in spec.members if m.engine in ("human", "external")]
    people = (f" People take part ({', '.join(m.id for m in awaited)}): the task may wait "
              "for input (TASK_STATE_INPUT_REQUIRED); answer it with a message to the task."
              if awaited else "")
    card: dict[str, Any] = {
        "name": spec.id,
        "description": f"A council of {len(spec.members)} members "
                       f"({', '.join(m.role for m in spec.members)}). Task: {spec.task}",
        "version": str(spec.council.version),
        "supportedInterfaces": [{"url": council_url(base_url, spec.id),
                                 "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
        "capabilities": {"streaming": True, "pushNotifications": False,
                         "extendedAgentCard": False},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain", "application/json"],
        "skills": [{"id": spec.id, "name": spec.id,
                    "description": f"Convene the council on a task (default: {spec.task}); "
                                   f"the message's text is the task.{people}",
                    "tags": sorted({m.role for m in spec.members}),
                    "examples": [spec.task]}],
    }
    if secured:
        card["securitySchemes"] = {"bearer": {"httpAuthSecurityScheme": {
            "scheme": "Bearer", "description": "a token of the host (wop serve --tokens)"}}}
        card["securityRequirements"] = [{"schemes": {"bearer": {}}}]
    return card
