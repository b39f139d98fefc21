"""Scripted answers for the ``llm`` councils in ``councils/`` (tests, the notebook, benches).

:func:`review_answer` answers like a model playing the proposer or the critic of
``councils/llm-review.toml`` would, :func:`signoff_answer` the planner and critic of
``councils/llm-signoff.toml``, keyed by the member and the turn number in wopdsl's default
prompts, so the councils run end to end against a
:class:`~wopdsl.testing.model_server.ScriptedModelServer` on loopback; :func:`council_answer`
picks the right one (and the advisors and chair of ``councils/llm-council.toml``, see
:mod:`wopdsl.testing.deliberation_answers`). For the ops desk's ``sre``
(``councils/ops-desk.toml``), :func:`review_answer` calls one tool per round (read a log,
check a status, ask to restart the database — which waits for ``oncall``'s approval), keyed
by the tool results already in the conversation.
"""

from __future__ import annotations

import re

from wopdsl.testing.deliberation_answers import LLM_COUNCIL_MEMBERS, llm_council_answer
from wopdsl.testing.model_server import Answer, CapturedRequest, ToolCalls

__all__ = ["council_answer", "review_answer", "signoff_answer"]

_TURN = re.compile(r"This is your turn (\d+)\.")

_SRE_ROUNDS = (
    ("read_log", {"service": "api", "lines": 3}),
    ("service_status", {"service": "db"}),
    ("restart_service", {"service": "db", "reason": "db refuses connections (max 100)"}),
)


def _turn(request: CapturedRequest) -> int:
    messages = request.body.get("messages", []) if isinstance(request.body, dict) else []
    user = next((m.get("content", "") for m in messages if m.get("role") == "user"), "")
    found = _TURN.search(str(user))
    return int(found.group(1)) if found else 1


def council_answer(request: CapturedRequest) -> Answer | ToolCalls:
    """The answer for a member of any llm council in ``councils/``.

    ``planner`` is the signoff council's; the llm council's members are its own.
    """
    system = str(request.body["messages"][0].get("content", "")) if isinstance(
        request.body, dict) and request.body.get("messages") else ""
    if request.member in LLM_COUNCIL_MEMBERS and request.member != "critic":
        return llm_council_answer(request, _turn(request))
    return signoff_answer(request) if "member id: planner" in system or (
        "planner" in system and request.member == "critic") else review_answer(request)


def signoff_answer(request: CapturedRequest) -> Answer:
    """The scripted model's answer to one request of the llm-signoff council."""
    turn = _turn(request)
    if request.member == "critic":
        content: dict[str, object] = {"summary": "Named the biggest risk.", "posts": [{
            "roomId": "desk", "mentions": ["planner"],
            "text": "The biggest risk is secrets: move them to the new runner first."}]}
    elif turn == 1:
        content = {"summary": "Drafted a plan.", "posts": [{
            "roomId": "desk", "mentions": ["critic"],
            "text": "Port the two pipelines one by one, run both for a week, then switch."}]}
    else:
        content = {"summary": "Asked the owner to sign off.", "posts": [{
            "roomId": "signoff", "mentions": ["owner"],
            "text": "Final plan: secrets first, then both pipelines side by side for a week."}]}
    return Answer(content, usage=(200 + 40 * turn, 50), chunks=1)


def review_answer(request: CapturedRequest) -> Answer | ToolCalls:
    """The scripted model's answer to one request of the llm-review or ops-desk council."""
    if request.member == "sre":
        return _sre_answer(request)
    turn = _turn(request)
    if request.member == "critic":
        content: dict[str, object] = {"summary": "Named the weakest claim.", "posts": [{
            "roomId": "desk", "mentions": ["proposer"],
            "text": "The weakest claim is that feature flags remove all merge risk: flags "
                    "hide unfinished work but not conflicting schema changes."}]}
    elif turn == 1:
        content = {"summary": "Proposed a plan and asked for critique.", "posts": [{
            "roomId": "desk", "mentions": ["critic"],
            "text": "Move to trunk-based development in two steps: short-lived branches "
                    "under a day, then feature flags for unfinished work. Flags remove all "
                    "merge risk. Critic, what is the weakest claim?"}]}
    else:
        content = {"summary": "Answered the critique.", "posts": [{
            "roomId": "desk", "mentions": [],
            "text": "Fair: schema changes go behind expand-and-contract migrations, "
                    "reviewed before the flag flips."}]}
    return Answer(content, usage=(180 + 40 * turn, 60), chunks=1)


def _sre_answer(request: CapturedRequest) -> Answer | ToolCalls:
    messages = request.body.get("messages", []) if isinstance(request.body, dict) else []
    done = sum(1 for m in messages if m.get("role") == "tool")
    if done < len(_SRE_ROUNDS):
        return ToolCalls(_SRE_ROUNDS[done], usage=(300 + 50 * done, 20), chunks=1,
                         ids=(f"call_{done}",))
    return Answer({"summary": "Restarted db; api recovers.", "posts": [{
        "roomId": "ops", "mentions": [],
        "text": "db hit its connection limit, so the api timed out (503). Restarted db "
                "with oncall's approval."}]}, usage=(480, 40), chunks=1)
