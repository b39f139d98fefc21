"""A member's tools: resolved at compile (Python) and at start (MCP listings), with policies.

Python tools are known when the council compiles. MCP tools are known once their servers
answer: :meth:`Toolset.open` (at run start, and by ``wop validate``) lists each server's tools,
checks every ``mcp:SERVER/TOOL`` the member names, expands ``mcp:SERVER/*``, and refuses two
tools with one name or a policy for a tool the member does not have.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from wopdsl.agents.tools.base import Policy, Tool, ToolSetupError
from wopdsl.agents.tools.mcp import McpConnection, McpTool
from wopdsl.model.tools import (
    DEFAULT_MAX_TOOL_CALLS,
    DEFAULT_MAX_TOOL_ERRORS,
    ToolPolicy,
    parse_tool_ref,
)

__all__ = ["Toolset"]


@dataclass
class Toolset:
    """The tools one ``llm`` member may call.

    Args:
        member: The member id.
        local: Its Python tools, by name.
        remote: Its MCP references (``mcp:SERVER/TOOL`` or ``mcp:SERVER/*``), in order.
        connections: The council's MCP servers, by name.
        policies: Its declared ``tool_policy`` tables.
        max_calls: Most tool calls per turn.
        max_errors: Tool errors handed back to the model per turn before the turn fails.
        order: Every reference in the member's order.
    """

    member: str
    local: dict[str, Tool]
    remote: list[str] = field(default_factory=list)
    connections: Mapping[str, McpConnection] = field(default_factory=dict)
    policies: Mapping[str, ToolPolicy] = field(default_factory=dict)
    max_calls: int = DEFAULT_MAX_TOOL_CALLS
    max_errors: int = DEFAULT_MAX_TOOL_ERRORS
    order: list[str] = field(default_factory=list)
    """Every reference as the member lists them (tools are offered in this order)."""
    tools: dict[str, Tool] = field(default_factory=dict)
    """Every tool by the name the model calls it, once :meth:`open` listed the servers."""
    known_down: ToolSetupError | None = None
    """A server failure a check just before the run met (``wop run``): the next
    :meth:`open` raises it instead of starting the server a second time."""
    _open: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        self.tools = dict(self.local)
        if not self.remote:  # all known now: in the member's order (open() does the rest)
            with contextlib.suppress(ToolSetupError):  # compile reports what is missing
                self.tools = self.resolve()

    @property
    def servers(self) -> list[McpConnection]:
        """The MCP servers this member's tools live on."""
        names = dict.fromkeys(parse_tool_ref(ref).server or "" for ref in self.remote)
        return [self.connections[name] for name in names if name in self.connections]

    def policy(self, name: str) -> Policy:
        """The effective policy of tool ``name``."""
        return Policy.of(self.policies.get(name))

    def definitions(self) -> list[dict[str, Any]]:
        """The ``tools`` list of a Chat Completions request."""
        return [tool.definition() for tool in self.tools.values()]

    async def open(self) -> None:
        """Start (or join) the member's MCP servers and resolve its MCP tools.

        Raises:
            ToolSetupError: a server cannot be reached, lacks a named tool, or two tools
                share a name.
        """
        if self.known_down is not None:
            failure, self.known_down = self.known_down, None
            raise failure
        acquired: list[McpConnection] = []
        try:
            for connection in self.servers:
                await connection.acquire()
                acquired.append(connection)
            self.tools = self.resolve()
        except BaseException:
            for connection in acquired:
                await connection.release()
            raise
        self._open += 1

    async def close(self) -> None:
        """Leave the member's MCP servers (the last run to leave closes them)."""
        if self._open == 0:
            return
        self._open -= 1
        for connection in self.servers:
            await connection.release()

    def resolve(self) -> dict[str, Tool]:
        """Every tool by model name, from the Python tools and the servers' listings.

        Raises:
            ToolSetupError: a named MCP tool is missing, two tools share a name, or a
                policy names no tool of the member.
        """
        tools: dict[str, Tool] = {}
        local = {tool.reference: tool for tool in self.local.values()}
        for ref in self.order or [*local, *self.remote]:
            if ref in local:
                tools[local[ref].name] = local[ref]
                continue
            if ref not in self.remote:
                continue
            parsed = parse_tool_ref(ref)
            connection = self.connections[parsed.server or ""]
            listing = connection.listing
            if parsed.target == "*":
                chosen = list(listing.values())
            elif parsed.target in listing:
                chosen = [listing[parsed.target]]
            else:
                raise ToolSetupError(
                    f"{self.member}: MCP server '{connection.name}' has no tool "
                    f"'{parsed.target}' (it lists: {', '.join(sorted(listing)) or 'none'})",
                    hint=f"fix '{ref}' in the member's tools", reference=ref)
            for listed in chosen:
                tool = McpTool(connection, listed)
                if tool.name in tools and tools[tool.name].reference != tool.reference:
                    raise ToolSetupError(
                        f"{self.member}: two tools are named '{tool.name}' "
                        f"({tools[tool.name].reference} and {tool.reference})",
                        hint="name one tool per name: list MCP tools one by one instead of "
                             "mcp:SERVER/*, or rename the Python function", reference=ref)
                tools[tool.name] = tool
        unknown = sorted(set(self.policies) - set(tools))
        if unknown:
            raise ToolSetupError(f"{self.member}: tool_policy names "
                                 f"{', '.join(unknown)}, not among its tools "
                                 f"({', '.join(sorted(tools)) or 'none'})",
                                 hint="key each policy by the name of one of its tools")
        return tools
