"""What the live view's input boxes share: their error line, and sending from a click."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from html import escape
from typing import TypeVar

from wopdsl.errors import WopError

__all__ = ["ERROR_STYLE", "attempt", "error_html"]

T = TypeVar("T")

ERROR_STYLE = "color:#b91c1c;white-space:pre-wrap;font-family:var(--jp-code-font-family,monospace)"
"""How a box's error line looks."""


def error_html(kind: str, text: str) -> str:
    """A box's error line (``kind``: its class, ``wop-<kind>-error``), the text escaped."""
    return f'<div class="wop-{kind}-error" style="{ERROR_STYLE}">{escape(text)}</div>'


async def attempt(action: Callable[[], Awaitable[T]],
                  show_error: Callable[[str], None]) -> tuple[bool, T | None]:
    """Run a box's action; a refusal (or any error) goes to its error line, never raised.

    Returns:
        ``(True, result)``, or ``(False, None)`` once the reason is shown.
    """
    try:
        return True, await action()
    except WopError as exc:
        show_error(exc.render())
    except Exception as exc:
        # A click has no caller to raise to: the error line is the only place to say it.
        show_error(f"{type(exc).__name__}: {exc}")
    return False, None
