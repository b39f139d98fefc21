"""Private: the CLI's look at members' tools before a run — start MCP servers, list, check.

``wop validate`` lists each member's tools (starting the MCP servers to list theirs) and the
worst case of tool calls; ``wop run`` checks the same before writing anything and keeps the
servers it started for the run. A problem (a tool the server does not have; for ``wop
validate`` also a server that will not start) is a ``DECLARATION_INVALID`` located at the
member's ``tools`` in the file. ``wop run`` starts a run whose server is down as every front
end does: the member's turns fail, naming the server (docs/guides/tools.md).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from wopdsl import Council, DeclarationError
from wopdsl.errors import Problem

__all__ = ["opened_tools", "tool_lines", "tool_worst_case"]


@contextlib.asynccontextmanager
async def opened_tools(council: Council, *, down_ok: bool = False
                       ) -> AsyncIterator[dict[str, Any]]:
    """Open the members' toolsets for the block; yield them by member id.

    ``down_ok``: a server that cannot be started or reached is left to the run (its toolset
    is not yielded; the run's first start of it fails the same way without trying again).

    Raises:
        DeclarationError: a toolset cannot be opened (located at the member's ``tools``).
    """
    toolsets = council.compile().toolsets()
    if not toolsets:
        yield {}
        return
    from wopdsl.agents.tools.discover import ToolSetupError, close_toolsets

    opened: dict[str, Any] = {}
    try:
        for member, toolset in toolsets.items():
            try:
                await toolset.open()
            except ToolSetupError as exc:
                if down_ok and exc.server is not None:
                    toolset.known_down = exc
                    continue
                raise _located(council, member, exc) from None
            opened[member] = toolset
        yield opened
    finally:
        await close_toolsets(opened.values())


def _located(council: Council, member: str, exc: Any) -> DeclarationError:
    index, spec = next((i, m) for i, m in enumerate(council.spec.members) if m.id == member)
    refs = list(spec.tools or [])
    where = f"[{refs.index(exc.reference)}]" if exc.reference in refs else ""
    problem = Problem(exc.message, path=f"members[{index}] ({member}).tools{where}",
                      hint=exc.hint)
    declaration = council._declaration
    return DeclarationError(declaration.locate([problem]) if declaration is not None
                            else [problem])


async def tool_lines(council: Council) -> dict[str, list[str]]:
    """Each member's tools as ``wop validate`` prints them (servers started, then stopped)."""
    from wopdsl.agents.tools.discover import describe

    async with opened_tools(council) as toolsets:
        return {member: [line.render() for line in describe(toolset)]
                for member, toolset in toolsets.items()}


def tool_worst_case(council: Council, listed: dict[str, list[str]]) -> list[str]:
    """The worst case of tool calls: per member, cap × max_tool_calls, and the run's budget."""
    if not listed:
        return []
    graph = council.compile()
    toolsets = graph.toolsets()
    total = 0
    lines = []
    for member, toolset in toolsets.items():
        calls = graph.members[member].cap * toolset.max_calls
        total += calls
        lines.append(f"    {member}: {graph.members[member].cap} turns × {toolset.max_calls} "
                     f"tool calls (max_tool_calls) = {calls}")
    budget = council.spec.council.max_tool_calls
    bound = f", at most {budget} in the run (max_tool_calls)" if budget is not None else ""
    return [f"  worst case tool calls: {min(total, budget or total):,}{bound}", *lines]
