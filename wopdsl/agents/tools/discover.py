"""Open members' toolsets before a run (or for ``wop validate``) and describe them.

Opening starts (or joins) each MCP server the members name, lists its tools and checks every
reference: a missing tool or two tools with one name is a problem of the declaration, found
before anything is written (``wop validate`` reports a server that will not start too; a run
meets that one in the member's turn).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from wopdsl.agents.tools.base import Policy, ToolSetupError
from wopdsl.agents.tools.toolset import Toolset

__all__ = ["ToolLine", "ToolSetupError", "close_toolsets", "describe", "open_toolsets"]


@dataclass(frozen=True, slots=True)
class ToolLine:
    """One tool of a member, as ``wop validate`` lists it."""

    name: str
    reference: str
    policy: Policy

    def render(self) -> str:
        """``name (reference; approval oncall; idempotent; timeout 30 s)``."""
        extra = [self.reference]
        if self.policy.approval:
            extra.append(f"approval {self.policy.approval}")
        extra.append("idempotent" if self.policy.idempotent else "not idempotent")
        extra.append(f"timeout {self.policy.timeout_s:g} s")
        return f"{self.name} ({'; '.join(extra)})"


async def open_toolsets(toolsets: Iterable[Toolset]) -> list[Toolset]:
    """Open every toolset; return them (close them with :func:`close_toolsets`).

    Raises:
        ToolSetupError: one cannot be opened (those opened before are closed again).
    """
    opened: list[Toolset] = []
    try:
        for toolset in toolsets:
            await toolset.open()
            opened.append(toolset)
    except BaseException:
        await close_toolsets(opened)
        raise
    return opened


async def close_toolsets(toolsets: Iterable[Toolset]) -> None:
    """Close toolsets opened by :func:`open_toolsets` (the last user stops each server)."""
    for toolset in toolsets:
        await toolset.close()


def describe(toolset: Toolset) -> list[ToolLine]:
    """The member's tools in declaration order (open MCP toolsets first)."""
    return [ToolLine(name, tool.reference, toolset.policy(name))
            for name, tool in toolset.tools.items()]

