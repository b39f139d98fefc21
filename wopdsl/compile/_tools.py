"""Private: build each ``llm`` member's :class:`~wopdsl.agents.tools.Toolset` at compile time.

Python tools are imported and described here (a missing function, an unannotated parameter
or two tools with one name — Python or a named MCP tool, in either order — is a compile
problem with the member's field path); MCP servers
become :class:`~wopdsl.agents.tools.McpConnection` objects shared by the council's members,
started only when a run (or ``wop validate``) opens them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from wopdsl.agents.tools import McpConnection, PythonTool, Tool, Toolset
from wopdsl.agents.tools.names import clash
from wopdsl.compile.handlers import import_handler
from wopdsl.errors import Problem
from wopdsl.model.spec import CouncilSpec, MemberSpec
from wopdsl.model.tools import (
    DEFAULT_MAX_TOOL_CALLS,
    DEFAULT_MAX_TOOLS,
    parse_tool_ref,
    tool_name,
)

__all__ = ["build_toolset", "build_toolsets", "connections_of"]


def build_toolsets(spec: CouncilSpec, tools: Mapping[str, Callable[..., Any]],
                   base_dir: str | Path | None, problems: list[Problem]) -> dict[str, Toolset]:
    """Every ``llm`` member's toolset by member id (their MCP servers shared)."""
    connections = connections_of(spec, base_dir)
    out: dict[str, Toolset] = {}
    for index, member in enumerate(spec.members):
        if member.engine == "llm":
            toolset = build_toolset(member, index, tools, base_dir, connections, problems)
            if toolset is not None:
                out[member.id] = toolset
    return out


def connections_of(spec: CouncilSpec, base_dir: str | Path | None) -> dict[str, McpConnection]:
    """One connection object per ``[mcp.NAME]`` server (nothing is started)."""
    folder = Path(base_dir).resolve() if base_dir is not None else None
    return {name: McpConnection(name, server, folder) for name, server in spec.mcp.items()}


def build_toolset(member: MemberSpec, index: int, tools: Mapping[str, Callable[..., Any]],
                  base_dir: str | Path | None, connections: Mapping[str, McpConnection],
                  problems: list[Problem]) -> Toolset | None:
    """The member's toolset, or ``None`` when it has no tools (problems are appended)."""
    if not member.tools:
        return None
    local: dict[str, Tool] = {}
    remote: list[str] = []
    names: dict[str, tuple[str, str | None]] = {}  # model name -> (reference, MCP name)
    for position, ref in enumerate(member.tools):
        path = f"members[{index}].tools[{position}]"
        parsed = parse_tool_ref(ref)
        if parsed.kind == "mcp":
            remote.append(ref)
            if parsed.target != "*":  # its name is known now; a listing's at start
                _claim(member.id, tool_name(parsed.target), (ref, parsed.target), names,
                       path, problems)
            continue
        if parsed.kind == "registered":
            fn = tools.get(ref)
            if fn is None:
                problems.append(Problem(
                    f"'{ref}' is not a registered tool (registered with @council.tool: "
                    f"{', '.join(sorted(tools)) or 'none'})", path=path,
                    hint="register the function with @council.tool, or name it as "
                         "'module:function' (imported from the council file's folder)"))
                continue
        else:
            try:
                fn = import_handler(ref, base_dir)
            except Exception as exc:
                problems.append(Problem(f"cannot import tool '{ref}': {exc}", path=path,
                                        hint="name a module:function importable from the "
                                             "council file's folder"))
                continue
        try:
            tool = PythonTool(fn, name=ref if parsed.kind == "registered" else None,
                              reference=ref)
        except TypeError as exc:
            problems.append(Problem(f"tool '{ref}' cannot be described to a model: {exc}",
                                    path=path, hint="annotate every parameter of the "
                                    "function with a type (str, int, a pydantic model …)"))
            continue
        if _claim(member.id, tool.name, (ref, None), names, path, problems):
            local[tool.name] = tool
    return Toolset(member.id, local, remote, connections, dict(member.tool_policy or {}),
                   max_calls=member.max_tool_calls or DEFAULT_MAX_TOOL_CALLS,
                   max_tools=member.max_tools or DEFAULT_MAX_TOOLS, order=list(member.tools))


def _claim(member: str, name: str, source: tuple[str, str | None],
           names: dict[str, tuple[str, str | None]], path: str,
           problems: list[Problem]) -> bool:
    """Give ``name`` to the tool of ``source``; a problem if another tool has it already."""
    if name in names:
        message, hint = clash(member, name, names[name], source)
        problems.append(Problem(message, path=path, hint=hint))
        return False
    names[name] = source
    return True
