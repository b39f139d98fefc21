"""Generated councils: any file, any template text gives a DeclarationError with a place.

Property-based (hypothesis) over mutated council files and template token soups, in
bounded time (a deadline per example) and memory (an address-space limit while it runs).
CI runs a fixed, bounded number of examples (derandomized, so a red build reproduces).
"""

from __future__ import annotations

import json
import os
import re
import resource
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.bounded import bounded_wop
from wopdsl import DeclarationError
from wopdsl.compile import compile as compile_graph
from wopdsl.declare import loads_spec

REPO = Path(__file__).resolve().parents[2]
SEEDS = [p.read_text(encoding="utf-8") for p in sorted((REPO / "councils").glob("*.toml"))]
CI = os.environ.get("CI") == "true"
PROFILE = settings(
    max_examples=100, deadline=10_000, derandomize=CI,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

HOSTILE_SNIPPETS = [
    "[" * 3000, "]" * 3000, "{a=" * 2000, "1" * 4301, "9" * 5000, "1e999", "-inf", "nan",
    '"{{ ' + "(" * 3000 + '"', '"' + "{% if x %}" * 200 + '"', '"{{ 3 ** 100000000 }}"',
    '"{{ (\'a\' * 2000000000)|length }}"', '"a{99999999999}"', '"^(a+)+$"', '"(?=x)"',
    '"$ref"', '"https://example.com/x.json"', "\x00", "\ufeff", "\\u0000", '"""', "'''",
    "[[members]]", "[[rooms]]", "[council]", "turn_schema = ", "pattern = ", "script = [",
    "{ summary = ", "posts = [", "mentions = [", "engine = \"script\"", "max_turns = 0",
    "2" * 20, "0x7fffffffffffffff", "1979-05-27T07:32:00Z", "true", "{}", "[]", "\n", "=",
]
TEMPLATE_TOKENS = [
    "{{", "}}", "{%", "%}", "{#", "#}", "(", ")", "[", "]", " ", "if ", "else", "endif",
    "for x in ", "endfor", "range(", "10", "100000", "**", "*", "+", "~", "%", "'a'", "x",
    "task", "triggers[0]", ".text", "|join", "|center(", "|length", "macro f()",
    "endmacro", "f()", "set ns = namespace(a=1)", "ns.a", "loop.index", "'{:>9}'.format(",
    "raw", "endraw", ",", ":", "=", "-", "not ", "and ", "\n", "\x00", "\u202e", "9" * 50,
]


def _mutate(text: str, edits: list[tuple[int, int, str]]) -> str:
    for position, length, insert in edits:
        at = position % (len(text) + 1)
        text = text[:at] + insert + text[at + length:]
    return text


def _at_values(text: str, edits: list[tuple[int, str]]) -> str:
    # Insert right where a value starts (after "key = "): where parsers recurse and convert.
    starts = [m.end() for m in re.finditer(r"=[ \t]*", text)]
    for pick, insert in edits:
        at = starts[pick % len(starts)]
        text = text[:at] + insert + text[at:]
        starts = [s + len(insert) if s >= at else s for s in starts]
    return text


VALUES = [
    "[" * 3000 + "]" * 3000, "{a=" * 1500 + "1" + "}" * 1500, "1" * 4301, "9" * 5000,
    "[" * 40 + "1" + "]" * 40, '"{{ ' + "(" * 3000 + "1" + ")" * 3000 + ' }}", ',
    '"' + "{% if x %}" * 200 + "{% endif %}" * 200 + '", ', '"{{ 3 ** 100000000 }}", ',
    '{ pattern = "a{99999999999}" }, ', '{ "$ref" = "https://example.com/x.json" }, ',
    '{ pattern = "^(a+)+$" }, ', '{ not = ' * 60 + "{}" + " }" * 60 + ", ",
]
edit = st.tuples(st.integers(0, 10_000), st.integers(0, 40),
                 st.one_of(st.sampled_from(HOSTILE_SNIPPETS), st.text(max_size=12)))
council_files = st.one_of(
    st.builds(_mutate, st.sampled_from(SEEDS), st.lists(edit, min_size=1, max_size=6)),
    st.builds(_at_values, st.sampled_from(SEEDS), st.lists(
        st.tuples(st.integers(0, 500), st.one_of(st.sampled_from(VALUES),
                                                 st.sampled_from(HOSTILE_SNIPPETS))),
        min_size=1, max_size=3)),
)
templates = st.lists(st.sampled_from(TEMPLATE_TOKENS), max_size=40).map("".join)
deep = st.builds(lambda open_, close, n: open_ * n + "1" + close * n,
                 st.sampled_from(["(", "[", "{{ (", "{% if x %}"]),
                 st.sampled_from([")", "]", ") }}", "{% endif %}"]), st.integers(1, 3000))


@pytest.fixture(scope="module", autouse=True)
def _memory_bound() -> Iterator[None]:
    """Cap the address space while the properties run (restored afterwards)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as statm:
        used = int(statm.read().split()[0]) * resource.getpagesize()
    cap = used + (2 << 30)
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _check(text: str) -> None:
    try:
        spec = loads_spec(text, "gen.toml")
        compile_graph(spec, source="gen.toml")
    except DeclarationError as exc:
        assert exc.problems
        for problem in exc.problems:
            assert problem.message
            assert problem.source == "gen.toml"
            assert problem.path or problem.line is not None, problem


@PROFILE
@given(council_files)
def test_mutated_council_files_give_declaration_errors_with_a_place(text: str) -> None:
    _check(text)


def _script_council(template: str) -> str:
    return ('[council]\nid = "g"\ntask = "T"\n[[rooms]]\nid = "r"\nmembers = ["m"]\n'
            '[[members]]\nid = "m"\nrole = "r"\nengine = "script"\n'
            f"brief = {json.dumps(template)}\n"
            f'script = [{{ summary = {json.dumps(template)}, posts = [{{ room = "r", '
            f"text = {json.dumps(template)} }}] }}]\n")


@PROFILE
@given(st.one_of(templates, deep))
def test_template_texts_give_declaration_errors_with_a_place(template: str) -> None:
    _check(_script_council(template))


@PROFILE
@given(st.one_of(templates, deep).map(_script_council))
async def test_generated_templates_render_or_fail_their_turn(text: str) -> None:
    from wopdsl import Council

    try:
        council = Council.from_spec(loads_spec(text, "gen.toml"))
        council.compile()
    except DeclarationError:
        return
    run = await council.arun(store="memory:")
    assert run.status in {"completed", "failed"}


KNOWN = {
    "deep parentheses": _script_council("{{ " + "(" * 3000 + "1" + ")" * 3000 + " }}"),
    "deep if": _script_council("{% if x %}" * 200 + "{% endif %}" * 200),
    "4301-digit integer": '[council]\nid = "g"\ntask = "T"\nversion = ' + "1" * 4301 + "\n",
    "deep arrays": '[council]\nid = "g"\ntask = "T"\nx = ' + "[" * 3000 + "]" * 3000 + "\n",
    "regex quantifier": '[council]\nid = "g"\ntask = "T"\n[[rooms]]\nid = "r"\nmembers = '
                        '["m"]\nturn_schema = { properties = { text = { pattern = '
                        '"a{99999999999}" } } }\n[[members]]\nid = "m"\nrole = "r"\n'
                        'engine = "script"\nscript = [{ summary = "s" }]\n',
}


@pytest.mark.parametrize("text", list(KNOWN.values()), ids=list(KNOWN))
def test_known_raw_exceptions_are_declaration_invalid_exit_2(tmp_path: Path, text: str) -> None:
    (tmp_path / "c.toml").write_text(text, encoding="utf-8")
    done = bounded_wop("validate", "c.toml", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error[DECLARATION_INVALID]:")
    assert "c.toml:" in done.stderr
    assert "Traceback" not in done.stderr and "INTERNAL" not in done.stderr


@pytest.mark.slow
@settings(max_examples=8, deadline=None, derandomize=True)
@given(council_files)
def test_generated_files_through_wop_validate_exit_0_or_2(text: str) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        Path(folder, "c.toml").write_text(text, encoding="utf-8", errors="surrogatepass")
        done = subprocess.run([sys.executable, "-m", "wopdsl", "validate", "c.toml"],
                              cwd=folder, capture_output=True, text=True, timeout=60,
                              check=False)
    assert done.returncode in {0, 2}, done.stderr
    assert "Traceback" not in done.stderr
