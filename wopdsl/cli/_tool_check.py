"""Private: the CLI's look at members' tools before a run — start MCP servers, list, check.

``wop validate`` lists each member's tools (starting the MCP servers together to list theirs,
saying so, unless a server let its list be cached) and the worst case of tool calls; ``wop
run`` checks the same before writing anything, keeps the servers it started for the run, and
refreshes the cache from their live lists. A problem (a tool the server does not have; for
``wop validate`` also a server that will not start) is a ``DECLARATION_INVALID`` located at
the member's ``tools`` in the file. ``wop run`` starts a run whose server is down as every
front end does: the member's turns fail, naming the server (docs/guides/tools.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
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
        from wopdsl.agents.tools import listing_cache

        for connection in {c.name: c for t in opened.values() for c in t.servers}.values():
            listing_cache.save(connection)  # a live listing replaces wop validate's entry
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


async def tool_lines(council: Council, *, use_cache: bool = True,
                     note: Callable[[str], None] = lambda line: None) -> dict[str, list[str]]:
    """Each member's tools as ``wop validate`` prints them.

    Servers whose tool list is cached (as long as the server allows, see
    :mod:`wopdsl.agents.tools.listing_cache`) are not started; the others are started together,
    listed and stopped. ``note`` is told what is waited for, and what came from the cache. A
    cached list never fails the check: a problem found in it is checked again live.

    Raises:
        DeclarationError: a server cannot be listed, or a member's tools do not fit its
            servers' (located at the member's ``tools``).
    """
    toolsets = council.compile().toolsets()
    if not toolsets:
        return {}
    from wopdsl.agents.tools import listing_cache
    from wopdsl.agents.tools.discover import describe

    connections = {c.name: c for toolset in toolsets.values() for c in toolset.servers}
    cached: set[str] = set()
    for name, connection in connections.items() if use_cache else ():
        hit = listing_cache.load(connection)
        if hit is not None:
            connection.adopt(hit.tools, protocol=hit.protocol, server_info=hit.server_info)
            cached.add(name)
            note(f"tools of MCP server '{name}'{_named(hit.server_info)} from the cache: "
                 f"listed {_span(hit.age_s())} ago, kept up to {_span(hit.ttl_s)} as the "
                 "server allows (--no-cache lists them again)")
    started: list[Any] = []
    try:
        await _list_live(council, toolsets, [c for n, c in connections.items()
                                             if n not in cached], started, note)
        while (failed := _resolve_all(toolsets)) is not None:
            member, exc = failed
            stale = [c for c in toolsets[member].servers if c.name in cached]
            if not stale:
                raise _located(council, member, exc)
            note(f"the cached tools of MCP server(s) {_names(stale)} do not fit {member}'s "
                 "tools: listing them again")
            cached.difference_update(c.name for c in stale)
            await _list_live(council, toolsets, stale, started, note)
        return {member: [line.render() for line in describe(toolset)]
                for member, toolset in toolsets.items()}
    finally:
        for connection in started:
            await connection.release()


def _resolve_all(toolsets: dict[str, Any]) -> tuple[str, Any] | None:
    """Resolve every toolset from its servers' listings; the first member that fails."""
    from wopdsl.agents.tools.discover import ToolSetupError

    for member, toolset in toolsets.items():
        try:
            toolset.tools = toolset.resolve()
        except ToolSetupError as exc:
            return member, exc
    return None


async def _list_live(council: Council, toolsets: dict[str, Any], connections: list[Any],
                     started: list[Any], note: Callable[[str], None]) -> None:
    """Start (or reach) the servers together, saying so; keep what they allow in the cache.

    Raises:
        DeclarationError: one cannot be listed (at the first member using it).
    """
    if not connections:
        return
    from wopdsl.agents.tools import listing_cache

    for connection in connections:
        verb = "starting" if connection.spec.transport == "stdio" else "connecting to"
        note(f"{verb} MCP server '{connection.name}' ({connection.spec.transport}) to list "
             "its tools …")
    outcomes = await asyncio.gather(*(_timed(c.acquire()) for c in connections),
                                    return_exceptions=True)
    failure = None
    for connection, outcome in zip(connections, outcomes, strict=True):
        if isinstance(outcome, BaseException):
            failure = failure or (connection, outcome)
            continue
        took = outcome
        started.append(connection)
        listing_cache.save(connection)
        kept = (f"cached for {_span(connection.cache_ttl_ms / 1000)} as the server allows"
                if connection.cache_ttl_ms > 0 else "not cached: its tools/list does not "
                "allow it (no public ttlMs)")
        note(f"MCP server '{connection.name}'{_named(connection.server_info)} listed "
             f"{len(connection.listing):,} tools in {took:.1f} s; {kept}")
    if failure is not None:
        from wopdsl.agents.tools.discover import ToolSetupError

        connection, exc = failure
        if not isinstance(exc, ToolSetupError):
            raise exc
        member = next(m for m, t in toolsets.items() if connection in t.servers)
        raise _located(council, member, exc)


async def _timed(step: Awaitable[None]) -> float:
    """Await ``step``; the seconds it took."""
    began = time.monotonic()
    await step
    return time.monotonic() - began


def _named(info: tuple[str, str]) -> str:
    """`` (NAME VERSION)`` as the server reported them, or nothing."""
    text = " ".join(part for part in info if part)
    return f" ({text})" if text else ""


def _names(connections: list[Any]) -> str:
    return ", ".join(f"'{c.name}'" for c in connections)


def _span(seconds: float) -> str:
    """``12 s``, ``5 min``, ``1.5 h``."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    return f"{round(seconds / 3600, 1):g} h"


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
