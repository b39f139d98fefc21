"""The JSON Schema of the council file format (what ``wop schema`` prints)."""

from __future__ import annotations

import copy
import functools
from typing import Any

from wopdsl._ids import IDENT_PATTERN
from wopdsl.model.spec import CouncilSpec

__all__ = ["SCHEMA_ID", "council_json_schema"]

SCHEMA_ID = "https://wopdsl.dev/schema/council.schema.json"
"""The ``$id`` of the council file schema."""



def council_json_schema() -> dict[str, Any]:
    """Return the JSON Schema (draft 2020-12) of a council file, parsed from TOML.

    The schema checks each field on its own; cross-references (room members, mentions,
    engine keys) are checked by ``wop validate``.

    Returns:
        A fresh dict, safe to modify.

    Example:
        >>> schema = council_json_schema()
        >>> schema["$id"]
        'https://wopdsl.dev/schema/council.schema.json'
        >>> sorted(schema["properties"])
        ['council', 'members', 'rooms']
    """
    return copy.deepcopy(_schema())


@functools.cache
def _schema() -> dict[str, Any]:
    generated = CouncilSpec.model_json_schema()
    generated.pop("title", None)
    generated.pop("description", None)
    _forbid_dot_ids(generated)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "wopdsl council file",
        "description": (
            "A council declared in TOML: [council] (id, task, limits), [[rooms]] and "
            "[[members]]. Keys are snake_case; unknown keys are errors."
        ),
        **generated,
    }


def _forbid_dot_ids(node: Any) -> None:
    # Ids are addresses, never paths: "." and ".." match the pattern but are refused.
    if isinstance(node, dict):
        if node.get("pattern") == IDENT_PATTERN:
            node["not"] = {"enum": [".", ".."]}
        for value in node.values():
            _forbid_dot_ids(value)
    elif isinstance(node, list):
        for value in node:
            _forbid_dot_ids(value)
