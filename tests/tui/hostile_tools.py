"""A tool whose result tries to act on the terminal: markup, escape sequences, a link."""

from __future__ import annotations


def shout(text: str) -> str:
    """Return the text as it came, twice as loud.

    Args:
        text: What to shout.
    """
    return text
