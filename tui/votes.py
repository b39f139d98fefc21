"""The composer's ``/vote`` command: ``/vote DECISION CHOICE because REASON``.

Parsed here, cast through the public ``Run.vote`` by the app; the engine checks the vote
(an open decision, a voter, an option or a score on the scale) and refuses it with the
reason, nothing saved. ``DECISION`` may be left out when one decision is open for you.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Final

__all__ = ["COMMAND", "USAGE", "VoteCommand", "complete_vote", "is_vote", "parse_vote"]

COMMAND: Final = "/vote"
"""How a composer line that votes begins."""

_LINE: Final = re.compile(r"/vote(?:\s+(\S+))?(?:\s+(\S+))?(?:\s+(.*))?\s*", re.DOTALL)
_BECAUSE: Final = re.compile(r"because\b[\s:,]*", re.IGNORECASE)
USAGE: Final = "/vote DECISION CHOICE because REASON"


@dataclass(frozen=True, slots=True)
class VoteCommand:
    """A parsed ``/vote`` line."""

    decision: str
    choice: str
    reason: str


def is_vote(text: str) -> bool:
    """Whether a composer line is a ``/vote`` command."""
    return text.strip() == COMMAND or text.lstrip().startswith(COMMAND + " ")


def parse_vote(text: str, decisions: Collection[str],
               ballots: Mapping[str, tuple[str, ...]]) -> VoteCommand:
    """Read ``/vote [DECISION] CHOICE [because] [REASON…]``.

    Args:
        text: The composer line.
        decisions: Every decision id of the council.
        ballots: The decisions open for the person (id → choices).

    Raises:
        ValueError: the line says no choice, or not which decision; the message shows how.
    """
    match = _LINE.fullmatch(text.strip())
    first, second, rest = match.groups() if match else (None, None, None)
    open_ = ", ".join(ballots) or "none"
    if first is None:
        raise ValueError(f"say what you vote: {USAGE} (open for you: {open_})")
    if first in decisions:
        if second is None:
            choices = "|".join(ballots.get(first, ())) or "CHOICE"
            raise ValueError(f"say your choice: /vote {first} {choices} because REASON")
        decision, choice = first, second
    elif len(ballots) == 1:
        decision, choice = next(iter(ballots)), first
        rest = " ".join(p for p in (second, rest) if p)
    else:
        raise ValueError(f"'{first}' is not a decision; say which one: {USAGE} "
                         f"(open for you: {open_})")
    reason = _BECAUSE.sub("", (rest or "").strip(), count=1) if rest else ""
    return VoteCommand(decision, choice, reason.strip())


def complete_vote(value: str, ballots: Mapping[str, tuple[str, ...]]) -> str | None:
    """Complete the word being typed in a ``/vote`` line: the command, a decision, a choice.

    Returns ``value`` with the completion appended, or ``None``.
    """
    if not ballots:
        return None
    if len(value) > 1 and COMMAND.startswith(value) and value != COMMAND:
        return COMMAND
    words = value.split(" ")
    if words[0] != COMMAND or len(words) not in (2, 3):
        return None
    typed = words[-1]
    if len(words) == 2:
        candidates: tuple[str, ...] = tuple(ballots)
    else:
        candidates = ballots.get(words[1], ())
    for candidate in candidates:
        if candidate.casefold().startswith(typed.casefold()) and candidate != typed:
            return value[: len(value) - len(typed)] + candidate
    return None
