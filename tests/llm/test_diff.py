"""`wop diff` on two llm runs against the scripted model server: the critic answers otherwise."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion

from tests.llm.test_cli import REPO, SENTINEL, wop
from wopdsl.testing.model_server import Answer, CapturedRequest, ScriptedModelServer
from wopdsl.testing.review_answers import review_answer


def _other_critic(request: CapturedRequest) -> Answer:
    if request.member != "critic":
        return review_answer(request)
    return Answer({"summary": "Found nothing weak.", "posts": [{
        "roomId": "desk", "mentions": ["proposer"],
        "text": "No weak claim: the plan is sound as it stands."}]}, usage=(300, 45), chunks=1)


def test_an_llm_run_against_one_with_another_answer(server: ScriptedModelServer,
                                                    tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    snapshot: SnapshotAssertion) -> None:
    (tmp_path / "councils").mkdir()
    shutil.copy(REPO / "councils" / "llm-review.toml", tmp_path / "councils")
    monkeypatch.setenv("OPENAI_API_KEY", SENTINEL)
    server.default = review_answer
    assert wop(tmp_path, "run", "councils/llm-review.toml", "--run-id", "r1").returncode == 0
    server.default = _other_critic
    assert wop(tmp_path, "run", "councils/llm-review.toml", "--run-id", "r2").returncode == 0
    calls = len(server.requests)

    done = wop(tmp_path, "diff", "r1", "r2")
    assert done.returncode == 1, done.stderr
    # Streamed text lands in one or two output.chunk events as the machine's timing goes:
    # event sequences are not stable between runs here, everything else is.
    assert re.sub(r"\(event \d+, ", "(event N, ", done.stdout) == snapshot
    doc = json.loads(wop(tmp_path, "diff", "r1", "r2", "--json").stdout)
    critic = next(m for m in doc["members"] if m["member"] == "critic")
    assert (critic["a"]["inputTokens"], critic["a"]["outputTokens"]) == (220, 60)
    assert (critic["b"]["inputTokens"], critic["b"]["outputTokens"]) == (300, 45)
    assert critic["a"]["modelCalls"] == critic["b"]["modelCalls"] == 1
    assert doc["firstDivergence"]["a"]["what"].startswith("critic's turn 1 ended")
    assert doc["firstDivergence"]["a"]["event"] == "node.completed"
    assert len(server.requests) == calls  # a diff reads logs; it never calls a model
    assert SENTINEL not in done.stdout + done.stderr
