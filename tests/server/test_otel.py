"""`wop serve --otel`: runs the host executes export their spans live to a real OTLP receiver."""

from __future__ import annotations

import time
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the otel extra (wopdsl[otel]) is not installed")

from tests.projections.otlp_receiver import OtlpReceiver
from tests.server.conftest import ALICE, COUNCILS
from wopdsl.projections.trace.spans import trace_id


def _wait_for(receiver: OtlpReceiver, count: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while len(receiver.spans) < count and time.monotonic() < deadline:
        time.sleep(0.05)


def test_served_runs_export_live_and_continue_their_trace(serve: Any, tmp_path: Any) -> None:
    with OtlpReceiver() as receiver:
        tokens = tmp_path / "tokens.toml"
        tokens.write_text(f'[tokens]\nalice = "{ALICE}"\n')
        served = serve(COUNCILS / "desk.toml", args=("--otel", "--tokens", str(tokens)),
                       env={"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint}, token=ALICE)
        run_id = served.request("POST", "/v1/runs", {"workflowId": "desk"})[1]["runId"]
        served.wait_status(run_id, "waiting-input")
        _wait_for(receiver, 1)
        assert [s.name for s in receiver.spans] == ["invoke_agent bot"]
        status, _, _ = served.request("POST", f"/v1/runs/{run_id}/interrupts/room:chat", {
            "resumeValue": {"operation": "close", "turn": {"content": {"text": "Bye."}}}})
        assert status in (200, 202), status
        served.wait_status(run_id, "completed")
        _wait_for(receiver, 2)
        spans = list(receiver.spans)
        assert {s.trace_id for s in spans} == {f"{trace_id(run_id):032x}"}
        [root] = [s for s in spans if not s.parent_id]
        assert root.name == "invoke_workflow desk"
        assert all(s.parent_id == root.span_id for s in spans if s is not root)
        assert len({s.span_id for s in spans}) == len(spans)
