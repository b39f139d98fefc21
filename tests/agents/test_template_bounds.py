"""Templates compile without evaluating user arithmetic and render within bounds."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

import wopdsl
from tests.bounded import bounded_wop
from wopdsl import Council

ARITHMETIC = [
    "{{ (3 ** 100000000) > 1 }}",
    "{{ ('a' * 2000000000)|length }}",
    "{{ (10 ** (10 ** 8))|string|length }}",
    "{{ ([0] * 10 ** 9)|length }}",
]


def _script_council(summary: str, *, extra: str = "") -> str:
    return f"""\
[council]
id = "t"
task = "T"
{extra}
[[members]]
id = "m"
role = "r"
engine = "script"
script = [{{ summary = {json.dumps(summary)} }}]
"""


@pytest.mark.parametrize("template", ARITHMETIC)
def test_validate_never_evaluates_template_arithmetic(tmp_path: Path, template: str) -> None:
    (tmp_path / "c.toml").write_text(_script_council(template), encoding="utf-8")
    started = time.monotonic()
    done = bounded_wop("validate", "c.toml", cwd=tmp_path, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ok: council t")
    assert time.monotonic() - started < 30


@pytest.mark.parametrize("template", ARITHMETIC)
def test_run_fails_the_turn_with_template_limit(tmp_path: Path, template: str) -> None:
    (tmp_path / "c.toml").write_text(_script_council(template), encoding="utf-8")
    done = bounded_wop("run", "c.toml", "--run-id", "r1", "--json", cwd=tmp_path, timeout=60)
    assert done.returncode == 1, done.stderr
    out = json.loads(done.stdout)
    assert out["status"] == "failed"
    assert out["error"]["code"] == "TEAM_NODE_FAILED"
    events = wopdsl.open_store(tmp_path / ".wop" / "runs.db").read("r1")
    failed = [e for e in events if e["type"] == "node.failed"]
    assert failed[0]["payload"]["error"]["code"] == "TEMPLATE_LIMIT"


HOSTILE = {
    "nested loops": "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}"
                    "{% endfor %}",
    "doubling concat": "{% set ns = namespace(s='ab') %}{% for i in range(40) %}"
                       "{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s|length }}",
    "doubling plus": "{% set ns = namespace(s=['a']) %}{% for i in range(40) %}"
                     "{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s|length }}",
    "center": "{{ 'a'|center(1000000000) }}",
    "indent": "{{ ('a\n' * 1000)|indent(1000000) }}",
    "str.format width": "{{ '{:>1000000000}'.format(1) }}",
    "printf width": "{{ '%1000000000d' % 1 }}",
    "printf star": "{{ '%*d' % (1000000000, 1) }}",
    "format filter": "{{ '%1000000000d'|format(1) }}",
    "join of a repeated list": "{{ (['a' * 100000] * 100000)|join }}",
    "recursive macro": "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}",
    "output": "{% for i in range(100000) %}{{ 'x' * 100 }}{% endfor %}",
    "str.ljust": "{{ 'a'.ljust(10 ** 9) }}",
    "replace filter": "{{ ('x' * 1000)|replace('x', 'y' * 100000) }}",
    "str.replace": "{{ ('x' * 1000).replace('x', 'y' * 100000) }}",
    "wordwrap": "{{ ('a ' * 5000)|wordwrap(1, wrapstring='b' * 1000) }}",
}


@pytest.mark.parametrize("template", list(HOSTILE.values()), ids=list(HOSTILE))
async def test_hostile_template_fails_its_turn_with_template_limit(template: str) -> None:
    council = Council("t", task="T")
    council.add_member("m", role="r", engine="script", script=[{"summary": template}])
    started = time.monotonic()
    run = await council.arun(store="memory:")
    assert time.monotonic() - started < 10
    assert run.status == "failed"
    failed = [e for e in run.store.read(run.run_id) if e["type"] == "node.failed"]
    error = failed[0]["payload"]["error"]
    assert error["code"] == "TEMPLATE_LIMIT", error


async def test_script_templates_honour_turn_timeout_ms() -> None:
    council = Council("t", task="T", turn_timeout_ms=200)
    council.add_member("m", role="r", engine="script",
                       script=[{"summary": HOSTILE["nested loops"]}])
    started = time.monotonic()
    run = await council.arun(store="memory:")
    elapsed = time.monotonic() - started
    failed = [e for e in run.store.read(run.run_id) if e["type"] == "node.failed"]
    assert failed[0]["payload"]["error"]["code"] == "TIMEOUT"
    assert "turn_timeout_ms" in failed[0]["payload"]["error"]["message"]
    assert elapsed < 0.9  # well before the 1 s CPU bound would have stopped it


async def test_template_output_is_bounded_by_the_members_max_output_bytes() -> None:
    council = Council("t", task="T")
    council.add_member("m", role="r", engine="script", max_output_bytes=1000,
                       script=[{"summary": "{{ 'x' * 999 }}"}, {"summary": "{{ 'x' * 1001 }}"}],
                       max_turns=2)
    council.room("r", members=["m"])
    run = await council.arun(store="memory:")
    assert run.status == "failed"
    failed = [e for e in run.store.read(run.run_id) if e["type"] == "node.failed"]
    assert failed[0]["payload"]["error"]["code"] in {"TEMPLATE_LIMIT", "RESULT_INVALID"}


async def test_ordinary_templates_still_render() -> None:
    council = Council("t", task="T")
    council.room("r", members=["m"])
    council.add_member("m", role="r", engine="script", script=[{
        "summary": "{% for i in range(3) %}{{ i * 2 }}{{ '-' ~ task }}{% endfor %} "
                   "{{ '{:>5}'.format('x') }} {{ '%03d' % 7 }} {{ 2 ** 10 }} "
                   "{{ ['a', 'b']|join(',') }} {{ 'ab'|center(6) }}|",
        "posts": [{"room": "r", "text": "{{ (task ~ '!') * 2 }}"}]}])
    run = await council.arun(store="memory:")
    assert run.status == "completed", run.error
    assert run.result["agents"][0]["result"]["summary"] == \
        "0-T2-T4-T     x 007 1024 a,b   ab  |"
    assert "T!T!" in run.transcript


@pytest.mark.parametrize("template", [
    "{{ " + "(" * 2000 + "1" + ")" * 2000 + " }}",
    "{% if x %}" * 150 + "{% endif %}" * 150,
    "{{ 'x' }}" * 40000,
])
def test_pathological_template_is_a_declaration_error(template: str) -> None:
    council = Council("t", task="T")
    council.add_member("m", role="r", engine="script", script=[{"summary": template}])
    with pytest.raises(wopdsl.DeclarationError) as caught:
        council.compile()
    (problem,) = caught.value.problems
    assert problem.path == "members[0].script[0].summary"
    assert "template" in problem.message


@pytest.mark.parametrize("text", ["x" * 262_145, "{{ task }}" + "x" * 262_135],
                         ids=["plain", "template"])
def test_a_text_over_the_template_bound_fails_validate_plain_or_not(tmp_path: Path,
                                                                    text: str) -> None:
    # The Limits table: a template's text is at most 262,144 characters; plain text too.
    (tmp_path / "c.toml").write_text(_script_council(text), encoding="utf-8")
    done = bounded_wop("validate", "c.toml", cwd=tmp_path, timeout=60)
    assert done.returncode == 2
    assert "members[0].script[0].summary" in done.stderr
    assert "is 262145 characters long; the limit is 262144" in done.stderr
    (tmp_path / "c.toml").write_text(_script_council(text[:-1]), encoding="utf-8")
    done = bounded_wop("validate", "c.toml", cwd=tmp_path, timeout=60)
    assert done.returncode == 0, done.stderr
