"""Private: ``wop validate`` — load and compile a council, and say what it will do."""

from __future__ import annotations

import argparse
from typing import Any

from wopdsl.cli._output import EXIT_OK, print_json
from wopdsl.cli._targets import Context, load_council

__all__ = ["cmd_validate", "decision_summary", "worst_case_lines"]


def cmd_validate(ctx: Context, args: argparse.Namespace) -> int:
    """``wop validate FILE``: load and compile; print a summary."""
    council = load_council(args.file)
    graph = council.check_runnable()
    graph.check_rosters(args.max_participants)
    spec = graph.spec
    settings = spec.council
    out = ctx.out
    tools: dict[str, list[str]] = {}
    if graph.toolsets():  # starts the MCP servers to list their tools (DESIGN.md §20)
        import asyncio

        from wopdsl.cli._tool_check import tool_lines

        def note(line: str) -> None:  # on stderr: what validate waits for, or reuses
            print(f"note: {line}", file=ctx.err, flush=True)

        tools = asyncio.run(tool_lines(council, use_cache=not args.no_cache, note=note))
    agents: dict[str, dict[str, Any]] = {}
    if any(m.engine == "a2a" for m in spec.members):  # reads each agent's card (§25)
        import asyncio

        from wopdsl.cli._a2a_check import agent_lines

        agents = asyncio.run(agent_lines(council))
    if args.json:
        doc = {"status": "ok", "council": spec.id, "version": settings.version,
               "rooms": {r.id: list(r.members) for r in graph.rooms.values()},
               "members": [m.id for m in graph.members.values()]}
        if tools:
            doc["tools"] = tools
        if agents:
            doc["agents"] = agents
        print_json(doc, out)
        return EXIT_OK
    print(f"ok: council {spec.id} (version {settings.version})", file=out)
    print(f"  task: {settings.task}", file=out)
    print(f"  limits: global_concurrency={settings.global_concurrency} "
          f"max_turns_per_member={settings.max_turns_per_member} "
          f"tail_messages={settings.tail_messages}", file=out)
    print(f"  rooms ({len(graph.rooms)}):", file=out)
    for spec_room in spec.rooms:
        how = [f"{spec_room.rounds} round{'s' if spec_room.rounds != 1 else ''}"
               if spec_room.rounds else "", "blind" if spec_room.blind else "",
               "anonymous" if spec_room.anonymous else "",
               f"@all wakes at most {spec_room.max_wake}" if spec_room.max_wake else ""]
        shown = ", ".join(h for h in how if h)
        print(f"    {spec_room.id}: {', '.join(spec_room.members)}"
              + (f" ({shown})" if shown else ""), file=out)
    for line in decision_summary(spec):
        print(line, file=out)
    print(f"  members ({len(graph.members)}):", file=out)
    for member in graph.members.values():
        extra = []
        if not member.spec.initial_turn:
            extra.append("waits for a mention")
        if member.spec.handler:
            extra.append(f"handler {member.spec.handler}")
        tail = f" ({'; '.join(extra)})" if extra else ""
        print(f"    {member.id} [{member.spec.role}] engine={member.spec.engine} "
              f"cap={member.cap}{tail}", file=out)
        for line in tools.get(member.id, []):
            print(f"      tool {line}", file=out)
        card = agents.get(member.id)
        if card is not None:
            print(f"      agent {card['name']!r} {card['version']}: skills "
                  f"{', '.join(card['skills'])}; "
                  f"{'streams' if card['streaming'] else 'does not stream'}", file=out)
    for line in worst_case_lines(spec, graph.members.values()):
        print(line, file=out)
    if tools:
        from wopdsl.cli._tool_check import tool_worst_case

        for line in tool_worst_case(council, tools):
            print(line, file=out)
    out.flush()
    return EXIT_OK


def decision_summary(spec: Any) -> list[str]:
    """``wop validate``'s lines for the chair and the decisions (DESIGN.md §22)."""
    from wopdsl.model.debate import voters_of

    lines = [f"  chair: {spec.council.chair} (takes the last turn)"] if spec.council.chair \
        else []
    if spec.decisions:
        lines.append(f"  decisions ({len(spec.decisions)}):")
    for decision in spec.decisions:
        if decision.options is not None:
            how = f"{', '.join(decision.options)} by {decision.rule.replace('_', ' ')}"
        else:
            how = f"a score {decision.scale[0]}..{decision.scale[1]} (median)"
        voters = voters_of(spec, decision)
        quorum = decision.quorum or len(voters)
        lines.append(f"    {decision.id} in {decision.room}: {decision.question} — {how}; "
                     f"voters {', '.join(voters)}; quorum {quorum}")
    return lines


def worst_case_lines(spec: Any, members: Any) -> list[str]:
    """``wop validate``'s worst case: turns (sum of caps) and, for llm members, tokens, cost."""
    from wopdsl.model.debate import turn_bound

    members = list(members)
    bounds = {m.id: turn_bound(spec, m.id, m.cap) for m in members}
    turns = sum(bounds[m.id] for m in members if not m.human)
    humans = [m.id for m in members if m.human]
    people = f", not counting the turns of human members ({', '.join(humans)})" if humans else ""
    bounded = [f"{m.id} {bounds[m.id]}" for m in members
               if bounds[m.id] < m.cap and not m.human]
    how = f"caps; with rounds: {', '.join(bounded)}" if bounded else "sum of caps"
    lines = [f"  worst case: {turns} member turns ({how}){people}"]
    llm = [m for m in members if m.spec.engine == "llm"]
    if not llm:
        return lines
    tokens = 0
    cost = 0.0
    priced = True
    for member in llm:
        profile = spec.models[member.spec.model]
        out = member.spec.max_output_tokens or profile.max_output_tokens
        repairs = member.spec.repair_attempts if member.spec.repair_attempts is not None else 1
        toolset = getattr(member.agent, "toolset", None)  # one model call per round of tools
        rounds = toolset.max_calls if toolset is not None else 0
        calls = bounds[member.id] * (1 + repairs + rounds)
        tokens += calls * out
        price = profile.cost_usd(0, calls * out)
        if price is None:
            priced = False
        else:
            cost += price
        lines.append(f"    {member.id}: {calls} calls × {out} output tokens "
                     f"(model {profile.model} via [models.{member.spec.model}])")
    cost_text = f", ${cost:.4f} of output" if priced else " (no prices set: cost unknown)"
    lines.append(f"  worst case output: {tokens:,} tokens{cost_text}; prompts add input "
                 "tokens")
    budget = spec.council
    if budget.max_tokens is not None or budget.max_cost_usd is not None:
        limits = []
        if budget.max_tokens is not None:
            limits.append(f"max_tokens={budget.max_tokens:,}")
        if budget.max_cost_usd is not None:
            limits.append(f"max_cost_usd={budget.max_cost_usd:g}")
        lines.append(f"  budget: {' '.join(limits)} (a call that could pass it is not made)")
    return lines
