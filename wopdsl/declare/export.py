"""Write a :class:`~wopdsl.model.spec.CouncilSpec` back to the council file format."""

from __future__ import annotations

import re
from typing import Any

import tomli_w

from wopdsl._ids import BIDI_CONTROLS
from wopdsl.model.spec import CouncilSpec

__all__ = ["to_toml"]

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


_INVISIBLE = str.maketrans({code: f"\\u{code:04x}"
                            for code in (*range(0x7F, 0xA0), 0x2028, 0x2029, *BIDI_CONTROLS)})


def to_toml(spec: CouncilSpec) -> str:
    r"""Render ``spec`` as a council file: council, rooms, decisions, members, models, MCP.

    Keys are snake_case, defaults and ``None`` are left out, script steps are one inline
    table per line, a room's ``turn_schema`` becomes ``[rooms.turn_schema]`` sections, and
    ``loads_spec(to_toml(spec)) == spec`` for every valid spec.

    Args:
        spec: The declaration to write (from a TOML file or from decorators).

    Returns:
        The TOML text.

    Example:
        >>> from wopdsl.declare import loads_spec
        >>> spec = loads_spec('[council]\nid = "solo"\ntask = "Say hello."\n')
        >>> print(to_toml(spec), end="")
        [council]
        id = "solo"
        task = "Say hello."
    """
    data = spec.to_data()
    chunks = [_table("[council]", data["council"])]
    chunks += [_table("[[rooms]]", room) for room in data.get("rooms", [])]
    chunks += [_table("[[decisions]]", decision) for decision in data.get("decisions", [])]
    chunks += [_table("[[members]]", member) for member in data.get("members", [])]
    chunks += [_table(f"[models.{_key(name)}]", profile)
               for name, profile in data.get("models", {}).items()]
    chunks += [_table(f"[mcp.{_key(name)}]", server)
               for name, server in data.get("mcp", {}).items()]
    # tomli-w escapes C0 controls; C1, separators and bidi controls are legal TOML but act on
    # a terminal or hide what the file says: write them as \uNNNN (the strings are basic).
    return "\n".join(chunks).translate(_INVISIBLE)


def _table(header: str, table: dict[str, Any]) -> str:
    name = header.strip("[]")
    lines = [header]
    script = table.pop("script", None)
    # Tables (a room's turn_schema) read best as [rooms.turn_schema] sections below the keys.
    sections = {key: value for key, value in table.items() if isinstance(value, dict)}
    for key, value in table.items():
        if key not in sections:
            lines.append(f"{_key(key)} = {_value(value, top=True)}")
    if script is not None:
        # One step per line reads like a script; inline tables must stay on one line anyway.
        if script:
            steps = "".join(f"  {_value(step)},\n" for step in script)
            lines.append(f"script = [\n{steps}]")
        else:
            lines.append("script = []")
    text = "\n".join(lines) + "\n"
    for key, value in sections.items():
        text += _section(f"{name}.{_key(key)}", value)
    return text


def _section(name: str, table: dict[str, Any]) -> str:
    lines = [f"\n[{name}]"]
    nested = {key: value for key, value in table.items() if isinstance(value, dict) and value}
    for key, value in table.items():
        if key not in nested:
            lines.append(f"{_key(key)} = {_value(value, top=True)}")
    # A header with no keys of its own adds nothing: the nested headers imply the table.
    text = "\n".join(lines) + "\n" if len(lines) > 1 or not nested else ""
    for key, value in nested.items():
        text += _section(f"{name}.{_key(key)}", value)
    return text


def _key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else _scalar(key, multiline=False)


def _value(value: Any, *, top: bool = False) -> str:
    if isinstance(value, dict):
        if not value:
            return "{}"
        return "{ " + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(_value(item) for item in value) + "]"
    # Multi-line strings only outside inline tables, and never with "\r": tomli-w turns
    # "\r\n" into "\n" in that form, which would not round-trip.
    multiline = top and isinstance(value, str) and "\n" in value and "\r" not in value
    return _scalar(value, multiline=multiline)


def _scalar(value: Any, *, multiline: bool) -> str:
    # tomli-w does the escaping; only its "v = ...\n" wrapper is peeled off.
    rendered = tomli_w.dumps({"v": value}, multiline_strings=multiline)
    return rendered.removeprefix("v = ").removesuffix("\n")
