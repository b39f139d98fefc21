"""Judges: a model scores runs on a rubric, as runs of their own; and their OpenTelemetry events.

The scripted OpenAI-wire server plays both the solver (right on some cases) and the judge
(5 for a right answer, 2 for a wrong one), so the judged means are known in advance.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("openai", reason="the llm extra (wopdsl[llm]) is not installed")

from tests.cli.test_eval_models import EVAL, SECRET, _answers, _wop, solver_folder
from wopdsl import open_store
from wopdsl.protocol.check import check_events
from wopdsl.protocol.check_v2 import check_events_v2
from wopdsl.testing.model_server import Answer, CapturedRequest, Failure, ScriptedModelServer

JUDGE = """
[[checks]]
id = "quality"
kind = "judge"
model = "judge"
rubric = "Is the answer the right sum?"
scale = [1, 5]
repair_attempts = 1

[models.judge]
model = "judge-model"
api_key_env = "WOPDSL_TEST_MODEL_KEY"
retry_backoff_ms = 1
price_in_per_mtok = 100
price_out_per_mtok = 200
"""

_JUDGED = re.compile(r"What is (\d+)\+(\d+)\?.*?The answer to judge:\\n(-?\d+)")


def _judging(off_scale: frozenset[int] = frozenset(), stubborn: frozenset[int] = frozenset(),
             ) -> tuple[Any, Counter[int]]:
    """The solver answers as in test_eval_models; the judge gives 5 to a right sum, 2 to a
    wrong one — first 9 (off the 1-5 scale) on ``off_scale`` cases, always 9 on ``stubborn``.
    """
    solve = _answers()
    calls: Counter[int] = Counter()

    def answer(request: CapturedRequest) -> Answer:
        if request.member != "judge":
            return solve(request)
        text = json.dumps(request.body["messages"])
        found = _JUDGED.search(text)
        assert found is not None, text
        i, given = int(found.group(1)), int(found.group(3))
        calls[i] += 1
        score = 5 if given == 2 * i else 2
        if i in stubborn or (i in off_scale and calls[i] == 1):
            score = 9
        return Answer({"summary": "Judged.", "posts": [],
                       "votes": {"score": {"choice": score, "reason": f"sum {given}"}}},
                      usage=(20, 10))

    return answer, calls


@pytest.fixture
def server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as model_server:
        yield model_server


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return solver_folder(tmp_path, EVAL.replace(
        "[gate]\ncorrect = { strong = 0.9, weak = 0.5 }\n", "") + JUDGE)


def _stored(folder: Path) -> dict[str, list[dict[str, Any]]]:
    store = open_store(folder / ".wop" / "runs.db")
    try:
        return {info.run_id: store.read(info.run_id) for info in store.runs()}
    finally:
        store.close()


def test_a_judge_scores_each_run_in_a_run_of_its_own(folder: Path,
                                                     server: ScriptedModelServer) -> None:
    server.default, _calls = _judging()
    done = _wop(folder, server, "eval", "e.toml", "--json", "r.json", "--quiet")
    assert done.returncode == 0, done.stderr
    report = json.loads((folder / "r.json").read_text())
    strong, weak = report["arms"]
    assert strong["checks"]["quality"] | {"low": 0, "high": 0} == {
        "kind": "score", "n": 10, "mean": 4.7, "low": 0, "high": 0, "errors": 0,
        "scale": [1, 5]}
    assert weak["checks"]["quality"]["mean"] == 2.9
    assert strong["judges"] == {"tokens": 300, "costUsd": 0.04}  # apart from the arm's own
    assert strong["tokens"]["total"] == 150
    runs = {r["runId"]: r for r in report["runs"]}
    stored = _stored(folder)
    assert len(stored) == 40  # 20 runs, each judged by a run of its own
    q9 = next(r for r in runs.values() if r["arm"] == "strong" and r["case"] == "q9")
    verdict = q9["checks"]["quality"]
    assert (verdict["score"], verdict["explanation"]) == (2.0, "sum 19")
    judge_log = stored[verdict["judgeRunId"]]
    started = judge_log[0]["payload"]["metadata"]["request"]
    assert started["eval"]["judges"] == q9["runId"]
    assert started["runOptions"]["tags"] == ["eval=models", "arm=strong", "case=q9", "repeat=1",
                                             "judge=quality"]
    assert any(e["type"] == "provider.usage" for e in judge_log)
    for rid, events in stored.items():  # the judges' runs too: valid OpenWOP, v1 and v2
        assert check_events(events) == [], rid
        assert check_events_v2(events) == [], rid
    listed = json.loads(_wop(folder, server, "runs", "--tag", "judge=quality", "--json").stdout)
    assert len(listed) == 20
    again = _wop(folder, server, "eval", "e.toml", "--json", "r2.json", "--quiet")
    assert again.returncode == 0
    calls = len(server.requests)
    assert json.loads((folder / "r2.json").read_text())["arms"] == report["arms"]
    assert len(server.requests) == calls  # judgements are reused like runs: no new call
    everything = done.stdout + done.stderr + (folder / "r.json").read_text()
    assert SECRET not in everything and SECRET not in json.dumps(stored)  # nor in any log


def test_an_answer_off_the_scale_is_re_asked_or_counted_as_an_error(
        folder: Path, server: ScriptedModelServer) -> None:
    server.default, calls = _judging(off_scale=frozenset({0}), stubborn=frozenset({1}))
    # One run at a time, so the strong arm's judgement of q0 is the first (the one repaired).
    (folder / "e.toml").write_text((folder / "e.toml").read_text().replace("jobs = 4",
                                                                           "jobs = 1"))
    done = _wop(folder, server, "eval", "e.toml", "--json", "r.json", "--quiet", "--limit", "2")
    assert done.returncode == 0, done.stderr
    report = json.loads((folder / "r.json").read_text())
    runs = {(r["arm"], r["case"]): r["checks"]["quality"] for r in report["runs"]}
    assert runs[("strong", "q0")]["score"] == 5.0  # repaired: asked again, then on the scale
    assert calls[0] == 3  # the first judgement off the scale and asked again; then on it
    error = runs[("strong", "q1")]
    assert "score" not in error and error["error"].startswith("the judge's run failed: ")
    assert "RESULT_INVALID" in error["error"] and "(1..5)" in error["error"]
    figures = report["arms"][0]["checks"]["quality"]
    assert (figures["n"], figures["mean"], figures["errors"]) == (1, 5.0, 1)
    stored = _stored(folder)
    repaired = stored[runs[("strong", "q0")]["judgeRunId"]]
    assert [e["type"] for e in repaired].count("envelope.retry.attempted") == 1
    assert "strong  quality  5.00" in done.stdout and done.stdout.count(" 1       1\n") >= 1


def test_a_judge_over_its_budget_is_an_error_never_a_score(folder: Path,
                                                            server: ScriptedModelServer) -> None:
    server.default, _calls = _judging()
    text = (folder / "e.toml").read_text().replace("repair_attempts = 1",
                                                   "repair_attempts = 1\nmax_tokens = 5")
    (folder / "e.toml").write_text(text)
    done = _wop(folder, server, "eval", "e.toml", "--json", "r.json", "--quiet", "--limit", "1")
    assert done.returncode == 0, done.stderr
    verdict = json.loads((folder / "r.json").read_text())["runs"][0]["checks"]["quality"]
    assert "score" not in verdict and "BUDGET_EXHAUSTED" in verdict["error"]


@pytest.mark.parametrize("retries", [1, 0])
def test_a_judge_call_that_fails_is_retried_then_an_error(folder: Path,
                                                          server: ScriptedModelServer,
                                                          retries: int) -> None:
    judging, _calls = _judging()
    failed: list[str] = []

    def flaky(request: CapturedRequest) -> Answer | Failure:
        if request.member == "judge" and not failed:  # the first judgement: HTTP 500 once
            failed.append(json.dumps(request.body["messages"]))
            return Failure(500, "the judge model is overloaded")
        return judging(request)

    server.default = flaky
    # The profile's own retries (per call) are off: what retries is the check's ``retries``
    # (the judgement's turn runs again).
    text = (folder / "e.toml").read_text().replace(
        "repair_attempts = 1", f"repair_attempts = 1\nretries = {retries}").replace(
        "jobs = 4", "jobs = 1").replace('model = "judge-model"',
                                        'model = "judge-model"\nretries = 0')
    (folder / "e.toml").write_text(text)
    done = _wop(folder, server, "eval", "e.toml", "--json", "r.json", "--quiet", "--limit", "1")
    assert done.returncode == 0, done.stderr
    verdict = json.loads((folder / "r.json").read_text())["runs"][0]["checks"]["quality"]
    retried = [e for e in _stored(folder)[verdict["judgeRunId"]]
               if e["type"] == "node.retried"]
    if retries:  # asked again, as a member's failed turn is: then a score
        assert verdict["score"] == 5.0 and "error" not in verdict
        assert len(retried) == 1 and "HTTP 500" in retried[0]["payload"]["lastError"]["message"]
    else:  # no retry left: an error, never a score
        assert "score" not in verdict and retried == []
        assert verdict["error"].startswith("the judge's run failed: ")
        assert "MODEL_ERROR" in verdict["error"] and "HTTP 500" in verdict["error"]


def test_each_check_result_is_a_gen_ai_evaluation_result_on_the_runs_trace(
        folder: Path, server: ScriptedModelServer) -> None:
    from tests.projections.otlp_receiver import OtlpReceiver
    from wopdsl.projections.trace.spans import span_id, trace_id

    server.default, _calls = _judging()
    with OtlpReceiver() as receiver:
        done = _wop(folder, server, "eval", "e.toml", "--json", "r.json", "--quiet", "--limit",
                    "1", "--otel", env={"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint})
        assert done.returncode == 0, done.stderr
        # Per run: its workflow, agent and chat spans; its judge's run, the same; and the
        # evaluation span.
        spans = receiver.wait_for(2 * (3 + 3 + 1))
    report = json.loads((folder / "r.json").read_text())
    evaluations = [s for s in spans if s.name == "evaluate models"]
    assert len(evaluations) == 2
    stored = _stored(folder)
    for run in report["runs"]:
        rid = run["runId"]
        span = next(s for s in evaluations if s.attributes["wopdsl.run.id"] == rid)
        assert span.trace_id == f"{trace_id(rid):032x}"
        assert span.parent_id == f"{span_id(rid, stored[rid][0]['eventId']):016x}"
        root = [s for s in spans if s.name == "invoke_workflow solver" and
                s.trace_id == span.trace_id]
        assert root and root[0].span_id == span.parent_id  # the run's own root, exported too
        events = {e[2]["gen_ai.evaluation.name"]: e for e in span.events}
        assert {e[0] for e in span.events} == {"gen_ai.evaluation.result"}
        assert events["correct"][2]["gen_ai.evaluation.score.value"] == 1.0
        assert events["correct"][2]["gen_ai.evaluation.score.label"] == "pass"
        assert events["close"][2]["gen_ai.evaluation.score.value"] == 10.0
        quality = events["quality"][2]
        assert quality["gen_ai.evaluation.score.value"] == 5.0
        assert quality["gen_ai.evaluation.explanation"] == "sum 0"
        judge_run = run["checks"]["quality"]["judgeRunId"]
        assert quality["wopdsl.eval.judge_run_id"] == judge_run
        judged = {s.name for s in spans if s.trace_id == f"{trace_id(judge_run):032x}"}
        assert judged == {"invoke_workflow judge.quality", "invoke_agent judge",
                          "chat judge-model"}  # the judge's call is traced like a member's
    assert SECRET not in json.dumps([s.attributes for s in spans])
