"""Compile council specs into executable graphs."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from wopdsl.agents.base import MemberAgent
from wopdsl.agents.human import ExternalAgent, HumanAgent
from wopdsl.agents.python import Handler, PythonAgent
from wopdsl.agents.script import ScriptAgent
from wopdsl.agents.templates import Renderer, TemplateProblem, compile_template
from wopdsl.compile._turn_schema import schema_checker
from wopdsl.compile.graph import CompiledMember, CompiledRoom, CouncilGraph
from wopdsl.compile.handlers import handler_reference, import_handler, public_text
from wopdsl.errors import DeclarationError, Problem
from wopdsl.model.checks import check_spec
from wopdsl.model.llm import DEFAULT_LLM_TURN_TIMEOUT_MS
from wopdsl.model.spec import CouncilSpec, MemberSpec, RoomSpec

__all__ = ["CompiledMember", "CompiledRoom", "CouncilGraph", "compile", "handler_reference"]


def compile(
    spec: CouncilSpec,
    handlers: Mapping[str, Handler] | None = None,
    *,
    base_dir: str | Path | None = None,
    source: str | None = None,
    checked: bool = False,
    tools: Mapping[str, Callable[..., Any]] | None = None,
) -> CouncilGraph:
    """Check every reference of ``spec`` and build the graph the engine runs.

    Args:
        spec: The council declaration.
        handlers: Python handlers by member id (they win over ``handler = "module:fn"``).
        base_dir: Where ``handler`` modules are imported from (the council file's folder).
        source: The council file, for error locations and ``run.started`` metadata.
        checked: ``spec`` came from the loader (or ``spec_from_data``), which already ran
            :func:`~wopdsl.model.checks.check_spec` on it: skip that second pass.
        tools: Python tool functions registered by name (``@council.tool``); members name
            them in ``tools = [...]``.

    Returns:
        The compiled graph.

    Raises:
        DeclarationError: listing every problem found (bad references, template syntax,
            handler imports, invalid turn schemas).

    Example:
        >>> from wopdsl import load
        >>> graph = compile(load("councils/release-team.toml").spec)
        >>> list(graph.members)
        ['writer', 'reviewer']
    """
    problems = [] if checked else list(check_spec(spec))
    if problems:
        raise DeclarationError([_with_source(p, source) for p in problems])
    handlers = dict(handlers or {})
    rooms = {room.id: _compile_room(room, problems) for room in spec.rooms}
    members: dict[str, CompiledMember] = {}
    settings = spec.council
    clients: dict[str, Any] = {}
    toolsets: dict[str, Any] = {}
    if any(member.tools for member in spec.members):
        # Imported here: councils without tools never load the tools package.
        from wopdsl.compile._tools import build_toolsets

        toolsets = build_toolsets(spec, tools or {}, base_dir, problems)
    for index, member in enumerate(spec.members):
        brief = _template(member.brief, f"members[{index}].brief", problems)
        timeout = member.turn_timeout_ms or settings.turn_timeout_ms
        if timeout is None and member.engine == "llm":
            timeout = DEFAULT_LLM_TURN_TIMEOUT_MS
        members[member.id] = CompiledMember(
            spec=member,
            index=index,
            cap=member.max_turns or settings.max_turns_per_member,
            rooms=tuple(r.id for r in spec.rooms if member.id in r.members),
            brief=brief,
            agent=(_llm_agent(spec, member, index, clients, problems,
                              member.max_output_bytes or settings.max_output_bytes,
                              toolsets.get(member.id))
                   if member.engine == "llm"
                   else _a2a_agent(spec, member,
                                   member.max_output_bytes or settings.max_output_bytes)
                   if member.engine == "a2a"
                   else _agent(member, index, handlers, base_dir, problems,
                               timeout / 1000 if timeout else None,
                               member.max_output_bytes or settings.max_output_bytes)),
            turn_timeout_s=timeout / 1000 if timeout else None,
            max_input_bytes=member.max_input_bytes or settings.max_input_bytes,
            max_output_bytes=member.max_output_bytes or settings.max_output_bytes,
            masked=any(r.blind or r.anonymous for r in spec.rooms if member.id in r.members),
            retries=settings.retries if member.retries is None else member.retries,
            retry_backoff_ms=settings.retry_backoff_ms if member.retry_backoff_ms is None
            else member.retry_backoff_ms,
        )
    unknown = sorted(set(handlers) - set(members))
    problems.extend(
        Problem(f"a handler is bound to '{m}', which is not a member", path="handlers",
                hint="bind handlers to declared member ids")
        for m in unknown
    )
    if problems:
        raise DeclarationError([_with_source(p, source) for p in problems])
    return CouncilGraph(spec=spec, members=members, rooms=rooms, digest=spec.digest(),
                        source=source,
                        definition=spec.definition())


def _with_source(problem: Problem, source: str | None) -> Problem:
    if problem.source is not None or source is None:
        return problem
    return Problem(problem.message, problem.path, problem.hint, source, problem.line,
                   problem.column)


def _template(text: str, path: str, problems: list[Problem]) -> Renderer:
    try:
        return compile_template(text)
    except TemplateProblem as exc:
        line = f" (template line {exc.line})" if exc.line else ""
        problems.append(Problem(f"template syntax error: {exc}{line}",
                                path=path, hint="fix the Jinja2 template syntax"))
        return compile_template("")


def _compile_room(room: RoomSpec, problems: list[Problem]) -> CompiledRoom:
    check = None
    if room.turn_schema is not None:
        check = schema_checker(room.turn_schema, f"rooms ({room.id}).turn_schema", problems)
    return CompiledRoom(
        id=room.id,
        members=tuple(room.members),
        member_set=frozenset(room.members),
        title=room.title or room.id,
        turn_schema=room.turn_schema,
        check_content=check,
    )


def _agent(
    member: MemberSpec,
    index: int,
    handlers: Mapping[str, Handler],
    base_dir: str | Path | None,
    problems: list[Problem],
    timeout_s: float | None = None,
    max_output_bytes: int = 262_144,
) -> MemberAgent | None:
    if member.engine == "human":
        return HumanAgent()
    if member.engine == "external":
        return ExternalAgent()
    if member.engine == "script":
        try:
            return ScriptAgent(member.script or [], timeout_s=timeout_s,
                               max_chars=max_output_bytes)
        except TemplateProblem as exc:
            line = f" (template line {exc.line})" if exc.line else ""
            problems.append(Problem(f"template syntax error in script: {exc}{line}",
                                    path=f"members[{index}].script{exc.where}",
                                    hint="fix the Jinja2 template syntax"))
            return None
    if member.id in handlers:
        return PythonAgent(handlers[member.id])
    if member.handler is None:
        return None
    try:
        return PythonAgent(import_handler(member.handler, base_dir))
    except Exception as exc:
        problems.append(Problem(f"cannot import handler '{member.handler}': "
                                f"{public_text(str(exc))}",
                                path=f"members[{index}].handler",
                                hint="name a module:function importable from the council "
                                     "file's folder"))
        return None


def _llm_agent(spec: CouncilSpec, member: MemberSpec, index: int, clients: dict[str, Any],
               problems: list[Problem], max_output_bytes: int,
               toolset: Any = None) -> MemberAgent | None:
    # Imported here: the llm engine's modules are only needed by councils that use it (and
    # they import the openai package only when the first call is made).
    from wopdsl.agents.llm import LlmAgent, ProfileClient, PromptTemplates, RoomView
    from wopdsl.model.llm import DEFAULT_REPAIR_ATTEMPTS

    assert member.model is not None  # check_spec guarantees it
    profile = spec.models[member.model]
    client = clients.get(member.model)
    if client is None:
        client = clients[member.model] = ProfileClient(member.model, profile)
    rooms = tuple(RoomView(room.id, room.title or room.id,
                           tuple(m for m in room.members if m != member.id))
                  for room in spec.rooms if member.id in room.members)
    chair = spec.council.chair == member.id
    try:
        templates = PromptTemplates(member.id, rooms, system_prompt=member.system_prompt,
                                    turn_prompt=member.turn_prompt, chair=chair)
    except TemplateProblem as exc:
        key = "system_prompt" if member.system_prompt else "turn_prompt"
        problems.append(Problem(f"template syntax error: {exc} (template line {exc.line})",
                                path=f"members[{index}].{key}",
                                hint="fix the Jinja2 template syntax"))
        return None
    return LlmAgent(
        member.id, client, templates,
        temperature=member.temperature if member.temperature is not None
        else profile.temperature,
        max_output_tokens=member.max_output_tokens or profile.max_output_tokens,
        repair_attempts=member.repair_attempts if member.repair_attempts is not None
        else DEFAULT_REPAIR_ATTEMPTS, max_output_bytes=max_output_bytes, toolset=toolset,
        votes=_votes_of(spec, member.id))


def _a2a_agent(spec: CouncilSpec, member: MemberSpec, max_output_bytes: int) -> MemberAgent:
    # Imported here: only councils with a2a members load the engine (the SDK loads later).
    from wopdsl.agents.a2a import A2aAgent
    from wopdsl.agents.llm.prompts import RoomView

    assert member.url is not None  # check_spec guarantees it
    rooms = tuple(RoomView(room.id, room.title or room.id,
                           tuple(m for m in room.members if m != member.id))
                  for room in spec.rooms if member.id in room.members)
    return A2aAgent(member.id, member.url, dict(member.headers or {}), rooms,
                    max_output_bytes=max_output_bytes)


def _votes_of(spec: CouncilSpec, member: str) -> int:
    """How many decisions ``member`` votes on (default voters: the room's members but the chair)."""
    rooms = {room.id: room.members for room in spec.rooms}
    return sum(1 for d in spec.decisions
               if member in (d.voters if d.voters is not None else
                             [m for m in rooms.get(d.room, ()) if m != spec.council.chair]))
