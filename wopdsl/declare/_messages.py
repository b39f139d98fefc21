"""Private: turn pydantic validation errors into readable council-file problems."""

from __future__ import annotations

import difflib
import json
import re
from typing import Any, get_args, get_origin

from pydantic import BaseModel

from wopdsl._ids import IDENT_PATTERN, MAX_SAFE_INT
from wopdsl.model.spec import CouncilSettings, CouncilSpec, MemberSpec

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


_PATTERN_HINTS: dict[str, tuple[str, str]] = {
    "api_key_env": ("the NAME of an environment variable (letters, digits, '_')",
                    'name the variable that holds the key, e.g. api_key_env = "OPENAI_API_KEY";'
                    " never put a key in the file"),
    "base_url": ("an http:// or https:// URL",
                 'e.g. base_url = "http://127.0.0.1:11434/v1", or leave it out to use '
                 "$OPENAI_BASE_URL"),
    "provider": ("a lower-case provider id", 'e.g. provider = "openai"'),
}


HINT_MARK = " | hint: "
"""Separates a model validator's message from its hint (``"… | hint: write …"``)."""


def describe_error(error: Any, data: Any, *, root: type[BaseModel] = CouncilSpec,
                   guide: str = "docs/guides/toml.md") -> tuple[str, str]:
    """Return a readable message and a hint for one pydantic error on council data.

    ``root`` is the model the data was validated into (another file format's, for the
    allowed keys of a table); ``guide`` the document hints point to.
    """
    kind: str = error["type"]
    loc: tuple[str | int, ...] = tuple(error["loc"])
    ctx: dict[str, Any] = error.get("ctx") or {}
    value = error.get("input")
    key = loc[-1] if loc else ""
    if kind == "extra_forbidden":
        return _unknown_key(loc, root, guide)
    if kind == "missing":
        return _missing(loc)
    if isinstance(key, str) and key in _LIMITS and _model_at(loc[:-1], root) in _LIMIT_MODELS:
        return f"{_LIMIT_MESSAGE}, got {_show(value)}", _LIMIT_HINT
    if kind in ("string_too_long", "string_too_short") or (
        kind == "string_pattern_mismatch" and ctx.get("pattern") == IDENT_PATTERN
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
    if kind == "string_pattern_mismatch" and key in _PATTERN_HINTS:
        wanted, hint = _PATTERN_HINTS[str(key)]
        return f"must be {wanted}, got {_show(value)}", hint
    if kind == "literal_error":
        return (
            f"must be one of {ctx.get('expected', '?')}, got {_show(value)}",
            "use one of the listed values (lower case, in quotes)",
        )
    if kind == "value_error":
        text = str(error["msg"]).removeprefix("Value error, ")
        message, own, hint = text.partition(HINT_MARK)  # a validator that names its fix
        if own:
            return message, hint
        return text, "use plain JSON values: strings, numbers, booleans, arrays and tables"
    if kind in _TYPE_NAMES:
        wanted = _TYPE_NAMES[kind]
        hint = {
            "string_type": 'put the value in quotes, e.g. "text"',
            "bool_type": "write true or false, without quotes",
            "list_type": 'use an array, e.g. ["a", "b"]',
        }.get(kind, f"use {wanted}")
        shown = _show(value)
        got = shown if shown.startswith(("an ", "a ")) else f"{_kind_of(value)} {shown}"
        return f"must be {wanted}, got {got}", hint
    message = str(error["msg"])
    return (
        f"{message[:1].lower()}{message[1:]}, got {_show(value)}",
        f"see {guide} for the allowed values",
    )


def _unknown_key(loc: tuple[str | int, ...], root: type[BaseModel],
                 guide: str) -> tuple[str, str]:
    key = str(loc[-1])
    model = _model_at(loc[:-1], root)
    allowed = list(model.model_fields) if model is not None else []
    message = f"unknown key '{key}'" + (f" (allowed: {', '.join(allowed)})" if allowed else "")
    likely = [name for name in _LIKELY_KEYS.get(key, ()) if name in allowed]
    likely += difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
    guess = likely[0] if likely else None
    if len(loc) == 1 and root is CouncilSpec and key in CouncilSettings.model_fields:
        return message, f"move '{key}' under the [council] table"
    if guess is not None:
        return message, f"did you mean '{guess}'? Otherwise remove the key"
    return message, f"remove the key or fix its spelling (see {guide})"


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


def _model_at(loc: tuple[str | int, ...], root: type[BaseModel]) -> type[BaseModel] | None:
    annotation: Any = root
    for part in loc:
        if isinstance(part, int):
            continue
        if get_origin(annotation) is dict:  # a table of named entries ([models.NAME])
            annotation = get_args(annotation)[1]
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
