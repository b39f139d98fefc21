"""Export: load -> export -> load is lossless, and the output reads like DESIGN.md §4."""

from __future__ import annotations

import random
import tomllib
from pathlib import Path

import pytest

from tests.declare.helpers import random_spec
from wopdsl.declare import load_spec, loads_spec, to_toml
from wopdsl.model.spec import (
    CouncilSettings,
    CouncilSpec,
    MemberSpec,
    RoomSpec,
    ScriptPost,
    ScriptStep,
)

REPO = Path(__file__).resolve().parents[2]

TRICKY_TEXT = [
    "multi\nline\nbrief",
    "\nstarts with a newline",
    'ends with a quote"',
    'three quotes """ inside\nand a newline',
    "windows\r\nline ends",
    "lone \r carriage return",
    "tab\tand back\\slash \\n not an escape",
    "unicode: café, 日本語, emoji 🎉, rtl עברית",
    "control \x01 \x7f chars",
    "{{ triggers[0].text }} {% if turn > 1 %}again{% endif %}",
    "",
    "ends with newline\n",
    "''' literal fences '''",
]


def council(**extra: object) -> CouncilSpec:
    return CouncilSpec(
        council=CouncilSettings(id="c", task="t"),
        members=[MemberSpec(id="solo", role="r", **extra)],  # type: ignore[arg-type]
    )


def roundtrip(spec: CouncilSpec) -> CouncilSpec:
    text = to_toml(spec)
    loaded = loads_spec(text)
    assert loaded == spec, text
    assert loaded.digest() == spec.digest()
    assert to_toml(loaded) == text
    return loaded


def test_example_file_roundtrips_and_reads_like_the_design() -> None:
    spec = load_spec(REPO / "councils" / "release-team.toml")
    text = to_toml(spec)
    roundtrip(spec)
    assert text.startswith('[council]\nid = "release-team"\ntask = "Prepare a release note."\n')
    assert "version" not in text and "global_concurrency" not in text  # defaults left out
    assert text.index("[council]") < text.index("[[rooms]]") < text.index("[[members]]")
    assert (
        '  { summary = "Review requested.", posts = [{ room = "review", text = "Please review: '
        '{{ task }}", mentions = ["reviewer"] }] },\n' in text
    )
    assert '  { summary = "Finished after review {{ triggers[0].id }}: {{ task }}" },\n' in text


def test_every_field_roundtrips() -> None:
    spec = CouncilSpec(
        council=CouncilSettings(
            id="full.council_1",
            version=7,
            task="Review the release.\nBe brief.",
            global_concurrency=3,
            max_turns_per_member=5,
            tail_messages=9,
            timeout_ms=60_000,
            turn_timeout_ms=5_000,
            max_input_bytes=10_000,
            max_output_bytes=2**53 - 1,
        ),
        rooms=[
            RoomSpec(
                id="all",
                members=["a", "b", "h"],
                title="Everyone — all hands",
                turn_schema={
                    "type": "object",
                    "required": ["text"],
                    "properties": {
                        "text": {"type": "string", "maxLength": 500, "pattern": "^[^\\n]*$"},
                        "mentions": {"type": "array", "items": {"type": "string"}},
                    },
                    "$comment": "keys with $ need quotes",
                    "additionalProperties": False,
                },
            ),
            RoomSpec(id="ab", members=["a", "b"]),
            RoomSpec(id="empty", members=[]),
        ],
        members=[
            MemberSpec(
                id="a",
                role="writer",
                brief="Write {{ task }}.\nTurn {{ turn }}.",
                engine="script",
                max_turns=2,
                turn_timeout_ms=100,
                max_input_bytes=1000,
                max_output_bytes=2000,
                script=[
                    ScriptStep(
                        summary="first",
                        data={
                            "n": 1,
                            "f": 1.5,
                            "big": 2**60,
                            "neg": -0.25,
                            "ok": True,
                            "list": [1, "two", [3.0], {"four": 4}],
                            "empty": {},
                            "none": [],
                            "odd key": {"a.b": "c", "": "empty key", "ü": "unicode key"},
                        },
                        posts=[
                            ScriptPost(room="all", text="hi @b\nsecond line", mentions=["b", "h"]),
                            ScriptPost(room="ab", text="quiet"),
                        ],
                    ),
                    ScriptStep(summary="second", data="just a string"),
                    ScriptStep(summary="third", data=[1, 2, 3]),
                    ScriptStep(summary="fourth", data=0),
                    ScriptStep(summary="fifth", data=False),
                ],
            ),
            MemberSpec(id="b", role="reviewer", initial_turn=False, handler="agents.mod:review"),
            MemberSpec(id="h", role="human in the loop", engine="human", initial_turn=False),
        ],
    )
    roundtrip(spec)


@pytest.mark.parametrize("text", TRICKY_TEXT)
def test_strings_roundtrip_everywhere(text: str) -> None:
    spec = CouncilSpec(
        council=CouncilSettings(id="c", task=text),
        rooms=[RoomSpec(id="r", members=["m"], title=text, turn_schema={text: text})],
        members=[
            MemberSpec(
                id="m",
                role=text,
                brief=text,
                engine="script",
                script=[
                    ScriptStep(
                        summary=text,
                        data={text: [text, {text: text}]},
                        posts=[ScriptPost(room="r", text=text)],
                    )
                ],
            )
        ],
    )
    roundtrip(spec)


def test_multi_line_strings_are_written_as_multi_line_strings() -> None:
    text = to_toml(council(brief="line one\nline two"))
    assert 'brief = """\nline one\nline two"""' in text


def test_strings_inside_inline_tables_stay_on_one_line() -> None:
    spec = council(engine="script", script=[ScriptStep(summary="a\nb")])
    assert '{ summary = "a\\nb" }' in to_toml(spec)


def test_turn_schema_is_written_as_sections() -> None:
    schema = {
        "type": "object",
        "properties": {"text": {"type": "string", "maxLength": 500}},
        "required": ["text"],
    }
    spec = CouncilSpec(
        council=CouncilSettings(id="c", task="t"),
        rooms=[RoomSpec(id="r", members=[], turn_schema=schema), RoomSpec(id="s", members=[])],
    )
    roundtrip(spec)
    text = to_toml(spec)
    assert (
        '[[rooms]]\nid = "r"\nmembers = []\n\n[rooms.turn_schema]\ntype = "object"\n'
        'required = ["text"]\n\n[rooms.turn_schema.properties.text]\ntype = "string"\n'
        'maxLength = 500\n\n[[rooms]]\nid = "s"\n' in text
    )


def test_defaults_and_none_are_left_out() -> None:
    text = to_toml(council())
    assert text == '[council]\nid = "c"\ntask = "t"\n\n[[members]]\nid = "solo"\nrole = "r"\n'
    assert "rooms" not in text


def test_non_default_values_equal_to_nothing_are_kept() -> None:
    spec = council(brief="", initial_turn=True, engine="human")
    assert loads_spec(to_toml(spec)) == spec
    assert 'engine = "human"' in to_toml(spec)


def test_the_output_is_plain_toml() -> None:
    data = tomllib.loads(to_toml(load_spec(REPO / "councils" / "release-team.toml")))
    assert list(data) == ["council", "rooms", "members"]
    assert data["members"][0]["script"][0]["posts"][0]["room"] == "review"


# -- randomised round trips (stdlib random, fixed seeds) -------------------------------


@pytest.mark.parametrize("seed", range(300))
def test_random_councils_roundtrip(seed: int) -> None:
    roundtrip(random_spec(random.Random(seed)))
