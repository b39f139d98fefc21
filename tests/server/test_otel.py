"""`wop serve --otel`: runs the host executes export their spans live to a real OTLP receiver;
a collector that hangs (a real socket server that accepts and never answers) slows no run."""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the otel extra (wopdsl[otel]) is not installed")
pytest.importorskip("openai", reason="the llm extra (wopdsl[llm]) is not installed")

from tests.projections.otlp_receiver import HangingCollector, OtlpReceiver
from tests.server.conftest import ALICE, COUNCILS, REPO
from wopdsl.projections.trace.spans import trace_id
from wopdsl.testing.model_server import ScriptedModelServer
from wopdsl.testing.review_answers import review_answer


@pytest.mark.parametrize("delay", [0.0, 1.0], ids=["prompt-collector", "slow-collector"])
def test_served_runs_export_live_and_continue_their_trace(serve: Any, tmp_path: Any,
                                                          delay: float) -> None:
    # A slow collector keeps the first drive's export busy while the resume starts the
    # next drive: that drive must carry on where the first one's trace stopped, not send
    # the first turn again (it did, on a busy machine, before the trace was kept per run).
    with OtlpReceiver(delay=delay) as receiver:
        tokens = tmp_path / "tokens.toml"
        tokens.write_text(f'[tokens]\nalice = "{ALICE}"\n')
        served = serve(COUNCILS / "desk.toml", args=("--otel", "--tokens", str(tokens)),
                       env={"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint}, token=ALICE)
        run_id = served.request("POST", "/v1/runs", {"workflowId": "desk"})[1]["runId"]
        served.wait_status(run_id, "waiting-input")
        receiver.wait_for(1)
        assert [s.name for s in receiver.spans] == ["invoke_agent bot"]
        status, _, _ = served.request("POST", f"/v1/runs/{run_id}/interrupts/room:chat", {
            "resumeValue": {"operation": "close", "turn": {"content": {"text": "Bye."}}}})
        assert status in (200, 202), status
        served.wait_status(run_id, "completed")
        receiver.wait_for(2)
        assert served.stop() == 0  # whatever the host still had to send went out at exit
        spans = list(receiver.spans)
        assert sorted(s.name for s in spans) == ["invoke_agent bot", "invoke_workflow desk"]
        assert {s.trace_id for s in spans} == {f"{trace_id(run_id):032x}"}
        [root] = [s for s in spans if not s.parent_id]
        assert root.name == "invoke_workflow desk"
        assert all(s.parent_id == root.span_id for s in spans if s is not root)
        assert len({s.span_id for s in spans}) == len(spans)


def _timed_runs(served: Any, count: int) -> list[float]:
    """Start ``count`` llm-review runs one after the other; each one's seconds to completion."""
    took = []
    for _ in range(count):
        began = time.monotonic()
        status, body, _ = served.request("POST", "/v1/runs", {"workflowId": "llm-review"})
        assert status == 201, body
        served.wait_status(body["runId"], "completed", timeout=60)
        took.append(time.monotonic() - began)
    return took


def _stopped_in(served: Any) -> float:
    began = time.monotonic()
    assert served.stop() == 0
    return time.monotonic() - began


def test_a_hanging_collector_never_stalls_served_runs(serve: Any, tmp_path: Path) -> None:
    # Before: each run's end waited for the exporter's flush on the default executor, which
    # the runs' model calls also use; with the collector hanging, the flushes filled it and
    # later runs stalled for the OTLP timeout; stopping the host took the SDK's shutdown.
    shutil.copy(REPO / "councils" / "llm-review.toml", tmp_path)
    with ScriptedModelServer() as model, HangingCollector() as collector:
        model.default = review_answer
        env = {"OPENAI_BASE_URL": model.url, "OPENAI_API_KEY": "sk-test-otel-hang"}
        plain = serve(tmp_path / "llm-review.toml", env=env)
        traced = serve(tmp_path / "llm-review.toml", args=("--otel",),
                       env={**env, "OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint})
        _timed_runs(plain, 1), _timed_runs(traced, 1)  # warm-up: the first run loads modules
        plain_runs, traced_runs = [], []
        for _ in range(4):  # interleaved: a busy machine slows both hosts alike
            plain_runs += _timed_runs(plain, 3)
            traced_runs += _timed_runs(traced, 3)
        assert collector.accepted >= 1  # the host did try to send
        plain_stop, traced_stop = _stopped_in(plain), _stopped_in(traced)
    # Generous bounds against the same runs without telemetry, measured here (a stall was
    # the OTLP timeout, 10 s or more): the slowest run within 1.2x, plus 2 s for a busy
    # machine's hiccups; stopping the host within 3 s more.
    assert max(traced_runs) <= 1.2 * max(plain_runs) + 2.0, (plain_runs, traced_runs)
    assert traced_stop <= plain_stop + 3.0, (plain_stop, traced_stop)
    logs = traced.logs()
    assert logs.count("wopdsl tracing: dropped") == 1, logs
    assert "Traceback" not in logs and "Failed to export" not in logs
