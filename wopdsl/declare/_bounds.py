"""Private: the size and nesting bounds of a council file, checked before anything recurses.

Python's TOML parser, pydantic, the JSON encoder and the JSON Schema validator all recurse
once per nesting level, and ``int()`` refuses more than 4,300 digits; a hostile file would
otherwise surface as a raw ``RecursionError`` or ``ValueError``. These checks turn each into
a :class:`~wopdsl.errors.Problem` with a place.
"""

from __future__ import annotations

import re
from typing import Any, Final

from wopdsl.errors import Problem
from wopdsl.protocol.bounds import MAX_INT, MIN_INT

__all__ = ["MAX_FILE_BYTES", "MAX_NESTING", "data_problem", "dotted_problem", "parse_failure",
           "size_problem"]

MAX_FILE_BYTES: Final = 8 * 1024 * 1024
"""Largest council file (bytes)."""
MAX_NESTING: Final = 32
"""Deepest nesting of tables and arrays in a council file (``members[0].script[0].data`` is
five levels; a ``turn_schema`` or ``data`` value may nest about 25 more)."""
_MAX_DIGITS: Final = 4300
"""Python's limit on the digits of an integer read from text."""

_KEY: Final = r"""(?:(?<![A-Za-z0-9_-])[A-Za-z0-9_-]+|"(?:[^"\\\n]|\\.)*"|'[^'\n]*')"""
_DOTTED: Final = _KEY + r"(?:[ \t]*\.[ \t]*" + _KEY + "){" + str(MAX_NESTING) + ",}"
"""A dotted key (or table header) of more than :data:`MAX_NESTING` parts: tables nested
deeper than the bound, and Python's TOML parser takes time quadratic in their number."""
_MAYBE_DOTTED: Final = re.compile(_DOTTED)
_TOKENS: Final = re.compile(
    r"(?P<dotted>" + _DOTTED + r")|"
    r'"""(?:[^\\]|\\.)*?"""'
    r"|'''.*?'''"
    r'|"(?:[^"\\\n]|\\.)*"'
    r"|'[^'\n]*'"
    r"|#[^\n]*"
    r"|(?P<open>[\[{])|(?P<close>[\]}])"
    r"|(?P<digits>[+-]?[0-9][0-9_]{" + str(_MAX_DIGITS) + r",})",
    re.S,
)


def size_problem(size: int, source: str) -> Problem | None:
    """Return a problem when a file of ``size`` bytes is over :data:`MAX_FILE_BYTES`."""
    if size <= MAX_FILE_BYTES:
        return None
    return Problem(f"the file is {size} bytes; a council file may be at most "
                   f"{MAX_FILE_BYTES} bytes", source=source,
                   hint="keep large data out of the council file (load it in a handler)")


def dotted_problem(text: str, source: str) -> Problem | None:
    """Return a problem for a key or table header of more than :data:`MAX_NESTING` parts.

    Checked before parsing: Python's TOML parser takes time quadratic in the parts of one
    header (minutes for a few megabytes). A cheap search finds candidates; only then is the
    text tokenised, so a long dotted word inside a string is not mistaken for a key (the
    first pathology of the text is reported, whichever it is).
    """
    if _MAYBE_DOTTED.search(text) is None:
        return None
    found = _first_pathology(text, dotted=True)
    return None if found is None else _problem(text, source, *found)


def parse_failure(text: str, source: str, exc: BaseException) -> Problem:
    """Explain a parse that failed with something other than a TOML syntax error."""
    found = _first_pathology(text)
    if found is not None:
        return _problem(text, source, *found)
    return Problem(f"the file cannot be parsed ({type(exc).__name__})", source=source,
                   line=1, column=1, hint="simplify the file: nest less, shorten values")


def _problem(text: str, source: str, kind: str, offset: int) -> Problem:
    line, column = _line_col(text, offset)
    if kind == "digits":
        return Problem(f"an integer with more than {_MAX_DIGITS} digits", source=source,
                       line=line, column=column,
                       hint=_BIG_HINT)
    message = _too_deep_message()
    if kind == "dotted":
        message = f"a key or table header of more than {MAX_NESTING} dotted parts: {message}"
    return Problem(message, source=source, line=line, column=column, hint=_DEEP_HINT)


_DEEP_HINT: Final = "flatten the value; load deeply nested data in a handler instead"
_BIG_HINT: Final = "integers must fit in 64 bits; quote long numbers as strings"


def _too_deep_message() -> str:
    return f"arrays and tables nest more than {MAX_NESTING} levels deep here"


def _first_pathology(text: str, *, dotted: bool = False) -> tuple[str, int] | None:
    depth = 0
    for match in _TOKENS.finditer(text):
        if match.group("dotted") is not None:
            if dotted:
                return "dotted", match.start()
        elif match.group("open") is not None:
            depth += 1
            if depth > MAX_NESTING:
                return "deep", match.start()
        elif match.group("close") is not None:
            depth = max(0, depth - 1)
        elif match.group("digits") is not None:
            return "digits", match.start()
    return None


def _line_col(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def data_problem(data: Any) -> tuple[tuple[str | int, ...], str, str] | None:
    """Return ``(path, message, hint)`` for data too deep or holding too wide an integer.

    Too deep: past :data:`MAX_NESTING`. Too wide: outside the signed 64-bit range, TOML's;
    Python's parser reads wider integers, which no reader of a run's log could serve.

    Iterative, so it never recurses itself.
    """
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(data, ())]
    while stack:
        node, path = stack.pop()
        if len(path) > MAX_NESTING:
            return path[:MAX_NESTING], _too_deep_message(), _DEEP_HINT
        if isinstance(node, int) and not isinstance(node, bool) and \
                not MIN_INT <= node <= MAX_INT:
            return path, (f"an integer of {len(str(abs(node)))} digits is outside the signed "
                          "64-bit range (-2^63 … 2^63-1) of TOML"), _BIG_HINT
        if isinstance(node, dict):
            stack.extend((value, (*path, key)) for key, value in node.items())
        elif isinstance(node, list | tuple):
            stack.extend((value, (*path, index)) for index, value in enumerate(node))
    return None
