"""Aliases in anonymous rooms (DESIGN.md §22): "Member A" … fixed per run, never an id.

A run gives each member of an anonymous room an alias, shuffled by the run id so the
declaration order does not show through (``run.started.metadata.aliases``; a fork keeps
its source's). A member sees the others of such a room under their aliases and itself as
``you``; a post may name an alias (``Member A``, or ``@member-a`` in text), which maps back
to the member before the post is checked.
"""

from __future__ import annotations

import hashlib
import re
import string
from collections.abc import Iterable, Mapping

__all__ = ["SELF", "alias_slug", "assign_aliases", "resolve_alias"]

SELF = "you"
"""How a member sees itself in an anonymous room."""


def _letters(index: int) -> str:
    """Letters for an index: ``0 → A``, ``25 → Z``, ``26 → AA`` and so on."""
    letters = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        letters = string.ascii_uppercase[rest] + letters
    return letters


def assign_aliases(run_id: str, members: Iterable[str]) -> dict[str, str]:
    """Each member's alias for run ``run_id``: ``Member A`` … in an order the run id shuffles."""
    ordered = sorted(dict.fromkeys(members),
                     key=lambda m: hashlib.sha256(f"{run_id}\0{m}".encode()).hexdigest())
    return {member: f"Member {_letters(index)}" for index, member in enumerate(ordered)}


def alias_slug(alias: str) -> str:
    """The alias as one word for ``@`` mentions in text: ``Member A`` → ``member-a``."""
    return re.sub(r"\s+", "-", alias.strip()).lower()


def resolve_alias(token: str, aliases: Mapping[str, str], viewer: str) -> str | None:
    """The member an alias (``Member A``, ``member-a``; ``you``: the viewer) names, if any."""
    folded = token.strip().casefold()
    if folded == SELF:
        return viewer
    for member, alias in aliases.items():
        if folded in (alias.casefold(), alias_slug(alias)):
            return member
    return None
