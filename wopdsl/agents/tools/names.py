"""One tool per name: what a member's tools are called by the model, and the clashes refused.

The model calls a tool by its name alone, so two of a member's tools with one name would
leave one of them unreachable, whichever the member listed first. Both orders are refused with
the same message (compile time when the names are known from the references, and when the
MCP servers list their tools otherwise), naming the member, both tools and how to fix it.
"""

from __future__ import annotations

from wopdsl.model.tools import parse_tool_ref

__all__ = ["clash", "describe_source"]


def describe_source(reference: str, remote: str | None = None) -> str:
    """How a tool came to the member: ``the Python function ops:count``, an MCP tool ….

    Args:
        reference: The member's entry in ``tools`` (``mcp:SERVER/*`` for a listed tool).
        remote: The MCP tool's name on its server (for a ``mcp:SERVER/*`` entry).
    """
    parsed = parse_tool_ref(reference)
    if parsed.kind == "python":
        return f"the Python function {reference}"
    if parsed.kind == "registered":
        return f"the @council.tool function '{reference}'"
    if parsed.target == "*":
        return f"the MCP tool '{remote}' of server '{parsed.server}' (listed by {reference})"
    return f"the MCP tool '{parsed.target}' of server '{parsed.server}' ({reference})"


def clash(member: str, name: str, first: tuple[str, str | None],
          second: tuple[str, str | None]) -> tuple[str, str]:
    """The message and hint for two of ``member``'s tools both named ``name``.

    Args:
        member: The member id.
        name: The name both tools have for the model.
        first: The member's reference of one tool, and its MCP name (``None`` for Python).
        second: The same for the other tool.

    The two are put in one order (Python before MCP, then by reference), so the message is
    the same whichever the member lists first.
    """
    pair = sorted((first, second), key=lambda source: (source[0].startswith("mcp:"),
                                                      source[0], source[1] or ""))
    described = [describe_source(ref, remote) for ref, remote in pair]
    message = (f"{member}: two tools would be named '{name}' for the model: {described[0]} "
               f"and {described[1]}; a model calls tools by name, so one would hide the "
               "other")
    fixes = ["keep one of them in the member's tools"]
    if any(not ref.startswith("mcp:") for ref, _ in pair):
        fixes.append("rename the Python function (or register it under another name with "
                     "@council.tool(name=...))")
    wildcards = [ref for ref, _ in pair if ref.endswith("/*")]
    if wildcards:
        fixes.append(f"list the tools of {wildcards[0]} one by one and leave '{name}' out")
    return message, "; or ".join(fixes)
