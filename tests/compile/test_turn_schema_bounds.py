"""turn_schema patterns run in linear time; references outside the schema fail validate."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import wopdsl
from tests.bounded import bounded_wop
from tests.cli.conftest import HUMAN_COUNCIL
from wopdsl import Council


def _with_schema(schema_toml: str) -> str:
    head, rest = HUMAN_COUNCIL.split('[[members]]', 1)
    return head.rstrip() + "\n\n" + schema_toml.strip() + "\n\n[[members]]" + rest


CATASTROPHIC = """
[rooms.turn_schema]
type = "object"
[rooms.turn_schema.properties.text]
type = "string"
pattern = "^(a+)+$"
"""


def test_catastrophic_pattern_cannot_burn_cpu_on_a_human_post(tmp_path: Path) -> None:
    (tmp_path / "c.toml").write_text(_with_schema(CATASTROPHIC), encoding="utf-8")
    # The script member's own post would break the pattern: give it a matching one.
    text = (tmp_path / "c.toml").read_text(encoding="utf-8")
    text = text.replace("Which name, @me?", "aaaa")
    (tmp_path / "c.toml").write_text(text, encoding="utf-8")
    assert bounded_wop("validate", "c.toml", cwd=tmp_path).returncode == 0
    assert bounded_wop("run", "c.toml", "--run-id", "h", cwd=tmp_path).returncode == 3
    started = time.monotonic()
    done = bounded_wop("reply", "h", "--room", "desk", "a" * 31 + "!", cwd=tmp_path,
                       timeout=30)
    elapsed = time.monotonic() - started
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error[validation_error]:")
    assert "does not match" in done.stderr
    assert elapsed < 10  # Python's re takes ~30 s of CPU on this post.
    ok = bounded_wop("reply", "h", "--room", "desk", "aaaa", cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr


@pytest.mark.parametrize(("ref", "message"), [
    ("https://example.com/post.schema.json", "points outside the schema"),
    ("other.json#/defs/x", "points outside the schema"),
    ("#/$defs/missing", "does not point at anything"),
    ("#nowhere", "no $anchor named"),
])
def test_a_ref_outside_the_schema_fails_validate_with_a_place(tmp_path: Path, ref: str,
                                                             message: str) -> None:
    schema = f'[rooms.turn_schema]\n"$ref" = "{ref}"\n'
    (tmp_path / "c.toml").write_text(_with_schema(schema), encoding="utf-8")
    done = bounded_wop("validate", "c.toml", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith("error[DECLARATION_INVALID]:")
    assert message in done.stderr
    assert 'c.toml:11:1: rooms (desk).turn_schema."$ref": ' in done.stderr


def test_local_refs_and_anchors_are_fine() -> None:
    council = Council("t", task="T")
    council.room("r", members=["m"], turn_schema={
        "$defs": {"short": {"type": "string", "maxLength": 5, "$anchor": "short"}},
        "properties": {"text": {"$ref": "#/$defs/short"}, "mentions": {"$ref": "#short"}},
    })
    council.add_member("m", role="r", engine="script", script=[{"summary": "s"}])
    council.compile()


@pytest.mark.parametrize(("pattern", "reason"), [
    ("(?=a)a", "invalid perl operator"),
    ("(a)\\1", "invalid escape sequence"),
    ("a{1001}", "invalid repetition size"),
])
def test_patterns_re2_cannot_run_are_declaration_errors(pattern: str, reason: str) -> None:
    council = Council("t", task="T")
    council.room("r", members=["m"],
                 turn_schema={"properties": {"text": {"pattern": pattern}}})
    council.add_member("m", role="r", engine="script", script=[{"summary": "s"}])
    with pytest.raises(wopdsl.DeclarationError) as caught:
        council.compile()
    (problem,) = caught.value.problems
    assert reason in problem.message
    assert problem.path == "rooms (r).turn_schema.properties.text.pattern"


async def test_member_posts_are_checked_with_re2_too() -> None:
    council = Council("t", task="T")
    council.room("r", members=["m"],
                 turn_schema={"properties": {"text": {"pattern": "^(a+)+$"}}})
    council.add_member("m", role="r", engine="script",
                       script=[{"summary": "s", "posts": [{"room": "r", "text": "a" * 40 + "!"}]}])
    started = time.monotonic()
    run = await council.arun(store="memory:")
    assert time.monotonic() - started < 5
    failed = [e for e in run.store.read(run.run_id) if e["type"] == "node.failed"]
    assert failed[0]["payload"]["error"]["code"] == "RESULT_INVALID"


@pytest.mark.parametrize(("schema", "where", "loop"), [
    ('[rooms.turn_schema]\n"$ref" = "#"\n', 'c.toml:11:1: rooms (desk).turn_schema."$ref"',
     "(# → #)"),
    ('[rooms.turn_schema]\n"$ref" = "#/$defs/a"\n'
     '[rooms.turn_schema."$defs".a]\nallOf = [{ "$ref" = "#/$defs/b" }]\n'
     '[rooms.turn_schema."$defs".b]\nnot = { "$ref" = "#/$defs/a" }\n',
     'rooms (desk).turn_schema."$defs".b.not."$ref"', "#/$defs/a"),
    ('[rooms.turn_schema]\n"$ref" = "#top"\n"$anchor" = "top"\n',
     'rooms (desk).turn_schema."$ref"', "(# → #)"),
])
def test_a_self_referential_turn_schema_fails_validate_with_a_place(
        tmp_path: Path, schema: str, where: str, loop: str) -> None:
    (tmp_path / "c.toml").write_text(_with_schema(schema), encoding="utf-8")
    done = bounded_wop("validate", "c.toml", cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith("error[DECLARATION_INVALID]:")
    assert where in done.stderr and loop in done.stderr
    assert "refers to itself without descending into the content" in done.stderr
    assert "RecursionError" not in done.stderr and "INTERNAL" not in done.stderr


async def test_recursion_through_the_content_is_fine_and_bounded_by_it() -> None:
    tree = {"type": "object", "properties": {"text": {"type": "string", "maxLength": 10},
                                             "mentions": {"type": "array"}},
            "additionalProperties": {"$ref": "#"}}
    council = Council("t", task="T")
    council.room("r", members=["m", "me"], turn_schema=tree)
    council.add_member("m", role="r", engine="script", initial_turn=False,
                       script=[{"summary": "s"}])
    council.add_member("me", role="user", engine="human")
    run = await council.arun(store="memory:")
    assert run.status == "waiting-input"
    with pytest.raises(wopdsl.ValidationError, match="turn_schema"):
        await run.reply("far too long for it", room="r", as_="me")
    await run.reply("fine", room="r", as_="me")
    assert run.messages[-1].text == "fine"
