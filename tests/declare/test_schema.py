"""The JSON Schema of the council file format (``wop schema``)."""

from __future__ import annotations

import copy
import json
import tomllib
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from wopdsl.declare import council_json_schema

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture()
def example() -> dict[str, Any]:
    return tomllib.loads((REPO / "councils" / "release-team.toml").read_text(encoding="utf-8"))


@pytest.fixture()
def validator() -> jsonschema.Draft202012Validator:
    schema = council_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_schema_identity() -> None:
    schema = council_json_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"] == "https://wopdsl.dev/schema/council.schema.json"
    assert schema["title"] == "wopdsl council file"
    assert schema["required"] == ["council"]
    assert schema["additionalProperties"] is False
    json.dumps(schema)  # plain JSON, printable by `wop schema`


def test_schema_validates_the_example(validator: Any, example: dict[str, Any]) -> None:
    assert list(validator.iter_errors(example)) == []


@pytest.mark.parametrize(
    "where",
    [
        lambda d: d,
        lambda d: d["council"],
        lambda d: d["rooms"][0],
        lambda d: d["members"][1],
        lambda d: d["members"][0]["script"][0],
        lambda d: d["members"][0]["script"][0]["posts"][0],
    ],
)
def test_schema_rejects_unknown_keys(validator: Any, example: dict[str, Any], where: Any) -> None:
    where(example)["turn_cap"] = 3
    assert not validator.is_valid(example)


@pytest.mark.parametrize("bad", [0, -1, 2**53, 1.5, True, "2"])
def test_schema_rejects_bad_limits(validator: Any, example: dict[str, Any], bad: object) -> None:
    example["council"]["max_turns_per_member"] = bad
    assert not validator.is_valid(example)


@pytest.mark.parametrize("bad", ["a/b", "a b", ".", "..", "x" * 65, ""])
def test_schema_rejects_bad_ids(validator: Any, example: dict[str, Any], bad: str) -> None:
    example["members"][0]["id"] = bad
    assert not validator.is_valid(example)


def test_schema_documents_fields() -> None:
    schema = council_json_schema()
    settings = schema["$defs"]["CouncilSettings"]["properties"]
    assert "Per-room message tail" in settings["tail_messages"]["description"]


def test_each_call_returns_a_fresh_copy() -> None:
    first = council_json_schema()
    kept = copy.deepcopy(first)
    first["properties"].clear()
    assert council_json_schema() == kept
