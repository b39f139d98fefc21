"""A member's tools: resolved at compile (Python) and at start (MCP listings), with policies.

Python tools are known when the council compiles. MCP tools are known once their servers
answer: :meth:`Toolset.open` (at run start, and by ``wop validate``) lists each server's tools,
checks every ``mcp:SERVER/TOOL`` the member names, expands ``mcp:SERVER/*``, and refuses two
tools with one name (in either order), more tools than ``max_tools`` or a policy for a tool
the member does not have.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from wopdsl.agents.tools.base import Policy, Tool, ToolSetupError
from wopdsl.agents.tools.mcp import McpConnection, McpTool
from wopdsl.agents.tools.names import clash
from wopdsl.model.tools import (
    DEFAULT_MAX_TOOL_CALLS,
    DEFAULT_MAX_TOOL_ERRORS,
    DEFAULT_MAX_TOOLS,
    MAX_TOOLS_LIMIT,
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
        max_tools: Most tools offered to the model (the member's ``max_tools``).
        order: Every reference in the member's order.
    """

    member: str
    local: dict[str, Tool]
    remote: list[str] = field(default_factory=list)
    connections: Mapping[str, McpConnection] = field(default_factory=dict)
    policies: Mapping[str, ToolPolicy] = field(default_factory=dict)
    max_calls: int = DEFAULT_MAX_TOOL_CALLS
    max_errors: int = DEFAULT_MAX_TOOL_ERRORS
    max_tools: int = DEFAULT_MAX_TOOLS
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
            ToolSetupError: a named MCP tool is missing, two tools share a name, the member
                would be offered more than ``max_tools``, or a policy names no tool of it.
        """
        chosen = self._chosen()
        self._check_count(chosen)
        tools: dict[str, Tool] = {}
        sources: dict[str, tuple[str, str | None]] = {}
        for ref, item in chosen:
            tool = item if isinstance(item, Tool) else McpTool(
                self.connections[parse_tool_ref(ref).server or ""], item)
            source = (ref, tool.remote if isinstance(tool, McpTool) else None)
            known = tools.get(tool.name)
            if known is not None and known.reference != tool.reference:
                message, hint = clash(self.member, tool.name, sources[tool.name], source)
                raise ToolSetupError(message, hint=hint, reference=ref)
            tools[tool.name] = tool
            sources.setdefault(tool.name, source)
        unknown = sorted(set(self.policies) - set(tools))
        if unknown:
            raise ToolSetupError(f"{self.member}: tool_policy names "
                                 f"{', '.join(unknown)}, not among its tools "
                                 f"({', '.join(sorted(tools)) or 'none'})",
                                 hint="key each policy by the name of one of its tools")
        return tools

    def _chosen(self) -> list[tuple[str, Any]]:
        """Each reference with what it brings: a Python tool, or a server's listed tools."""
        chosen: list[tuple[str, Any]] = []
        local = {tool.reference: tool for tool in self.local.values()}
        for ref in self.order or [*local, *self.remote]:
            if ref in local:
                chosen.append((ref, local[ref]))
                continue
            if ref not in self.remote:
                continue
            parsed = parse_tool_ref(ref)
            connection = self.connections[parsed.server or ""]
            listing = connection.listing
            if parsed.target == "*":
                chosen.extend((ref, listed) for listed in listing.values())
            elif parsed.target in listing:
                chosen.append((ref, listing[parsed.target]))
            else:
                raise ToolSetupError(
                    f"{self.member}: MCP server '{connection.name}' has no tool "
                    f"'{parsed.target}' (it lists: {_some(sorted(listing))})",
                    hint=f"fix '{ref}' in the member's tools", reference=ref)
        return chosen

    def _check_count(self, chosen: list[tuple[str, Any]]) -> None:
        """Refuse to offer more than ``max_tools`` (before any tool object is built)."""
        offered = {item.reference if isinstance(item, Tool) else
                   (parse_tool_ref(ref).server, str(item.name)) for ref, item in chosen}
        if len(offered) <= self.max_tools:
            return
        counts: dict[str, int] = {}
        for ref, _ in chosen:
            if ref.endswith("/*"):
                counts[ref] = counts.get(ref, 0) + 1
        listed = "; ".join(f"{ref} lists {count:,}" for ref, count in counts.items())
        wildcard = next(iter(counts), None)
        instead = (f"name the tools it needs one by one instead of {wildcard}" if wildcard
                   else "give it fewer tools")
        raise ToolSetupError(
            f"{self.member}: {len(offered):,} tools would be offered to the model, more than "
            f"max_tools = {self.max_tools}" + (f" ({listed})" if listed else ""),
            hint=f"{instead}, or raise the member's max_tools (at most {MAX_TOOLS_LIMIT}); "
                 "every model request carries every tool's schema",
            reference=wildcard)


_NAMED: Final = 20
"""Names of a server's tools quoted in an error (a server may list thousands)."""


def _some(names: list[str]) -> str:
    """``a, b, c`` — at most :data:`_NAMED` of them, then how many more."""
    if not names:
        return "none"
    more = len(names) - _NAMED
    return ", ".join(names[:_NAMED]) + (f" and {more:,} more" if more > 0 else "")
