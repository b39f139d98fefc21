"""Builders for the OpenWOP payloads a council run emits (typed dicts on the hot path).

Each builder returns exactly the keys its schema allows; ``tests/protocol`` validates them
against ``shared/openwop/schemas``. Shapes follow DESIGN.md §7.
"""

from __future__ import annotations

from typing import Any, Final

from wopdsl.protocol.codemap import ERA_V2

__all__ = [
    "ASK_PREFIX",
    "MEMBER_TYPE_ID",
    "ROOM_TYPE_ID",
    "agent_ref",
    "ask_key",
    "conversation_closed",
    "conversation_exchanged",
    "conversation_opened",
    "exchange_key",
    "interrupt_exchange",
    "interrupt_requested",
    "interrupt_resolved",
    "member_started",
    "node_retried",
    "post_turn",
    "posted_turn",
    "room_node_id",
    "run_started",
    "system_turn",
    "turn_sender",
]

ROOM_TYPE_ID: Final = "core.conversationGate"
"""``typeId`` of a room's conversation node."""
MEMBER_TYPE_ID: Final = "council.member"
"""``typeId`` of a member turn node."""

def agent_ref(member_id: str) -> str:
    """Return the roster instance id of a member: ``host:<member>`` (RFC 0086)."""
    return f"host:{member_id}"


def room_node_id(room_id: str) -> str:
    """Return the node id of a room's conversation gate."""
    return f"room:{room_id}"


def run_started(
    workflow_id: str, task: str, council: dict[str, Any], digest: str, extra: dict[str, Any]
) -> dict[str, Any]:
    """``run.started``: enough to rebuild the council from the log alone, and its era.

    ``eventLogSchemaVersion``: the era key (v2 ``persistence.md``): 3, the log is stored in
    v2 vocabulary (``wopdsl.store``); absent on older runs (2, v1 vocabulary).
    """
    return {
        "workflowId": workflow_id,
        "inputs": {"task": task},
        "metadata": {"council": council, "councilDigest": digest, **extra},
        "eventLogSchemaVersion": ERA_V2,
    }


def interrupt_requested(conversation_id: str, title: str) -> dict[str, Any]:
    """``interrupt.requested`` of kind ``conversation.start`` (v1 InterruptPayload)."""
    return {
        "kind": "conversation.start",
        "key": f"{conversation_id}:start",
        "data": {"conversationId": conversation_id, "title": title},
    }


def exchange_key(conversation_id: str, member_id: str, turn: int) -> str:
    """The key of the interrupt that waits for ``member_id``'s ``turn``-th turn."""
    return f"{conversation_id}:exchange:{member_id}:{turn}"


ASK_PREFIX: Final = "a2a/"
"""Starts the interrupt key of an ``a2a`` member's agent's question (see :func:`ask_key`)."""


def ask_key(call_id: str) -> str:
    """The interrupt key of the question a remote agent asked about the message ``call_id``.

    ``a2a/call/{member}/{position}/{n}`` (DESIGN.md §25, :mod:`wopdsl.state.asks`).
    """
    return f"{ASK_PREFIX}{call_id}"


def interrupt_exchange(conversation_id: str, member_id: str, turn: int,
                       prompt: str) -> dict[str, Any]:
    """``interrupt.requested`` of kind ``conversation.exchange``: a member's turn is awaited.

    The v1 ``ConversationExchangeData`` is closed (``conversationId``, ``prompt``): the member
    is named by the deterministic ``key`` and in the ``prompt``.
    """
    return {
        "kind": "conversation.exchange",
        "key": exchange_key(conversation_id, member_id, turn),
        "data": {"conversationId": conversation_id, "prompt": prompt},
    }


def interrupt_resolved(node_id: str, key: str, resume_value: Any) -> dict[str, Any]:
    """``interrupt.resolved``: no ``kind`` (the v1 enum lacks the conversation kinds)."""
    return {"nodeId": node_id, "interruptId": key, "resumeValue": resume_value}


def node_retried(member_id: str, attempt: int) -> dict[str, Any]:
    """``node.retried``: the next attempt of a turn whose previous attempt never ended."""
    return {"nodeId": member_id, "attempt": attempt}


def system_turn(
    conversation_id: str, index: int, text: str, ts: int, room_id: str
) -> dict[str, Any]:
    """A host-emitted ``system`` turn (opening with the task, or closing)."""
    return {
        "messageId": f"{conversation_id}:{index}:system",
        "from": "system",
        "role": "system",
        "content": {"text": text},
        "ts": ts,
        "turnIndex": index,
        "groupId": room_id,
    }


def conversation_opened(
    conversation_id: str,
    participants: list[dict[str, str]],
    initial_turn: dict[str, Any],
    schema: dict[str, Any] | None,
) -> dict[str, Any]:
    """``conversation.opened`` with the RFC 0101 roster."""
    payload: dict[str, Any] = {
        "conversationId": conversation_id,
        "participants": participants,
        "initialTurn": initial_turn,
    }
    if schema is not None:
        payload["schema"] = schema
    return payload


def post_turn(
    message_id: str,
    sender: str,
    *,
    human: bool,
    text: str,
    mentions: list[str],
    ts: int,
    index: int,
    room_id: str,
    model: dict[str, str] | None = None,
    steer: bool = False,
) -> dict[str, Any]:
    """The conversation turn of an accepted post (``steer``: a person's steering post).

    An agent turn is ``from`` its member with ``speakerId: host:<member>`` (RFC 0101); a human
    turn is ``from`` the literal ``"user"`` and keeps ``speakerId`` so people stay distinct.
    ``model`` (``{provider, model}``) stamps RFC 0109 provenance on a model's agent turn.
    """
    turn: dict[str, Any] = {
        "messageId": message_id,
        "from": "user" if human else sender,
        "role": "user" if human else "agent",
        "content": {"text": text, "mentions": mentions},
        "ts": ts,
        "turnIndex": index,
        "groupId": room_id,
        "speakerId": agent_ref(sender),
    }
    if not human and model is not None:
        turn["agent"] = {"model": dict(model)}
    if steer:
        turn["content"]["steer"] = True
    return turn


def turn_sender(turn: dict[str, Any]) -> str:
    """The member who spoke ``turn``: a user turn is ``from: "user"``; its speakerId says who."""
    speaker = turn.get("speakerId")
    if turn.get("role") == "user" and isinstance(speaker, str) and speaker.startswith("host:"):
        return speaker[5:]
    return str(turn.get("from", ""))


def posted_turn(event: dict[str, Any] | Any) -> dict[str, Any] | None:
    """The message turn an event carries: an exchanged turn, or a close's non-system turn."""
    type_ = event["type"]
    if type_ == "conversation.exchanged":
        turn: dict[str, Any] = event["payload"]["turn"]
        return turn
    if type_ == "conversation.closed":
        final = event["payload"].get("finalTurn") or {}
        if final.get("role") in ("user", "agent"):
            return dict(final)
    return None


def conversation_exchanged(conversation_id: str, turn: dict[str, Any]) -> dict[str, Any]:
    """``conversation.exchanged`` (v1 ConversationExchangedPayload: exactly three keys)."""
    return {"conversationId": conversation_id, "turnIndex": turn["turnIndex"], "turn": turn}


def conversation_closed(
    conversation_id: str, final_turn: dict[str, Any], outcome: Any
) -> dict[str, Any]:
    """``conversation.closed``: ``turnIndex`` equals the final turn's index."""
    return {
        "conversationId": conversation_id,
        "turnIndex": final_turn["turnIndex"],
        "finalTurn": final_turn,
        "outcome": outcome,
    }


def member_started(
    member_id: str, *, attempt: int, turn: int, position: int, triggers: list[str],
    batch: int | None = None,
) -> dict[str, Any]:
    """``node.started`` of a member turn: durable before the member runs.

    ``batch`` numbers the engine's dispatch batches (absent on a human's turn).
    """
    payload = {
        "nodeId": member_id,
        "typeId": MEMBER_TYPE_ID,
        "attempt": attempt,
        "turn": turn,
        "position": position,
        "triggers": triggers,
    }
    if batch is not None:
        payload["batch"] = batch
    return payload


def budget_reserved(max_tokens: int | None, max_cost_usd: float | None,
                    max_tool_calls: int | None = None) -> dict[str, Any]:
    """``budget.reserved`` (RFC 0084 §C): the run's effective budget, once at run start."""
    budget: dict[str, Any] = {}
    if max_tool_calls is not None:
        budget["maxToolCalls"] = max_tool_calls
    if max_tokens is not None:
        budget["maxTokens"] = max_tokens
    if max_cost_usd is not None:
        budget["maxCostUsd"] = max_cost_usd
    return {"effectiveBudget": budget, "scope": "run"}
