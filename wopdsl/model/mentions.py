"""``@member`` mentions in text: how a person's post names the members it asks."""

from __future__ import annotations

import re
from typing import Final

from wopdsl._ids import IDENT_CHARS

__all__ = ["MENTION_RE", "PARTIAL_MENTION_RE", "parse_mentions"]

MENTION_RE: Final = re.compile(rf"(?<![\w@])@({IDENT_CHARS}{{1,64}})")
"""An ``@member`` word in a text (a trailing ``.`` ends the sentence, not the id)."""

PARTIAL_MENTION_RE: Final = re.compile(rf"(?<![\w@])@({IDENT_CHARS}*)$")
"""An ``@member`` word being typed at the end of a text (for completion)."""


def parse_mentions(text: str) -> list[str]:
    """Return the distinct ``@member`` mentions in ``text``, in order of appearance.

    Example:
        >>> parse_mentions("Ship it @writer, then ask @reviewer.")
        ['writer', 'reviewer']
    """
    seen: dict[str, None] = {}
    for match in MENTION_RE.finditer(text):
        seen.setdefault(match.group(1).rstrip("."), None)
    return list(seen)
