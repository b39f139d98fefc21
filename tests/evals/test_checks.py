"""Each kind of check on each target, on real runs of script councils."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tests.evals.conftest import write
from wopdsl import open_store
from wopdsl.evals import load_eval
from wopdsl.evals.checks import CheckResult
from wopdsl.evals.runner import EvalRunner

FAILING = """\
[council]
id = "broken"
task = "placeholder"

[[rooms]]
id = "r"
members = ["echo", "c"]

[[decisions]]
id = "pick"
room = "r"
question = "Which?"
options = ["x", "y"]
voters = ["c"]

[[members]]
id = "echo"
role = "echo"
engine = "script"
script = [{ summary = "once", posts = [{ room = "r", text = "again @echo", mentions = ["echo"] }] }]

[[members]]
id = "c"
role = "c"
engine = "script"
initial_turn = false
script = [{ summary = "y" }]
"""

CHECKS = """\
[eval]
id = "kinds"

[[cases]]
id = "c1"
task = "2+2"
expected = "4"
pattern = "= [0-9]$"

[[arms]]
id = "board"
council = "board.toml"

[[arms]]
id = "broken"
council = "broken.toml"

[[checks]]
id = "answer-contains"
kind = "contains"
value = "{{ case.expected }} (X)"
ignore_case = true

[[checks]]
id = "answer-equals"
kind = "equals"
value = "2+2 = 4 (x)"

[[checks]]
id = "decision"
kind = "equals"
target = "decision:pick"
value = "x"

[[checks]]
id = "member"
kind = "regex"
target = "member:c"
value = "^y$"

[[checks]]
id = "transcript"
kind = "contains"
target = "transcript"
value = "c team/c/"

[[checks]]
id = "result-json"
kind = "json"
target = "result"
path = "decisions[0].tally.x"
value = 2

[[checks]]
id = "result-json-text"
kind = "json"
target = "result"
path = "agents.3.result.summary"
value = "{{ case.task }} = 4 (x)"

[[checks]]
id = "json-missing"
kind = "json"
target = "result"
path = "agents[9]"

[[checks]]
id = "python"
kind = "python"
function = "judge_fn:has_four"

[[checks]]
id = "python-score"
kind = "python"
function = "judge_fn:length"
scale = [0, 20]

[[checks]]
id = "python-raises"
kind = "python"
function = "judge_fn:boom"

[[checks]]
id = "python-off-scale"
kind = "python"
function = "judge_fn:too_long"
scale = [0, 5]
"""

FUNCTIONS = """\
def has_four(target, case, run):
    return {"passed": "4" in target and run.status == "completed", "explanation": case["id"]}


def length(target, case, run):
    return len(target)


def too_long(target, case, run):
    return len(target)


def boom(target, case, run):
    raise RuntimeError("no")
"""


def _checks(councils: Path) -> dict[str, dict[str, CheckResult]]:
    write(councils, "broken.toml", FAILING)
    write(councils, "judge_fn.py", FUNCTIONS)
    evaluation = load_eval(write(councils, "e.toml", CHECKS))
    store = open_store("memory:")
    outcome = asyncio.run(EvalRunner(evaluation, store).arun())
    return {r.arm: r.checks for r in outcome.records}


def _json(results: dict[str, CheckResult]) -> dict[str, Any]:
    return {k: v.to_json() for k, v in results.items()}


def test_every_kind_on_every_target(councils: Path) -> None:
    board = _json(_checks(councils)["board"])
    assert board == {
        "answer-contains": {"passed": True},
        "answer-equals": {"passed": True},
        "decision": {"passed": True},
        "member": {"passed": True},
        "transcript": {"passed": True},
        "result-json": {"passed": True},
        "result-json-text": {"passed": True},
        "json-missing": {"passed": False, "explanation": "nothing at agents[9]"},
        "python": {"passed": True, "explanation": "c1"},
        "python-score": {"score": 11.0},
        "python-raises": {"error": "judge_fn:boom raised RuntimeError: no"},
        "python-off-scale": {"error": "judge_fn:too_long returned 11, not a score on [0, 5]"},
    }


def test_a_failed_run_fails_every_check_and_scores_nothing(councils: Path) -> None:
    broken = _json(_checks(councils)["broken"])
    why = "the run failed (TEAM_NODE_FAILED: member echo failed: SCRIPT_EXHAUSTED"
    for check in ("answer-contains", "decision", "result-json", "python"):
        assert broken[check]["passed"] is False
        assert broken[check]["explanation"].startswith(why)
    assert broken["python-score"]["error"].startswith(why)
    assert broken["python-score"]["error"].endswith(": nothing to score")
    assert "passed" not in broken["python-score"] and "score" not in broken["python-score"]
