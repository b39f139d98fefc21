"""Private checks of members' tools, tool policies and ``[mcp.NAME]`` servers (``check_spec``)."""

from __future__ import annotations

import difflib
import importlib.util

from wopdsl.errors import Problem
from wopdsl.model.spec import CouncilSpec, MemberSpec
from wopdsl.model.tools import DEFAULT_MAX_TOOLS, MAX_TOOLS_LIMIT, parse_tool_ref, tool_name

__all__ = ["TOOL_KEYS", "check_tools", "mcp_extra_installed", "static_tool_names"]

TOOL_KEYS = ("tools", "tool_policy", "max_tool_calls", "max_tools")
"""Member keys about tools (``engine = "llm"`` only)."""


def mcp_extra_installed() -> bool:
    """Whether the official ``mcp`` package (``wopdsl[mcp]``) can be imported (not importing it)."""
    try:
        return importlib.util.find_spec("mcp") is not None
    except (ImportError, ValueError):  # a broken or blocked install counts as missing
        return False


def static_tool_names(member: MemberSpec) -> tuple[set[str], bool]:
    """The tool names known from the references alone, and whether a ``mcp:S/*`` adds more."""
    names: set[str] = set()
    wildcard = False
    for ref in member.tools or []:
        parsed = parse_tool_ref(ref)
        if parsed.kind == "mcp" and parsed.target == "*":
            wildcard = True
        else:
            names.add(tool_name(parsed.target.rpartition(":")[2].rpartition(".")[2]
                                if parsed.kind == "python" else parsed.target))
    return names, wildcard


def check_tools(spec: CouncilSpec, member: MemberSpec, where: str) -> list[Problem]:
    """Return the problems of one member's tool keys."""
    problems: list[Problem] = []
    if member.engine != "llm":
        return [Problem(f"{key} is only for engine 'llm' (this member's engine is "
                        f"'{member.engine}')", path=f"{where}.{key}",
                        hint=f'set engine = "llm", or remove {key}')
                for key in TOOL_KEYS if getattr(member, key) is not None]
    servers = list(spec.mcp)
    seen: dict[str, int] = {}
    uses_mcp = False
    for index, ref in enumerate(member.tools or []):
        path = f"{where}.tools[{index}]"
        if ref in seen:
            problems.append(Problem(f"tool '{ref}' is listed twice (first as tools"
                                    f"[{seen[ref]}])", path=path, hint="list each tool once"))
        seen.setdefault(ref, index)
        parsed = parse_tool_ref(ref)
        if parsed.kind != "mcp":
            continue
        uses_mcp = True
        if parsed.server not in spec.mcp:
            close = difflib.get_close_matches(parsed.server or "", servers, n=1, cutoff=0.6)
            problems.append(Problem(
                f"MCP server '{parsed.server}' is not declared (servers: "
                f"{', '.join(servers) or 'none'})", path=path,
                hint=(f"did you mean 'mcp:{close[0]}/{parsed.target}'?" if close else
                      f"declare it as [mcp.{parsed.server}] with command = \"...\" "
                      "or url = \"...\"")))
    if uses_mcp and not mcp_extra_installed():
        problems.append(Problem("mcp: tools need the official mcp package, which is not "
                                "installed", path=f"{where}.tools",
                                hint="pip install 'wopdsl[mcp]'"))
    names, wildcard = static_tool_names(member)
    humans = [m.id for m in spec.members if m.engine == "human"]
    for name, policy in (member.tool_policy or {}).items():
        path = f"{where}.tool_policy.{name}"
        if not member.tools:
            problems.append(Problem(f"tool_policy names '{name}' but the member has no tools",
                                    path=path, hint="add the tool to tools = [...], or "
                                    "remove this policy"))
        elif name not in names and not wildcard:
            close = difflib.get_close_matches(name, sorted(names), n=1, cutoff=0.6)
            problems.append(Problem(
                f"tool_policy names '{name}', which is not one of this member's tools "
                f"({', '.join(sorted(names)) or 'none'})", path=path,
                hint=f"did you mean '{close[0]}'?" if close else
                "policies are keyed by the tool's name (the function name, or the MCP tool)"))
        if policy.approval is not None and policy.approval not in humans:
            problems.append(Problem(
                f"approval names '{policy.approval}', which is not a human member (human "
                f"members: {', '.join(humans) or 'none'})", path=f"{path}.approval",
                hint="name a member with engine = \"human\" who decides each call"))
    for key in ("max_tool_calls", "max_tools"):
        if getattr(member, key) is not None and not member.tools:
            problems.append(Problem(f"{key} is set but the member has no tools",
                                    path=f"{where}.{key}",
                                    hint=f"add tools = [...], or remove {key}"))
    problems.extend(_too_many(member, where))
    return problems


def _too_many(member: MemberSpec, where: str) -> list[Problem]:
    """More tools named one by one than ``max_tools`` (an ``mcp:S/*`` is counted at start)."""
    cap = member.max_tools or DEFAULT_MAX_TOOLS
    named = {ref for ref in member.tools or [] if not ref.endswith("/*")}
    if len(named) <= cap:
        return []
    return [Problem(f"{len(named):,} tools are listed, more than max_tools = "
                    f"{cap}", path=f"{where}.tools",
                    hint=f"give the member the tools it needs, or raise max_tools (at most "
                         f"{MAX_TOOLS_LIMIT}); every model request carries every tool's "
                         "schema")]
