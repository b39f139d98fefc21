"""Loading an eval file: every problem found before anything runs, each at file:line:col."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.evals.conftest import write
from wopdsl import DeclarationError
from wopdsl.evals import load_eval

GOOD = """\
[eval]
id = "board-vs-solo"
repeats = 2
cases = "cases.jsonl"

[[arms]]
id = "board"
council = "board.toml"

[[arms]]
id = "solo"
council = "solo.toml"

[[checks]]
id = "correct"
kind = "contains"
value = "{{ case.expected }}"

[[checks]]
id = "picked"
kind = "equals"
target = "decision:pick"
value = "x"

[gate]
correct = 0.8
"""

CASES = '{"id": "c1", "task": "2+2", "expected": "4"}\n\n{"id": "c2", "task": "1+3", ' \
        '"expected": "4", "level": 2}\n'


@pytest.fixture(autouse=True)
def _inside(councils: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(councils)  # messages name files as given: relative here


def _problems(path: Path) -> list[str]:
    with pytest.raises(DeclarationError) as caught:
        load_eval(path)
    assert str(caught.value).startswith("invalid eval file")
    return [p.render() for p in caught.value.problems]


def test_a_good_file_loads_with_paths_relative_to_its_folder(
        councils: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(councils, "evals/cases.jsonl", CASES)
    write(councils, "evals/e.toml", GOOD.replace('"board.toml"', '"../board.toml"')
          .replace('"solo.toml"', '"../solo.toml"').replace('target = "decision:pick"\n', ""))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    evaluation = load_eval(councils / "evals" / "e.toml")
    assert [c.id for c in evaluation.cases] == ["c1", "c2"]
    assert evaluation.cases[1].data["level"] == 2
    assert [a.id for a in evaluation.arms] == ["board", "solo"]
    assert evaluation.arms[0].tasks == {"c1": "2+2", "c2": "1+3"}
    assert evaluation.checks[0].values == {"c1": "4", "c2": "4"}
    assert evaluation.cassettes == councils / "evals" / "__cassettes__" / "board-vs-solo"


def test_unknown_keys_and_kind_mismatches_are_located(councils: Path) -> None:
    write(councils, "cases.jsonl", CASES)
    text = GOOD.replace('kind = "contains"\n', 'kind = "contains"\npath = "a.b"\n') \
        .replace("repeats = 2\n", "repeats = 2\nrepeat = 3\n")
    problems = _problems(write(councils, "e.toml", text).relative_to(councils))
    assert problems[0].startswith("e.toml:4:1: eval.repeat: unknown key 'repeat'")
    assert "did you mean 'repeats'?" in problems[0]


def test_cross_field_problems_are_all_reported_together(councils: Path) -> None:
    write(councils, "cases.jsonl", CASES)
    text = GOOD + """
[[checks]]
id = "correct"
kind = "judge"
path = "x"

[[checks]]
id = "where"
kind = "contains"
target = "elsewhere"
value = "x"
"""
    text = text.replace("correct = 0.8", "correct = 1.5\nnone = 0.5")
    problems = _problems(write(councils, "e.toml", text).relative_to(councils))
    joined = "\n".join(problems)
    assert "e.toml:26:1: gate.correct: threshold 1.5 is not a pass rate from 0 to 1" in joined
    assert "e.toml:27:1: gate.none: a gate on 'none', which is not a check" in joined
    assert "e.toml:30:1: checks[2].id: duplicate id 'correct'" in joined
    assert "checks[2]: a judge check needs 'model'" in joined
    assert "checks[2]: a judge check needs 'rubric'" in joined
    assert "e.toml:32:1: checks[2].path: 'path' does not apply to a judge check" in joined
    assert "e.toml:37:1: checks[3].target: unknown target 'elsewhere'" in joined


def test_bad_case_lines_name_the_cases_file_line_and_column(councils: Path) -> None:
    write(councils, "cases.jsonl", '{"id": "c1", "task": "t"}\n{"id": "c2"}\n{"id": \n'
                                   '[1]\n{"id": "c1", "task": "again"}\n')
    problems = _problems(write(councils, "e.toml", GOOD).relative_to(councils))
    assert problems[0].startswith("cases.jsonl:2:1: task: missing required key")
    assert problems[1].startswith("cases.jsonl:3:8: not JSON: Expecting value")
    assert problems[2].startswith("cases.jsonl:4:1: a case must be a JSON object, got list")
    assert problems[3].startswith("cases.jsonl:5:1: duplicate case id 'c1' (line 1 has it")


def test_no_cases_and_both_kinds_of_cases_are_refused(councils: Path) -> None:
    problems = _problems(write(councils, "e.toml", GOOD.replace('cases = "cases.jsonl"\n', ""))
                         .relative_to(councils))
    assert problems == ["e.toml:1:1: eval: no cases\n    hint: add cases = \"cases.jsonl\" to "
                        "[eval], or [[cases]] tables with id and task"]
    write(councils, "cases.jsonl", CASES)
    both = GOOD + '\n[[cases]]\nid = "x"\ntask = "y"\n'
    assert "e.toml:4:1: eval.cases: cases come from both" in _problems(
        write(councils, "e.toml", both).relative_to(councils))[0]
    missing = GOOD.replace("cases.jsonl", "nowhere.jsonl")
    assert "e.toml:4:1: eval.cases: cases file not found" in _problems(
        write(councils, "e.toml", missing).relative_to(councils))[0]


def test_council_problems_keep_their_own_place(councils: Path) -> None:
    write(councils, "cases.jsonl", CASES)
    write(councils, "bad.toml", "[council]\nid = \"bad\"\ntask = \"t\"\nturns = 2\n")
    text = GOOD.replace('"board.toml"', '"bad.toml"').replace('"solo.toml"', '"gone.toml"')
    problems = _problems(write(councils, "e.toml", text).relative_to(councils))
    joined = "\n".join(problems)
    assert "bad.toml:4:1: council.turns: unknown key 'turns'" in joined
    assert "e.toml:12:1: arms[1].council: council file not found: gone.toml" in joined


def test_profile_overrides_targets_templates_and_functions_are_checked(
        councils: Path) -> None:
    write(councils, "cases.jsonl", CASES.replace(', "expected": "4"}\n\n', "}\n\n"))
    write(councils, "checks.py", "def ok(target, case, run):\n    return True\n")
    text = GOOD.replace('council = "solo.toml"\n', 'council = "solo.toml"\n'
                        'models = { default = "small" }\n') + """
[[checks]]
id = "fn"
kind = "python"
function = "checks:missing"

[models.small]
model = "tiny"
"""
    problems = _problems(write(councils, "e.toml", text).relative_to(councils))
    joined = "\n".join(problems)
    assert "e.toml:13:12: arms[1].models.default: council solo has no model profile " \
           "'default' to replace" in joined
    assert "cases.jsonl:1:1: check 'correct': its value template fails for case 'c1': " \
           "'dict object' has no attribute 'expected'" in joined
    assert "e.toml:23:1: checks[1].target: arm 'solo' (solo.toml) has no decision 'pick'" \
        in joined
    assert "e.toml:32:1: checks[2].function: cannot import checks:missing: AttributeError: " \
           "module 'checks' has no attribute 'missing'" in joined


def test_a_syntax_error_is_located(councils: Path) -> None:
    problems = _problems(write(councils, "e.toml", '[eval]\nid = "x\n').relative_to(councils))
    assert problems[0].startswith("e.toml:2:8: TOML syntax error: illegal character")


def test_paths_in_messages_are_as_given(councils: Path) -> None:
    absolute = write(councils, "sub/e.toml", "[eval]\nid = 3\n")
    assert _problems(absolute)[0].startswith(f"{absolute}:2:1: eval.id: must be a string")
    assert _problems(Path("sub/e.toml"))[0].startswith("sub/e.toml:2:1: eval.id: must be")
