"""The model of the ``conformance-approval`` fixture: deterministic, on loopback, in-process.

wopdsl's approval gate is the one around a tool call of an ``llm`` member (DESIGN.md §20),
so the fixture's gate (node ``gate``) is an ``llm`` member whose tool ``proceed`` needs the
human member ``approver``'s approval, and a model must ask for the call. With
``wop serve --conformance`` the host answers those model calls itself: a scripted
OpenAI-wire server (:class:`~wopdsl.testing.model_server.ScriptedModelServer`) on
``127.0.0.1``, started and stopped with the app, whose answer depends only on the
conversation so far:

- no tool result yet: a call of ``proceed`` (the turn suspends: ``waiting-approval``);
- a tool result: the turn result ``{"summary": "proceeded"}``, or ``{"summary": "did not
  proceed: …"}`` when the call was rejected (the rejection is the tool's result).

The gate member's model client is given this object as its tap
(:mod:`wopdsl.agents.llm.tap`): the address is read at each call, so the council (and its
digest) never names the port, and a waiting run survives a restart of the host.
"""

from __future__ import annotations

import importlib.util
from typing import Any, Final

from wopdsl import Council
from wopdsl.testing.model_server import Answer, CapturedRequest, ScriptedModelServer, ToolCalls

__all__ = ["GATE", "TOOL", "StandIn", "llm_installed"]

GATE: Final = "gate"
"""The fixture's gate: the ``llm`` member whose call waits (its node id)."""
TOOL: Final = "proceed"
"""The tool whose call needs the approval."""
_NOWHERE: Final = "http://127.0.0.1:9/v1"
"""Where a call made while the stand-in is stopped goes: nowhere (connection refused)."""


def llm_installed() -> bool:
    """Whether the ``openai`` client (``wopdsl[llm]``) is installed: ``llm`` members need it."""
    try:
        return importlib.util.find_spec("openai") is not None
    except (ImportError, ValueError):  # A broken or blocked install counts as missing.
        return False


def answer(request: CapturedRequest) -> Answer | ToolCalls:
    """The stand-in's answer to one model call of the gate's turn (see the module docs)."""
    body = request.body if isinstance(request.body, dict) else {}
    results = [m for m in body.get("messages", [])
               if isinstance(m, dict) and m.get("role") == "tool"]
    if not results:
        return ToolCalls((TOOL, {}))
    if "(REJECTED)" in str(results[-1].get("content", "")):
        return Answer({"summary": "did not proceed: the call was rejected"})
    return Answer({"summary": "proceeded"})


class StandIn:
    """The fixture's model server, and the tap that sends the gate's calls to it."""

    def __init__(self) -> None:
        self._server: ScriptedModelServer | None = None

    def attach(self, council: Council) -> None:
        """Send the calls of ``council``'s gate member to this stand-in (once compiled)."""
        client: Any = getattr(council.compile().members[GATE].agent, "client", None)
        if client is None:
            raise TypeError(f"{council.id}: member {GATE} is not an llm member")
        client.tap = self

    def base_url(self, profile: str, upstream: str | None) -> str:
        """The API root the gate's calls go to (the ``ModelTap`` protocol)."""
        server = self._server
        return server.url if server is not None else _NOWHERE

    def start(self) -> None:
        """Start serving (the app's startup)."""
        if self._server is None:
            server = ScriptedModelServer(keep_requests=False)
            server.default = answer
            self._server = server.start()

    def stop(self) -> None:
        """Stop serving (the app's shutdown)."""
        server, self._server = self._server, None
        if server is not None:
            server.stop()
