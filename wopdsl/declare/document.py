r"""TOML files with a source map: read, parse and validate any declaration format.

The council loader (:mod:`wopdsl.declare.toml`) and other file formats built on the public API
(``wop eval`` files, :mod:`wopdsl.evals`) share what makes a file's errors useful: the file is
read with the same bounds (size, nesting, UTF-8), a syntax error names its line and column,
and a problem found in the parsed data — by pydantic or by a later check — is placed at the
key it concerns (``file:line:col``), with its field path and a hint.

Example:
    >>> doc = parse_toml('[eval]\\nid = "x"\\n', "e.toml")
    >>> doc.data["eval"]["id"], doc.position(("eval", "id"))
    ('x', (2, 1))
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from wopdsl.declare._bounds import data_problem, dotted_problem, parse_failure, size_problem
from wopdsl.declare._messages import describe_error
from wopdsl.declare._source_map import SourceMap, format_path, parse_path
from wopdsl.errors import DeclarationError, Problem

__all__ = ["TomlDocument", "in_file_order", "parse_toml", "read_text"]

M = TypeVar("M", bound=BaseModel)

_AT = re.compile(r"^(?P<message>.*?) \(at line (?P<line>\d+), column (?P<column>\d+)\)$", re.S)
_AT_END = re.compile(r"^(?P<message>.*?) \(at end of document\)$", re.S)
_SYNTAX_HINTS = (
    ("overwrite", "each key may appear once per table; remove or rename the duplicate"),
    ("twice", "each table may be declared once; merge the two tables"),
    ("inline table", "an inline table { ... } must stay on one line; close it there"),
    (
        "key part",
        "a key goes here; an inline table { ... } must stay on one line, and keys "
        "with characters other than A-Z a-z 0-9 _ - need quotes",
    ),
    ("unclosed array", "close the array with ]"),
    ("unterminated string", "close the string with the quote it opened with (\" or ')"),
    ("illegal character", "escape control characters in strings (\\n, \\t, \\u0001)"),
    ("invalid value", 'quote strings ("..."); booleans are true/false; arrays use [ ... ]'),
    ("expected '='", "write key = value; a key with spaces or other characters needs quotes"),
    ("invalid statement", "each line is a key = value pair, a [table] or an [[array]] header"),
)
_DEFAULT_SYNTAX_HINT = "fix the TOML syntax here (TOML v1.0: https://toml.io/en/v1.0.0)"


def read_text(path: str | os.PathLike[str], *, what: str = "council file") -> str:
    """Read a declaration file as UTF-8 text, within the size bound.

    Args:
        path: The file.
        what: What the file is, for messages ("council file", "eval file" …).

    Raises:
        DeclarationError: missing, a directory, unreadable, too big or not UTF-8, located.
    """
    source = os.fspath(path)
    try:
        too_big = size_problem(Path(source).stat().st_size, source)
        if too_big is not None:
            raise DeclarationError(too_big)
        raw = Path(source).read_bytes()
    except FileNotFoundError:
        raise DeclarationError(
            Problem("file not found", source=source, hint="check the path and the file name")
        ) from None
    except IsADirectoryError:
        raise DeclarationError(
            Problem(f"is a directory, not a {what}", source=source,
                    hint="pass the .toml file itself")
        ) from None
    except OSError as exc:
        raise DeclarationError(
            Problem(f"cannot read the file: {exc.strerror or exc}", source=source,
                    hint="check the file's permissions")
        ) from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        line_start = raw.rfind(b"\n", 0, exc.start) + 1
        column = len(raw[line_start : exc.start].decode("utf-8", errors="replace")) + 1
        raise DeclarationError(
            Problem(f"not UTF-8 text (byte 0x{raw[exc.start]:02x} cannot be decoded)",
                    source=source, line=line, column=column, hint="save the file as UTF-8")
        ) from None


@dataclass(frozen=True, slots=True)
class TomlDocument:
    """A parsed TOML text and where each of its keys sits."""

    source: str
    """The file (or name) the text came from."""
    data: dict[str, Any]
    """The parsed document."""
    source_map: SourceMap

    def position(self, loc: tuple[str | int, ...]) -> tuple[int, int] | None:
        """The 1-based ``(line, column)`` of ``loc``, or of its nearest recorded ancestor."""
        return self.source_map.locate(loc)

    def problem(self, message: str, loc: tuple[str | int, ...], hint: str = "") -> Problem:
        """A problem at ``loc`` (a path into :attr:`data`), with its place in the file."""
        line, column = self.position(loc) or (None, None)
        return Problem(message, format_path(loc, self.data), hint, self.source, line, column)

    def locate(self, problems: Iterable[Problem]) -> list[Problem]:
        """Place problems that carry only a field path; return them in file order."""
        located = []
        for p in problems:
            line, column = p.line, p.column
            if line is None and p.path:
                line, column = self.position(parse_path(p.path, self.data)) or (None, None)
            located.append(Problem(p.message, p.path, p.hint, p.source or self.source, line,
                                   column))
        return in_file_order(located)

    def validate(self, model: type[M], *, data: Any = None, guide: str = "docs/guides/toml.md",
                 hints: Callable[[Any], tuple[str, str] | None] | None = None) -> M:
        """Validate the document (or ``data`` shaped like it) into ``model``.

        Unknown keys, missing keys and wrong types get the council loader's messages
        (allowed keys, likely spellings; ``guide`` is the document hints name); ``hints``
        may give an error its own ``(message, hint)`` first.

        Raises:
            DeclarationError: every problem, located, in file order.
        """
        data = self.data if data is None else data
        deep = data_problem(data)
        if deep is not None:
            loc, message, hint = deep
            raise DeclarationError(self.problem(message, loc, hint))
        try:
            return model.model_validate(data)
        except PydanticValidationError as exc:
            problems = []
            for error in exc.errors(include_url=False):
                loc = tuple(error["loc"])
                own = hints(error) if hints is not None else None
                message, hint = own or describe_error(error, data, root=model, guide=guide)
                problems.append(self.problem(message, loc, hint))
            raise DeclarationError(in_file_order(problems)) from None


def parse_toml(text: str, source: str = "<string>") -> TomlDocument:
    """Parse TOML text within the loader's bounds, keeping the source map.

    Raises:
        DeclarationError: a syntax error (line, column and a hint), a file too big, too
            deeply nested or holding an integer too wide.
    """
    # A byte order mark is not TOML, but editors add it; it is invisible, so drop it.
    text = text.removeprefix("\ufeff")
    too_big = size_problem(len(text), source)
    if too_big is not None:
        raise DeclarationError(too_big)
    too_dotted = dotted_problem(text, source)
    if too_dotted is not None:
        raise DeclarationError(too_dotted)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise DeclarationError(_syntax_problem(exc, text, source)) from None
    except (RecursionError, ValueError, MemoryError) as exc:
        # Nesting deeper than the parser's recursion, or an integer of 4,301+ digits.
        raise DeclarationError(parse_failure(text, source, exc)) from None
    return TomlDocument(source, data, SourceMap(text))


def in_file_order(problems: list[Problem]) -> list[Problem]:
    """``problems`` sorted by line and column (those without a line last)."""
    return sorted(problems, key=lambda p: (p.line is None, p.line or 0, p.column or 0))


def _syntax_problem(exc: tomllib.TOMLDecodeError, text: str, source: str) -> Problem:
    raw = str(exc)
    line: int | None
    column: int | None
    found = _AT.match(raw)
    if found is not None:
        message = found.group("message")
        line, column = int(found.group("line")), int(found.group("column"))
    elif (end := _AT_END.match(raw)) is not None:
        message = end.group("message")
        line = text.count("\n") + 1
        column = len(text) - (text.rfind("\n") + 1) + 1
    else:  # pragma: no cover - tomllib always appends a position today.
        message = raw
        line = getattr(exc, "lineno", None)
        column = getattr(exc, "colno", None)
    lowered = message.lower()
    hint = next((h for key, h in _SYNTAX_HINTS if key in lowered), _DEFAULT_SYNTAX_HINT)
    if "overwrite" in lowered and line is not None:
        # tomllib reports the end of the second value; point at the repeated key instead.
        earlier = [d for d in SourceMap(text).duplicates if d[1][0] <= line]
        if earlier:
            path, (line, column) = earlier[-1]
            message += f": {format_path(path)} is already set"
    return Problem(
        f"TOML syntax error: {message[:1].lower()}{message[1:]}", "", hint, source, line, column
    )
