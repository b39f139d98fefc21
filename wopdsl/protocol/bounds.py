"""The bounds of every JSON value a run stores, so that every reader can serve what is stored.

A run's events are read back by many encoders: the host's (orjson, for JSON pages and SSE),
the CLI's, the TUI's and the notebook's, PostgreSQL's ``jsonb``. They agree on JSON values
nested at most :data:`MAX_DEPTH` levels whose integers are signed 64-bit numbers (the TOML
range; orjson refuses wider ones, and refuses nesting past 254 levels once the event's own
envelope is around the value). Every door a value comes in by checks it with
:func:`json_problem`: HTTP inputs and metadata, council files, human and external turns,
handler and model results, model usage.
"""

from __future__ import annotations

import math
from typing import Any, Final

import orjson

__all__ = ["MAX_DEPTH", "MAX_INT", "MAX_METADATA_BYTES", "MIN_INT", "field_path", "json_problem"]

MAX_DEPTH: Final = 32
"""Deepest nesting of a value from outside (metadata, turn content, outcome, result data)."""
MIN_INT: Final = -(2**63)
"""Smallest integer a stored value may hold (signed 64-bit, as TOML's)."""
MAX_INT: Final = 2**63 - 1
"""Largest integer a stored value may hold (signed 64-bit, as TOML's)."""

MAX_METADATA_BYTES: Final = 256 * 1024
"""Largest ``metadata`` a run is started with (as JSON), the host's default body limit."""

_RANGE: Final = "outside the signed 64-bit range (-2^63 … 2^63-1) every reader of the log " \
                "can serve"


def json_problem(value: Any, *, limit: int = MAX_DEPTH,
                 max_bytes: int | None = None) -> tuple[str, str] | None:
    """Return ``(path, message)`` for the first part of ``value`` a reader could not serve.

    Checks, without recursion: nesting deeper than ``limit`` (a scalar is depth 0, ``{}``
    depth 1), integers outside ``MIN_INT … MAX_INT``, NaN and infinities, keys that are not
    strings, values that are not JSON (sets, objects); then, with ``max_bytes``, the size of
    the compact JSON encoding.

    Args:
        value: The JSON value (dicts, lists, strings, numbers, booleans, ``None``).
        limit: The deepest nesting allowed.
        max_bytes: The largest encoding allowed, in bytes (``None``: no size bound).

    Returns:
        ``None`` when the value is fine; else the path to the offending part (``a.b[2]``,
        ``""`` for the value itself) and what is wrong with it.

    Example:
        >>> json_problem({"n": [1, 2**70]})[0]
        'n[1]'
    """
    stack: list[tuple[Any, int, tuple[str | int, ...]]] = [(value, 0, ())]
    while stack:
        item, depth, path = stack.pop()
        kind = type(item)
        if kind is str or kind is bool or item is None:
            continue
        if kind is int or isinstance(item, int):
            if not MIN_INT <= item <= MAX_INT:
                return _path(path), f"an integer of {len(str(abs(item)))} digits, {_RANGE}"
            continue
        if kind is float:
            if not math.isfinite(item):
                return _path(path), f"{item} is not a JSON number"
            continue
        if kind is dict or kind is list or isinstance(item, dict | list):
            if depth >= limit:
                return _path(path), f"nests deeper than {limit} levels"
            if isinstance(item, dict):
                for key, child in item.items():
                    if not isinstance(key, str):
                        return _path(path), f"a key is {type(key).__name__}, not a string"
                    stack.append((child, depth + 1, (*path, key)))
            else:
                stack.extend((child, depth + 1, (*path, index))
                             for index, child in enumerate(item))
            continue
        return _path(path), f"{kind.__name__} is not a JSON value"
    if max_bytes is not None:
        try:
            size = len(orjson.dumps(value))
        except TypeError as exc:  # A lone surrogate in a string, say.
            return "", f"it cannot be encoded as JSON: {exc}"
        if size > max_bytes:
            return "", f"it is {size} bytes as JSON, over the limit of {max_bytes}"
    return None


def field_path(prefix: str, path: str) -> str:
    """``prefix`` joined with a path from :func:`json_problem` (``data`` + ``a[1]``)."""
    if not path:
        return prefix
    return f"{prefix}{path}" if path.startswith("[") else f"{prefix}.{path}"


_MAX_PATH: Final = 200
"""Characters of a path shown in a message (a hostile key may be megabytes long)."""


def _path(parts: tuple[str | int, ...]) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out if len(out) <= _MAX_PATH else out[:_MAX_PATH] + "…"
