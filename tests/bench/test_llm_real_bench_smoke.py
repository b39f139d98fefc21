"""Smoke test of bench/llm_real.py against the scripted server: it runs and prints its table.

Nothing about the figures is asserted (the benchmark is run against the real model; its
table is in docs/guides/llm.md).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("openai", reason="the llm extra (wopdsl[llm]) is not installed")

from wopdsl.testing.model_server import Answer, CapturedRequest, ScriptedModelServer

BENCH = Path(__file__).resolve().parents[2] / "bench" / "llm_real.py"


def answer(request: CapturedRequest) -> Answer:
    if request.member == "planner" and "turn 1." in request.body["messages"][1]["content"]:
        return Answer({"summary": "Asked the owner.", "posts": [
            {"roomId": "signoff", "text": "Sign off?", "mentions": ["owner"]}]})
    return Answer({"summary": "Done.", "posts": []})


def test_the_real_model_bench_runs_end_to_end(tmp_path: Path) -> None:
    with ScriptedModelServer() as server:
        server.default = answer
        done = subprocess.run(
            [sys.executable, str(BENCH), "--url", server.url, "--seeds", "2", "--label",
             "scripted", "--set", "stream=false", "--json", str(tmp_path / "out.json")],
            capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert "| scripted | llm-review | 2 / 2 |" in done.stdout
    assert "| scripted | llm-signoff | 2 / 2 |" in done.stdout
    report = json.loads((tmp_path / "out.json").read_text())
    signoff = report["councils"]["llm-signoff"]["runs"]
    assert [r["status"] for r in signoff] == ["completed", "completed"]
    assert all("stream" not in r.body for r in server.requests)
    assert {r.body["seed"] for r in server.requests} == {1, 2}
