"""Load council files: TOML text -> validated :class:`~wopdsl.model.spec.CouncilSpec`.

Every problem names the file, line and column of the offending key, the field path and a fix,
and all problems of a file are raised together in one :class:`~wopdsl.errors.DeclarationError`.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, get_args

from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from wopdsl._ids import MAX_SAFE_INT
from wopdsl.declare._source_map import SourceMap, format_path, parse_path
from wopdsl.errors import DeclarationError, Problem
from wopdsl.model.spec import CouncilSettings, CouncilSpec, MemberSpec

__all__ = ["load_spec", "loads_spec", "locate_problems", "spec_from_data"]

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


def load_spec(path: str | os.PathLike[str]) -> CouncilSpec:
    """Read and validate a council file.

    Args:
        path: The ``.toml`` file to read (UTF-8).

    Returns:
        The validated declaration.

    Raises:
        DeclarationError: When the file is missing, unreadable, not UTF-8, not TOML, or not
            a valid council; it lists every problem with ``file:line:col``, path and hint.

    Example:
        >>> spec = load_spec("councils/release-team.toml")
        >>> [member.id for member in spec.members]
        ['writer', 'reviewer']
    """
    source = os.fspath(path)
    try:
        raw = Path(source).read_bytes()
    except FileNotFoundError:
        raise DeclarationError(
            Problem("file not found", source=source, hint="check the path and the file name")
        ) from None
    except IsADirectoryError:
        raise DeclarationError(
            Problem(
                "is a directory, not a council file",
                source=source,
                hint="pass the .toml file itself",
            )
        ) from None
    except OSError as exc:
        raise DeclarationError(
            Problem(
                f"cannot read the file: {exc.strerror or exc}",
                source=source,
                hint="check the file's permissions",
            )
        ) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        line_start = raw.rfind(b"\n", 0, exc.start) + 1
        column = len(raw[line_start : exc.start].decode("utf-8", errors="replace")) + 1
        raise DeclarationError(
            Problem(
                f"not UTF-8 text (byte 0x{raw[exc.start]:02x} cannot be decoded)",
                source=source,
                line=line,
                column=column,
                hint="save the file as UTF-8",
            )
        ) from None
    return loads_spec(text, source)


def loads_spec(text: str, source: str = "<string>") -> CouncilSpec:
    """Validate a council declared in TOML text.

    Args:
        text: The TOML document.
        source: The name used in error locations (a file path, or ``<string>``).

    Returns:
        The validated declaration.

    Raises:
        DeclarationError: Listing every problem (syntax, fields, cross-references), each with
            ``source:line:col``, field path and hint.

    Example:
        >>> spec = loads_spec('''
        ... [council]
        ... id = "solo"
        ... task = "Say hello."
        ... [[members]]
        ... id = "greeter"
        ... role = "greeter"
        ... engine = "script"
        ... script = [{ summary = "Hello." }]
        ... ''')
        >>> spec.members[0].script[0].summary
        'Hello.'
    """
    # A byte order mark is not TOML, but editors add it; it is invisible, so drop it.
    text = text.removeprefix("\ufeff")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise DeclarationError(_syntax_problem(exc, text, source)) from None
    return _validate(data, SourceMap(text), source)


def spec_from_data(data: Mapping[str, Any], *, source: str | None = None) -> CouncilSpec:
    """Validate council data shaped like the parsed file, with the loader's messages.

    For declarations that do not come from a TOML text (decorators, JSON): problems carry
    field paths and hints but no line and column.

    Args:
        data: ``{"council": {...}, "rooms": [...], "members": [...]}``.
        source: A name to show as the problems' location (e.g. the defining module).

    Returns:
        The validated declaration.

    Raises:
        DeclarationError: Listing every problem, each with its field path and a hint.

    Example:
        >>> spec_from_data({"council": {"id": "solo", "task": "Say hello."}}).id
        'solo'
    """
    return _validate(dict(data), None, source)


def _validate(data: Any, source_map: SourceMap | None, source: str | None) -> CouncilSpec:
    try:
        spec = CouncilSpec.model_validate(data)
    except PydanticValidationError as exc:
        problems = []
        for error in exc.errors(include_url=False):
            loc = tuple(error["loc"])
            message, hint = _describe_error(error, data)
            line, column = (source_map and source_map.locate(loc)) or (None, None)
            problems.append(Problem(message, format_path(loc, data), hint, source, line, column))
        raise DeclarationError(_in_file_order(problems)) from None
    # Imported here: compile sits beside declare (same layer) and its package imports the
    # member engines, which loading a file does not need until references are checked.
    from wopdsl.compile._validate import check_spec

    problems = check_spec(spec)
    if source_map is not None:
        problems = _locate(problems, source_map, data, source)
    elif source is not None:
        problems = [
            Problem(p.message, p.path, p.hint, p.source or source, p.line, p.column)
            for p in problems
        ]
    if problems:
        raise DeclarationError(_in_file_order(problems))
    return spec


def locate_problems(problems: Iterable[Problem], text: str, source: str) -> list[Problem]:
    """Add ``source``, line and column to problems that carry only a field path.

    Use it on a :class:`DeclarationError` raised by ``compile()`` for a spec loaded from
    ``text``, so template and handler problems point into the file too.

    Args:
        problems: Problems with paths such as ``members[0] (writer).brief``.
        text: The TOML text the spec was loaded from.
        source: The file name for the locations.

    Returns:
        The problems with locations filled in where the path is found, in file order.
    """
    try:
        data: Any = tomllib.loads(text.removeprefix("\ufeff"))
    except tomllib.TOMLDecodeError:
        data = None
    return _in_file_order(_locate(problems, SourceMap(text.removeprefix("\ufeff")), data, source))


def _locate(
    problems: Iterable[Problem], source_map: SourceMap, data: Any, source: str | None
) -> list[Problem]:
    located = []
    for problem in problems:
        line, column = problem.line, problem.column
        if line is None and problem.path:
            line, column = source_map.locate(parse_path(problem.path, data)) or (None, None)
        located.append(
            Problem(
                problem.message, problem.path, problem.hint, problem.source or source, line, column
            )
        )
    return located


def _in_file_order(problems: list[Problem]) -> list[Problem]:
    return sorted(
        problems,
        key=lambda p: (p.line is None, p.line or 0, p.column or 0),
    )


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


# -- pydantic errors -> problems ------------------------------------------------------------

_LIMITS = frozenset(
    {
        "version",
        "global_concurrency",
        "max_turns_per_member",
        "tail_messages",
        "timeout_ms",
        "turn_timeout_ms",
        "max_input_bytes",
        "max_output_bytes",
        "max_turns",
    }
)
_LIMIT_MODELS = (CouncilSettings, MemberSpec)
_LIMIT_MESSAGE = "must be a positive safe integer (1 … 2^53−1)"
_LIMIT_HINT = f"use a whole number from 1 to {MAX_SAFE_INT}, without quotes or a decimal point"
_IDENT_MESSAGE = "must be 1-64 characters of [A-Za-z0-9._-] (no '/', spaces or control characters)"
_IDENT_PATTERN = "^[A-Za-z0-9._-]{1,64}$"
_LIKELY_KEYS: dict[str, tuple[str, ...]] = {
    "turn_cap": ("max_turns", "max_turns_per_member"),
    "turns": ("max_turns", "max_turns_per_member"),
    "cap": ("max_turns", "max_turns_per_member"),
    "max_turn": ("max_turns", "max_turns_per_member"),
    "name": ("id",),
    "room_id": ("room",),
    "roomId": ("room",),
    "instructions": ("brief",),
    "prompt": ("brief",),
    "concurrency": ("global_concurrency",),
    "timeout": ("turn_timeout_ms", "timeout_ms"),
    "tail": ("tail_messages",),
    "member": ("members",),
    "room": ("rooms",),
    "mention": ("mentions",),
    "post": ("posts",),
    "steps": ("script",),
}
_TYPE_NAMES = {
    "string_type": "a string",
    "bool_type": "true or false",
    "int_type": "an integer",
    "float_type": "a number",
    "list_type": "an array ([ ... ])",
    "dict_type": "a table",
    "model_type": "a table",
    "model_attributes_type": "a table",
}


def _describe_error(error: Any, data: Any) -> tuple[str, str]:
    """Return a readable message and a hint for one pydantic error on council data."""
    kind: str = error["type"]
    loc: tuple[str | int, ...] = tuple(error["loc"])
    ctx: dict[str, Any] = error.get("ctx") or {}
    value = error.get("input")
    key = loc[-1] if loc else ""
    if kind == "extra_forbidden":
        return _unknown_key(loc)
    if kind == "missing":
        return _missing(loc)
    if isinstance(key, str) and key in _LIMITS and _model_at(loc[:-1]) in _LIMIT_MODELS:
        return f"{_LIMIT_MESSAGE}, got {_show(value)}", _LIMIT_HINT
    if kind in ("string_too_long", "string_too_short") or (
        kind == "string_pattern_mismatch" and ctx.get("pattern") == _IDENT_PATTERN
    ):
        got = (
            f"{len(value)} characters"
            if isinstance(value, str) and (len(value) > 64 or not value)
            else _show(value)
        )
        example = re.sub(r"[^A-Za-z0-9._-]+", "-", str(value)).strip("-")[:64]
        suggestion = f' (e.g. "{example}")' if example not in ("", ".", "..") else ""
        return f"{_IDENT_MESSAGE}, got {got}", f"use letters, digits, '.', '_' or '-'{suggestion}"
    if kind == "string_pattern_mismatch" and key == "handler":
        return (
            f"must be 'module:function', got {_show(value)}",
            'name an importable function, e.g. handler = "agents:writer"',
        )
    if kind == "literal_error":
        return (
            f"must be one of {ctx.get('expected', '?')}, got {_show(value)}",
            "use one of the listed values (lower case, in quotes)",
        )
    if kind == "value_error":
        text = str(error["msg"]).removeprefix("Value error, ")
        return text, "use plain JSON values: strings, numbers, booleans, arrays and tables"
    if kind in _TYPE_NAMES:
        wanted = _TYPE_NAMES[kind]
        hint = {
            "string_type": 'put the value in quotes, e.g. "text"',
            "bool_type": "write true or false, without quotes",
            "list_type": 'use an array, e.g. ["a", "b"]',
        }.get(kind, f"use {wanted}")
        return f"must be {wanted}, got {_kind_of(value)} {_show(value)}", hint
    message = str(error["msg"])
    return (
        f"{message[:1].lower()}{message[1:]}, got {_show(value)}",
        "see docs/guides/toml.md for the allowed values",
    )


def _unknown_key(loc: tuple[str | int, ...]) -> tuple[str, str]:
    key = str(loc[-1])
    model = _model_at(loc[:-1])
    allowed = list(model.model_fields) if model is not None else []
    message = f"unknown key '{key}'" + (f" (allowed: {', '.join(allowed)})" if allowed else "")
    likely = [name for name in _LIKELY_KEYS.get(key, ()) if name in allowed]
    likely += difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
    guess = likely[0] if likely else None
    if len(loc) == 1 and key in CouncilSettings.model_fields:
        return message, f"move '{key}' under the [council] table"
    if guess is not None:
        return message, f"did you mean '{guess}'? Otherwise remove the key"
    return message, "remove the key or fix its spelling (see docs/guides/toml.md)"


def _missing(loc: tuple[str | int, ...]) -> tuple[str, str]:
    key = str(loc[-1])
    if loc == ("council",):
        return (
            "missing the [council] table",
            'add a [council] table with at least id = "..." and task = "..."',
        )
    example = '["..."]' if key == "members" else '"..."'
    return f"missing required key '{key}'", f"add {key} = {example} to {_table_name(loc[:-1])}"


def _table_name(loc: tuple[str | int, ...]) -> str:
    names = {
        "council": "[council]",
        "rooms": "this [[rooms]] table",
        "members": "this [[members]] table",
        "script": "this script step",
        "posts": "this post",
    }
    for part in reversed(loc):
        if isinstance(part, str) and part in names:
            return names[part]
    return "the file"


def _model_at(loc: tuple[str | int, ...]) -> type[BaseModel] | None:
    annotation: Any = CouncilSpec
    for part in loc:
        if isinstance(part, int):
            continue
        model = _find_model(annotation)
        if model is None or part not in model.model_fields:
            return None
        annotation = model.model_fields[part].annotation
    return _find_model(annotation)


def _find_model(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        found = _find_model(arg)
        if found is not None:
            return found
    return None


def _kind_of(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "table"
    return "date/time"


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        text = json.dumps(value, ensure_ascii=False)
        return text if len(text) <= 50 else text[:47] + '…"'
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list):
        return "an array" if value else "[]"
    if isinstance(value, dict):
        return "a table" if value else "{}"
    return str(value)
