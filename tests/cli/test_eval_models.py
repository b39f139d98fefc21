"""`wop eval` over llm councils against the scripted OpenAI-wire server, in real subprocesses.

Two arms run one council file; the second replaces its model profile. The server answers
each model in a known way, so every figure of the report is known in advance: pass rates,
Wilson intervals, the McNemar p-value, mean scores and the paired bootstrap's p-value.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("openai", reason="the llm extra (wopdsl[llm]) is not installed")

from tests.evals.conftest import write
from wopdsl import attach, open_store
from wopdsl.testing.model_server import Answer, CapturedRequest, ScriptedModelServer

SECRET = "sk-EVAL-SENTINEL-4d1c9b7e2a"

SOLVER = """\
[council]
id = "solver"
task = "placeholder"

[[members]]
id = "solver"
role = "solver"
engine = "llm"
model = "default"

[models.default]
model = "strong"
api_key_env = "WOPDSL_TEST_MODEL_KEY"
retry_backoff_ms = 1
price_in_per_mtok = 100
price_out_per_mtok = 200
"""

EVAL = """\
[eval]
id = "models"
cases = "cases.jsonl"
jobs = 4

[models.weak]
model = "weak"
api_key_env = "WOPDSL_TEST_MODEL_KEY"
retry_backoff_ms = 1
price_in_per_mtok = 100
price_out_per_mtok = 200

[[arms]]
id = "strong"
council = "solver.toml"

[[arms]]
id = "weak"
council = "solver.toml"
models = { default = "weak" }

[[checks]]
id = "correct"
kind = "equals"
value = "{{ case.expected }}"

[[checks]]
id = "close"
kind = "python"
function = "closeness:score"
scale = [0, 10]

[gate]
correct = { strong = 0.9, weak = 0.5 }
"""

CLOSENESS = """\
def score(target, case, run):
    return max(0, 10 - abs(int(target) - int(case["expected"])))
"""

_QUESTION = re.compile(r"What is (\d+)\+(\d+)\?")


def _answers(strong_wrong: frozenset[int] = frozenset({9})) -> Any:
    """strong: right but on ``strong_wrong`` (off by 1); weak: right on 0-2, else off by 3."""

    def answer(request: CapturedRequest) -> Answer:
        body = request.body if isinstance(request.body, dict) else {}
        text = json.dumps(body.get("messages", []))
        found = _QUESTION.search(text)
        assert found is not None, text
        i = int(found.group(1))
        right = 2 * i
        if body.get("model") == "weak":
            value = right if i < 3 else right + 3
        else:
            value = right + 1 if i in strong_wrong else right
        return Answer({"summary": str(value)}, usage=(10, 5))

    return answer


@pytest.fixture
def server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as model_server:
        model_server.default = _answers()
        yield model_server


def _wop(cwd: Path, server: ScriptedModelServer | str, *args: str,
         env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``wop ARGS`` in ``cwd``, talking to ``server`` (or a URL where one was), with none of
    this machine's OTEL_* settings."""
    url = server if isinstance(server, str) else server.url
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "WOP_"))},
           "OPENAI_BASE_URL": url, "WOPDSL_TEST_MODEL_KEY": SECRET, **(env or {})}
    return subprocess.run([sys.executable, "-m", "wopdsl", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, encoding="utf-8", timeout=300,
                          check=False)


def solver_folder(folder: Path, evaluation: str) -> Path:
    """``folder`` with the solver council, the closeness check, ten cases ("What is i+i?")
    and ``evaluation`` as ``e.toml``."""
    write(folder, "solver.toml", SOLVER)
    write(folder, "closeness.py", CLOSENESS)
    write(folder, "cases.jsonl", "".join(
        json.dumps({"id": f"q{i}", "task": f"What is {i}+{i}?", "expected": str(2 * i)}) + "\n"
        for i in range(10)))
    write(folder, "e.toml", evaluation)
    return folder


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return solver_folder(tmp_path, EVAL)


def test_known_answers_give_known_figures(folder: Path, server: ScriptedModelServer) -> None:
    done = _wop(folder, server, "eval", "e.toml", "--json", "report.json", "--quiet")
    assert done.returncode == 1, done.stderr  # the weak arm misses its gate
    out = done.stdout
    rows = [" ".join(line.split()) for line in out.splitlines()]
    assert "strong correct 90.0 % (9/10) [59.6, 98.2] 10 0" in rows
    assert "weak correct 30.0 % (3/10) [10.8, 60.3] 10 0" in rows
    assert any(r.startswith("strong close 9.90 [") for r in rows)
    assert any(r.startswith("weak close 7.90 [") for r in rows)
    assert "strong vs weak correct McNemar exact 10 +60.0 pt A only 6, B only 0 0.03125" in rows
    assert any(re.fullmatch(r"strong vs weak close paired bootstrap 10 \+2\.00 "
                            r"\[\+\d\.\d\d, \+\d\.\d\d\] 0\.0005", r) for r in rows), out
    assert "  correct >= 0.5 on weak: 0.3 FAILED" in out
    assert done.stderr == "error[EVAL_GATE_FAILED]: 1 gate(s) failed: correct on weak: " \
                          "0.3 < 0.5\n"
    assert len(server.requests) == 20 and {r.body["model"] for r in server.requests} == {
        "strong", "weak"}
    report = json.loads((folder / "report.json").read_text())
    strong, weak = report["arms"]
    assert strong["checks"]["correct"] == {
        "kind": "pass", "n": 10, "passed": 9, "rate": 0.9, "low": 0.59585, "high": 0.982124,
        "errors": 0}
    assert (strong["checks"]["close"]["mean"], weak["checks"]["close"]["mean"]) == (9.9, 7.9)
    assert strong["tokens"] == {"total": 150, "perRun": 15.0}
    assert strong["costUsd"] == {"total": 0.02, "perRun": 0.002}
    assert strong["runs"] == strong["completed"] == 10
    comparison = {c["check"]: c for c in report["comparisons"]}
    assert comparison["correct"] | {"p": 0} == {
        "a": "strong", "b": "weak", "check": "correct", "test": "McNemar exact", "pairs": 10,
        "aOnly": 6, "bOnly": 0, "effect": 0.6, "p": 0}
    assert comparison["correct"]["p"] == 0.03125
    assert comparison["close"]["effect"] == 2.0
    assert comparison["close"]["p"] == round(1 / 2001, 6)
    assert report["passed"] is False
    assert [g["passed"] for g in report["gates"]] == [True, False]
    store = open_store(folder / ".wop" / "runs.db")
    try:  # every run in the report is a stored run: wop diff, trace and the TUI open it
        for run in report["runs"]:
            handle = attach(store, run["runId"])
            assert handle.status == "completed"
            assert f"arm={run['arm']}" in handle.tags
    finally:
        store.close()
    everything = out + done.stderr + (folder / "report.json").read_text()
    assert SECRET not in everything


def test_compare_shows_what_regressed(folder: Path, server: ScriptedModelServer) -> None:
    first = _wop(folder, server, "eval", "e.toml", "--json", "old.json", "--quiet")
    assert first.returncode == 1, first.stderr
    server.default = _answers(frozenset({3, 4, 5, 9}))  # the strong model got worse
    second = _wop(folder, server, "--store", "other.db", "eval", "e.toml", "--quiet",
                  "--compare", "old.json", "--json", "new.json")
    assert second.returncode == 1
    out = second.stdout
    assert "compared with old.json" in out
    assert re.search(r"strong  correct  90\.0 % \(9/10\)\s+60\.0 % \(6/10\)\s+-30\.0 pt\s+"
                     r"regressed\n", out), out
    assert re.search(r"weak    correct  30\.0 % \(3/10\)\s+30\.0 % \(3/10\)\s+\+0\.0 pt\n", out)
    rows = [" ".join(line.split()) for line in out.splitlines()]
    assert "strong close 9.90 9.60 -0.30 regressed" in rows  # intervals overlap: not significant
    assert "weak close 7.90 7.90 +0.00" in rows
    worse = [line for line in out.splitlines() if line.startswith("  strong q")]
    assert [line.split()[1:4] for line in worse if " correct:" in line] == [
        ["q3", "#1", "correct:"], ["q4", "#1", "correct:"], ["q5", "#1", "correct:"]]
    doc = json.loads((folder / "new.json").read_text())["comparedWith"]
    assert doc["regressed"] is True and doc["file"] == "old.json"
    flipped = {(f["case"], f["check"]) for f in doc["flipped"]}
    assert flipped == {("q3", "correct"), ("q4", "correct"), ("q5", "correct"),
                       ("q3", "close"), ("q4", "close"), ("q5", "close")}


def test_a_profile_bounds_the_calls_of_all_runs_together(folder: Path,
                                                          server: ScriptedModelServer) -> None:
    import threading
    import time

    solve = _answers()
    lock = threading.Lock()
    load = {"now": 0, "peak": 0}

    def slow(request: CapturedRequest) -> Answer:
        with lock:
            load["now"] += 1
            load["peak"] = max(load["peak"], load["now"])
        time.sleep(0.2)  # a model thinking: calls of several runs would overlap here
        with lock:
            load["now"] -= 1
        return solve(request)

    server.default = slow
    (folder / "solver.toml").write_text(SOLVER.replace("retry_backoff_ms = 1",
                                                       "retry_backoff_ms = 1\nmax_concurrency = 1"))
    one_arm = EVAL.replace('[[arms]]\nid = "weak"\ncouncil = "solver.toml"\n'
                           'models = { default = "weak" }\n', "").replace(", weak = 0.5", "")
    (folder / "e.toml").write_text(one_arm)
    done = _wop(folder, server, "eval", "e.toml", "--limit", "4", "--quiet")
    assert done.returncode == 0, done.stderr
    assert len(server.requests) == 4
    assert load["peak"] == 1  # jobs = 4 runs of 4 cases, yet one call at a time
