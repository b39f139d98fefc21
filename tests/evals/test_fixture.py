"""The ``wop_eval`` pytest fixture, in an inner pytest session run as a subprocess."""

from __future__ import annotations

import pytest

from tests.evals.conftest import BOARD, SOLO
from tests.testing.helpers import INI, UNRELATED_PLUGINS_OFF

pytest_plugins = ["pytester"]

EVAL = """\
[eval]
id = "fixture"

[[cases]]
id = "c1"
task = "2+2"
expected = "4"

[[arms]]
id = "board"
council = "../councils/board.toml"

[[arms]]
id = "solo"
council = "../councils/solo.toml"

[[checks]]
id = "correct"
kind = "contains"
value = "{{ case.expected }}"

[gate]
correct = THRESHOLD
"""

TESTS = '''
def test_board_vs_solo(wop_eval):
    report = wop_eval("evals/fixture.toml")
    assert report.passed
    assert report.figures("board", "correct")["rate"] == 1.0
    assert {run["how"] for run in report["runs"]} == {"ran"}


def test_inside_a_running_loop(wop_eval):
    import asyncio

    async def main():
        return wop_eval("evals/fixture.toml", store="memory:")

    assert asyncio.run(main())["finished"] == 2
'''

ONE_TEST = "\n".join(TESTS.splitlines()[:6]) + "\n"


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makefile(".ini", pytest=INI.replace("asyncio_mode = auto\n", "")
                      .replace("asyncio_default_fixture_loop_scope = function\n", ""))
    (pytester.mkdir("councils") / "board.toml").write_text(BOARD, encoding="utf-8")
    (pytester.path / "councils" / "solo.toml").write_text(SOLO.replace("= 4", "= 5"))
    pytester.mkdir("evals")
    return pytester


def _eval(project: pytest.Pytester, threshold: str) -> None:
    (project.path / "evals" / "fixture.toml").write_text(EVAL.replace("THRESHOLD", threshold))


def test_a_passing_eval_passes(project: pytest.Pytester) -> None:
    _eval(project, "{ board = 1.0 }")
    project.makepyfile(test_eval=TESTS)
    result = project.runpytest_subprocess(*UNRELATED_PLUGINS_OFF, "-p", "no:asyncio")
    result.assert_outcomes(passed=2)


def test_a_failing_gate_fails_with_the_reports_table(project: pytest.Pytester) -> None:
    _eval(project, "0.75")
    project.makepyfile(test_eval=ONE_TEST)
    result = project.runpytest_subprocess(*UNRELATED_PLUGINS_OFF, "-p", "no:asyncio")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*eval fixture failed:",
        "eval fixture: 2 arm(s) x 1 case(s) x 1 repeat(s), 2 runs in *",
        "ARM    CHECK    PASS RATE / MEAN  95 % CI        N  ERRORS",
        "board  correct  100.0 % (1/1)     [20.7, 100.0]  1       0",
        "solo   correct  0.0 % (0/1)       [0.0, 79.3]    1       0",
        "*correct >= 0.75 on solo: 0 FAILED",
    ])
    assert "Traceback" not in result.stdout.str()


def test_a_bad_eval_file_fails_with_its_location(project: pytest.Pytester) -> None:
    _eval(project, '"high"')
    project.makepyfile(test_eval=ONE_TEST)
    result = project.runpytest_subprocess(*UNRELATED_PLUGINS_OFF, "-p", "no:asyncio")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*invalid eval file:", "*evals/fixture.toml:23:1: gate.correct: "
                                 "a threshold must be a number, got *"])


def test_a_damaged_cassette_fails_the_test_clearly(project: pytest.Pytester) -> None:
    _eval(project, "{ board = 1.0 }")
    damaged = project.path / "evals" / "__cassettes__" / "fixture" / "board" / "c1.1.yaml"
    damaged.parent.mkdir(parents=True)
    damaged.write_text("format: [not, a, cassette\n", encoding="utf-8")
    project.makepyfile(test_eval=ONE_TEST)
    result = project.runpytest_subprocess(*UNRELATED_PLUGINS_OFF, "-p", "no:asyncio")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*board/c1.1.yaml: not a readable cassette*",
                                 "*hint: record it again, or restore it from version control"])
    assert "Traceback" not in result.stdout.str()
