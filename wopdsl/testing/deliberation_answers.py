"""Scripted answers for ``councils/llm-council.toml``: advisors who answer, review and vote.

:func:`llm_council_answer` answers like a model playing the analyst, the engineer, the skeptic
or the chair of that council would, keyed by the member and the turn number in wopdsl's
default prompts. The answer is built from the request's own turn schema: a post only when a
room is offered, and votes only on the decisions the schema offers (each on one of their
choices), so it is valid whatever the round — the scripted stand-in for a model held to the
schema by a grammar.
"""

from __future__ import annotations

from typing import Any

from wopdsl.testing.model_server import Answer, CapturedRequest

__all__ = ["LLM_COUNCIL_MEMBERS", "llm_council_answer", "offered_votes"]

LLM_COUNCIL_MEMBERS = frozenset({"analyst", "engineer", "skeptic", "chair"})
"""The members of ``councils/llm-council.toml``."""

# member → per round: (text, {decision: (choice, reason)})
_SCRIPT: dict[str, tuple[tuple[str, dict[str, tuple[Any, str]]], ...]] = {
    "analyst": (
        ("Colocate first: every query now crosses regions, about 30 ms a round trip, and a "
         "request makes a dozen of them. Nothing else removes that.",
         {"first_step": ("colocate", "the cross-region round trips are the added latency"),
          "confidence": (4, "the numbers point at the round trips")}),
        ("Ranking: the colocation answer first (it removes the cause), the pool answer "
         "second (cheap, but the hops stay), the cache answer last (stale reads).",
         {"first_step": ("colocate", "still the cause"),
          "confidence": (4, "unchanged")}),
    ),
    "engineer": (
        ("Add a read cache in the new region: it is a day of work, while moving the "
         "database is a migration with downtime risk.",
         {"first_step": ("cache", "cheapest step that cuts most reads"),
          "confidence": (3, "writes still cross regions")}),
        ("Ranking: the colocation answer first (the round-trip numbers convinced me), my "
         "cache answer second, the pool answer third.",
         {"first_step": ("colocate", "the round trips are the cause; a cache only hides "
                                     "them"),
          "confidence": (4, "a planned migration is manageable")}),
    ),
    "skeptic": (
        ("Do not move a database on a hunch: tune the connection pools first, since new "
         "regions often start with small pools, and measure again.",
         {"first_step": ("tune", "cheap, and it tests the obvious answer first"),
          "confidence": (2, "we have not measured where the time goes")}),
        ("Ranking: the pool answer first (measure before migrating), the colocation answer "
         "second, the cache answer last.",
         {"first_step": ("tune", "measure before a migration"),
          "confidence": (2, "still unmeasured")}),
    ),
}

_CHAIR = ("The council chose to colocate the database with the service first (colocate 2, "
          "tune 1), fairly sure it removes most of the added latency (median 4 of 5): every "
          "request now makes a dozen cross-region round trips. The dissent: tune the "
          "connection pools first and measure before migrating.")


def offered_votes(schema: dict[str, Any]) -> dict[str, list[Any]]:
    """The decisions a turn schema offers votes on, with their choices (in schema order)."""
    votes = schema.get("properties", {}).get("votes")
    if not votes:
        return {}
    offered: dict[str, list[Any]] = {}
    for decision, vote in votes["properties"].items():
        vote = vote["anyOf"][0] if "anyOf" in vote else vote  # [vote, null]: voted before
        choice = vote["properties"]["choice"]
        offered[decision] = list(choice.get("enum", ()))  # a wide scale: no enum
    return offered


def llm_council_answer(request: CapturedRequest, turn: int) -> Answer:
    """The scripted model's answer to one request of the llm-council council."""
    body = request.body if isinstance(request.body, dict) else {}
    schema = body.get("response_format", {}).get("json_schema", {}).get("schema", {})
    member = request.member or ""
    if member == "chair" or member not in _SCRIPT:
        return Answer({"summary": _CHAIR, "posts": []} if "posts" in schema.get(
            "properties", {}) else {"summary": _CHAIR}, usage=(900, 120), chunks=1)
    rounds = _SCRIPT[member]
    text, votes = rounds[min(turn, len(rounds)) - 1]
    content: dict[str, Any] = {"summary": f"Round {turn}: " + text.split(":")[0] + "."}
    posts = schema.get("properties", {}).get("posts")
    if posts is not None:
        rooms = posts["items"].get("anyOf", [posts["items"]])
        room = rooms[0]["properties"]["roomId"]["enum"][0]
        content["posts"] = [{"roomId": room, "text": text, "mentions": []}]
    offered = offered_votes(schema)
    if offered:
        content["votes"] = {}
        for decision, choices in offered.items():
            choice, reason = votes.get(decision, (choices[0] if choices else 0, "no view"))
            content["votes"][decision] = {
                "choice": choice if choice in choices or not choices else choices[0],
                "reason": reason}
    return Answer(content, usage=(400 + 200 * turn, 90), chunks=1)
