"""The llm council through the real CLI (subprocesses) against the scripted loopback server."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.openwop_schemas import load_schemas
from wopdsl import SqliteStore, load
from wopdsl.testing.model_server import Failure, ScriptedModelServer
from wopdsl.testing.review_answers import review_answer

REPO = Path(__file__).resolve().parents[2]
SENTINEL = "sk-SENTINEL-7f3a9c1e5b2d4f60a8e1c3b5d7f9a2c4"


def wop(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop("WOP_STORE", None)
    return subprocess.run([sys.executable, "-m", "wopdsl", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, encoding="utf-8", timeout=120,
                          check=False)


@pytest.fixture
def review(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """councils/llm-review.toml in tmp_path; OPENAI_API_KEY holds the sentinel key."""
    (tmp_path / "councils").mkdir()
    shutil.copy(REPO / "councils" / "llm-review.toml", tmp_path / "councils")
    monkeypatch.setenv("OPENAI_API_KEY", SENTINEL)
    return tmp_path


def test_wop_run_validate_runs_replay_show_usage(server: ScriptedModelServer,
                                                 review: Path) -> None:
    server.default = review_answer
    done = wop(review, "run", "councils/llm-review.toml", "--run-id", "r1")
    assert done.returncode == 0, done.stderr
    assert "@critic" in done.stdout
    assert "model usage" in done.stdout
    assert "proposer: 600 tokens (480 in, 120 out), 2 calls" in done.stdout
    assert "total: 880 tokens (700 in, 180 out), 3 calls" in done.stdout
    assert [r.member for r in server.requests] == ["proposer", "critic", "proposer"]
    assert all(r.headers["authorization"] == f"Bearer {SENTINEL}" for r in server.requests)
    calls = len(server.requests)

    replay = wop(review, "replay", "r1", "--json")
    doc = json.loads(replay.stdout)
    assert doc["usage"]["total"]["totalTokens"] == 880
    assert doc["result"]["usage"]["members"]["critic"]["totalTokens"] == 280
    rows = json.loads(wop(review, "runs", "--json").stdout)
    assert rows[0]["usage"] == {"calls": 3, "inputTokens": 700, "outputTokens": 180,
                                "totalTokens": 880}
    table = wop(review, "runs").stdout.splitlines()
    assert table[1].split()[:5] == ["r1", "llm-review", "completed", table[1].split()[3], "880"]
    assert len(server.requests) == calls  # replay and runs never call the model

    store = SqliteStore(review / ".wop" / "runs.db")
    try:
        load_schemas().check_events(store.read("r1"))
    finally:
        store.close()


def test_wop_validate_prints_the_worst_case(review: Path) -> None:
    done = wop(review, "validate", "councils/llm-review.toml")
    assert done.returncode == 0, done.stderr
    assert "worst case: 4 member turns (sum of caps)" in done.stdout
    assert "proposer: 4 calls × 400 output tokens" in done.stdout
    assert "worst case output: 3,200 tokens (no prices set: cost unknown)" in done.stdout


@pytest.mark.slow
def test_the_key_never_leaves_the_environment(server: ScriptedModelServer, review: Path,
                                              tmp_path: Path) -> None:
    """A sentinel key: searched in every output, the events and the database file."""
    server.default = review_answer
    outputs: list[str] = []
    ok = wop(review, "--debug", "run", "councils/llm-review.toml", "--run-id", "ok")
    assert ok.returncode == 0, ok.stderr
    server.default = Failure(401, f"Incorrect API key provided: {SENTINEL}")
    bad = wop(review, "--debug", "run", "councils/llm-review.toml", "--run-id", "bad",
              "--json")
    assert bad.returncode == 1
    assert json.loads(bad.stdout)["error"]["code"] == "TEAM_NODE_FAILED"
    outputs += [ok.stdout, ok.stderr, bad.stdout, bad.stderr]
    assert "HTTP 401" in bad.stdout + bad.stderr or "MODEL_ERROR" in bad.stdout
    for run_id in ("ok", "bad"):
        for args in (("events", run_id), ("transcript", run_id), ("replay", run_id, "--json"),
                     ("--debug", "replay", run_id),
                     ("rooms", run_id, "--out", f"rooms-{run_id}")):
            done = wop(review, *args)
            outputs += [done.stdout, done.stderr]
    outputs += [wop(review, "runs", "--json").stdout, wop(review, "runs").stdout]
    events = wop(review, "events", "bad").stdout
    assert "MODEL_ERROR" in events and "[REDACTED]" in events
    council = load(review / "councils" / "llm-review.toml")
    outputs.append(council.to_toml())
    opened = council.open("ok", str(review / ".wop" / "runs.db"))
    outputs += [json.dumps(opened.snapshot()), opened.transcript, opened._repr_html_(),
                opened._repr_markdown_()]
    for path in (review / "rooms-ok").iterdir():
        outputs.append(path.read_text(encoding="utf-8"))
    for text in outputs:
        assert SENTINEL not in text
    files = [p for p in (review / ".wop").iterdir() if p.is_file()]
    assert any(p.name == "runs.db" for p in files)
    for path in files:
        assert SENTINEL.encode() not in path.read_bytes(), path
