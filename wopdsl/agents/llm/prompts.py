"""Prompts of ``llm`` members: sandboxed Jinja2 system and turn templates with defaults.

The defaults are documented in ``docs/guides/llm.md`` (a test keeps the two identical). A
member may replace either with ``system_prompt`` / ``turn_prompt``; both render in Jinja2's
``SandboxedEnvironment`` over the same context, compiled once at ``compile()``. Model output
only ever reaches a template as *data* (message texts, the previous result): it is inserted,
never evaluated.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from wopdsl.agents.base import turn_context
from wopdsl.agents.llm.votes import VOTE_FIELDS
from wopdsl.agents.templates import Renderer, compile_template, compile_with_names
from wopdsl.model.turns import Turn

__all__ = [
    "ANSWER_FIELDS",
    "CHAIR_SUMMARY",
    "DEFAULT_SYSTEM_PROMPT",
    "DEFAULT_TURN_PROMPT",
    "ComposedPrompt",
    "PromptTemplates",
    "RoomView",
    "answer_fields",
]

ANSWER_FIELDS: dict[str, str] = {
    "summary": "One short sentence on what you did this turn.",
    "posts": "Your messages, at most one per room. An empty list when you have nothing to "
             "say.",
    "roomId": "The room the message goes to: one of your rooms.",
    "text": "The message itself, in your own words, for the members of that room.",
    "mentions": "Ids of members of that room who must act on your message, each once. A "
                "mention gives that member a turn. An empty list when nobody needs to act.",
}
"""The instruction for each field of the answer: the turn-result schema's ``description``s,
and the list the default system prompt shows (``answer`` in the templates' context)."""

CHAIR_SUMMARY = ("The council's answer to its task, in your own words: each decision's "
                 "outcome, why, and the dissent.")
"""The chair's ``summary`` instruction: its summary is the run's ``answer``."""

_FIELD_KINDS = {"summary": "text", "posts": 'a list of objects with "roomId", "text" and '
                '"mentions"', "roomId": "in a post, text", "text": "in a post, text",
                "mentions": "in a post, a list of member ids",
                "votes": 'an object: under each decision\'s id, an object with "choice" and '
                         '"reason"', "choice": "in a vote, an option or a score",
                "reason": "in a vote, text"}


def answer_fields(rooms: bool, *, votes: bool = False,
                  chair: bool = False) -> list[dict[str, str]]:
    """The ``answer`` template variable: each field's name, kind and instruction.

    Args:
        rooms: The member may post (``posts`` and its fields are listed).
        votes: The member may vote this turn (``votes`` and its fields are listed).
        chair: The member is the chair (its ``summary`` is the council's answer).
    """
    fields = {**ANSWER_FIELDS, **VOTE_FIELDS}
    if chair:
        fields["summary"] = CHAIR_SUMMARY
    names = (list(ANSWER_FIELDS) if rooms else ["summary"]) + (list(VOTE_FIELDS) if votes
                                                               else [])
    return [{"name": name, "kind": _FIELD_KINDS[name], "description": fields[name]}
            for name in names]


DEFAULT_SYSTEM_PROMPT = """\
You are {{ member }}, the {{ role }} in a council of members who talk in rooms.
member id: {{ member }}
{% if brief %}
Your brief: {{ brief }}
{% endif %}
The council's task: {{ task }}
{% if chair is defined and chair %}You are the council's chair: you speak last, once every \
decision is closed, and your "summary" is the council's answer.
{% endif %}
{% if rooms %}Your rooms and who else is in each:
{% for room in rooms %}- {{ room.id }}\
{% if room.title != room.id %} ("{{ room.title }}"){% endif %}: \
{{ room.members | join(", ") if room.members else "nobody else" }}\
{% if room.get("anonymous") %} (anonymous: you know the others only by these names, and \
they know you by such a name){% endif %}\
{% if room.get("settled") %} (the debate is over: you can no longer post here){% endif %}
{% endfor %}{% else %}You are in no room, so you cannot post.
{% endif %}
Answer with one JSON object and nothing else. Its fields:
{% for field in answer %}- "{{ field.name }}" ({{ field.kind }}): {{ field.description }}
{% endfor %}
"""
"""The default system template (``system_prompt`` replaces it)."""

DEFAULT_TURN_PROMPT = """\
This is your turn {{ turn }}.
{% if result %}Your previous result: {{ result | tojson }}
{% endif %}{% if rounds is defined %}{% for room, r in rounds.items() %}[{{ room }}] \
{% if r.settled %}The debate is over: you can no longer post here.\
{% elif r.round %}Round {{ r.round }} of {{ r.of }}{% if r.blind %}; blind: you cannot see \
the others' answers of this round until it ends{% endif %}.\
{% else %}The debate has not begun.{% endif %}
{% endfor %}{% endif %}
{% if messages %}Messages you can see, oldest first (room, sender, message id, mentions, text):
{% for m in messages %}[{{ m.roomId }}] {{ m.sender }} ({{ m.id }})\
{% if m.mentions %} @{{ m.mentions | join(" @") }}{% endif %}: {{ m.text }}
{% endfor %}{% else %}No messages yet.
{% endif %}
{% if triggers %}You were asked to act by: {{ triggers | map(attribute="id") | join(", ") }}.
{% endif %}{% if decisions is defined %}\
{% for d in decisions if d.open and d.voter %}{% if loop.first %}Open decisions: vote on \
each in "votes" under its id, with your reason (your last vote counts):
{% endif %}- {{ d.id }}: {{ d.question }} Choose \
{% if d.options is defined %}one of: {{ d.options | join(", ") }}\
{% else %}a whole score from {{ d.scale[0] }} to {{ d.scale[1] }}{% endif %}.\
{% if d.your_vote is defined %} Your vote so far: {{ d.your_vote.choice }} \
({{ d.your_vote.reason }}).{% endif %}
{% endfor %}{% for d in decisions if not d.open and d.outcome is defined %}\
{% if loop.first %}Closed decisions:
{% endif %}- {{ d.id }}: {{ d.question }} Outcome: {{ d.outcome }}\
{% if d.scale is defined %} (the median score){% endif %}. Votes: \
{% for choice, count in d.tally.items() %}{{ choice }}: {{ count }}\
{% if not loop.last %}, {% endif %}{% else %}none{% endfor %}. Dissent: \
{% for x in d.dissent %}{{ x.voter }} ({{ x.choice }}): {{ x.reason }}\
{% if not loop.last %}; {% endif %}{% else %}none{% endfor %}.
{% endfor %}{% endif %}{% if spent %}These members have used all their turns; do not mention them: \
{{ spent | join(", ") }}.
{% endif %}"""
"""The default turn (user message) template (``turn_prompt`` replaces it)."""

_DEFAULT_REFS = ("prompt:wopdsl.member.system@2.0.0", "prompt:wopdsl.member.turn@2.0.0")

# What stays the same through a member's turns: a system template reading only these is
# rendered once per member and text, not at every turn.
_STEADY = frozenset({"task", "member", "role", "brief", "rooms", "answer", "chair"})


@dataclass(frozen=True, slots=True)
class RoomView:
    """A room as the member's prompt shows it: its id, title and the *other* members.

    In an anonymous room the others are their aliases; a settled round room is shown (and
    no longer offered for posts).
    """

    id: str
    title: str
    members: tuple[str, ...]
    anonymous: bool = False
    settled: bool = False

    def to_data(self) -> dict[str, Any]:
        """Return the room as template data (``anonymous``/``settled`` only when true)."""
        data: dict[str, Any] = {"id": self.id, "title": self.title,
                                "members": list(self.members)}
        if self.anonymous:
            data["anonymous"] = True
        if self.settled:
            data["settled"] = True
        return data


@dataclass(frozen=True, slots=True)
class ComposedPrompt:
    """One composition: the two bodies, their refs and the hashes ``prompt.composed`` needs."""

    system: str
    user: str
    refs: tuple[str, ...]
    variables: dict[str, Any]

    @property
    def hash(self) -> str:
        """``sha256:`` of the composed body (system, a blank line, user)."""
        return _sha(self.system + "\n\n" + self.user)

    def event(self, node_id: str, *, full: bool) -> dict[str, Any]:
        """The ``prompt.composed`` payload (RFC 0027); bodies only when ``full``."""
        payload: dict[str, Any] = {
            "nodeId": node_id, "refs": list(self.refs), "kind": "system+user",
            "hash": self.hash,
            "variableHashes": {name: _sha(json.dumps(value, sort_keys=True,
                                                     ensure_ascii=False))
                               for name, value in self.variables.items()},
        }
        if full:
            payload.update(composed=self.system + "\n\n" + self.user, systemPrompt=self.system,
                           userPrompt=self.user, variableBindings=dict(self.variables))
        return payload


class PromptTemplates:
    """A member's compiled system and turn templates.

    Args:
        member: The member id (for the refs of overridden templates).
        rooms: The member's rooms with their other members.
        system_prompt: An override of :data:`DEFAULT_SYSTEM_PROMPT`.
        turn_prompt: An override of :data:`DEFAULT_TURN_PROMPT`.
        chair: The member is the council's chair (``chair`` is true in its context).

    Raises:
        TemplateProblem: a template has a syntax error.
    """

    def __init__(self, member: str, rooms: tuple[RoomView, ...], *,
                 system_prompt: str | None = None, turn_prompt: str | None = None,
                 chair: bool = False) -> None:
        self.rooms = rooms
        self.chair = chair
        self._answer = answer_fields(bool(rooms), chair=chair)
        self._system: Renderer
        self._system, names = compile_with_names(system_prompt or DEFAULT_SYSTEM_PROMPT)
        self._steady_system = names <= _STEADY
        self._rendered: tuple[tuple[Any, ...], str] | None = None
        self._turn: Renderer = compile_template(turn_prompt or DEFAULT_TURN_PROMPT)
        slug = re.sub(r"[^a-z0-9._-]", "-", member.lower()) or "member"
        self.refs = (
            f"prompt:council.{slug}.system" if system_prompt else _DEFAULT_REFS[0],
            f"prompt:council.{slug}.turn" if turn_prompt else _DEFAULT_REFS[1],
        )

    def compose(self, turn: Turn, spent: Collection[str] = (), *,
                rooms: tuple[RoomView, ...] | None = None, posts: bool = True,
                votes: bool = False) -> ComposedPrompt:
        """Render both templates over the turn input plus ``rooms``, ``answer`` and ``spent``.

        Args:
            turn: The turn input.
            spent: Members of the member's rooms who have used all their turns (they may
                not be mentioned); ``spent`` in the templates' context, sorted.
            rooms: The rooms as this turn shows them (default: as compiled).
            posts: The member may post this turn (``answer`` lists the post fields).
            votes: The member may vote this turn (``answer`` lists the vote fields).

        Raises:
            Exception: whatever the template raises (an undefined name, a sandbox refusal).
        """
        context = turn_context(turn)
        shown = self.rooms if rooms is None else rooms
        context["rooms"] = [room.to_data() for room in shown]
        posts = posts and bool(self.rooms)
        context["answer"] = self._answer if posts == bool(self.rooms) and not votes else \
            answer_fields(posts, votes=votes, chair=self.chair)
        context["spent"] = sorted(spent)
        if self.chair:
            context["chair"] = True
        key = (shown, posts, votes)
        return ComposedPrompt(self._system_text(context, key), self._turn(context).strip(),
                              self.refs, context)

    def _system_text(self, context: dict[str, Any], shape: tuple[Any, ...]) -> str:
        if not self._steady_system:
            return self._system(context).strip()
        key = (context["task"], context["member"], context["role"], context["brief"], shape)
        if self._rendered is None or self._rendered[0] != key:
            self._rendered = (key, self._system(context).strip())
        return self._rendered[1]


def _sha(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()
