"""``engine = "a2a"`` members: a real A2A agent (official SDK) on loopback takes the turns."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.a2a.conftest import TOKEN, council_toml, received
from wopdsl import load

RUN = "a2a-run-0000000001"


def _run(tmp_path: Path, url: str, mode: str = "plain", **extra: str):
    path = tmp_path / "council.toml"
    path.write_text(council_toml(url, mode, **extra), encoding="utf-8")
    store = tmp_path / "runs.db"
    return load(path).run(store=str(store), run_id=RUN), store


def test_a_text_answer_is_the_members_post_in_the_triggering_room(tmp_path, agent, log):
    run, store = _run(tmp_path, agent)
    assert run.status == "completed", run.snapshot()
    messages = [m for m in run.messages if m.sender == "analyst"]
    assert [(m.room, m.text, m.mentions) for m in messages] == [
        ("market", "Sized for analyst. @writer", ["writer"])]
    assert run.result["agents"][0]["result"]["summary"] == \
        "done: Sized for analyst. @writer"
    sent = received(log)
    assert len(sent) == 1
    assert sent[0]["messageId"] == f"{RUN}/call/analyst/2/0"
    assert sent[0]["contextId"] == f"{RUN}/analyst"
    assert "Size the market." in sent[0]["text"] and "Size it, please." in sent[0]["text"]
    data = sent[0]["data"][0]
    assert data["input"]["member"] == "analyst"
    assert data["input"]["triggers"][0]["text"] == "Size it, please."
    assert data["resultSchema"]["required"] == ["summary", "posts"]
    _checked(store)


def _checked(store: Path, run_id: str = RUN) -> None:
    for extra in ([], ["--v2"]):
        done = subprocess.run([sys.executable, "-m", "wopdsl", "--store", str(store), "check",
                               *extra, run_id], capture_output=True, text=True, timeout=120,
                              check=False)
        assert done.returncode == 0, (extra, done.stdout, done.stderr)


def _events(store: Path, run_id: str = RUN) -> list[dict]:
    from wopdsl import SqliteStore

    return SqliteStore(str(store)).read(run_id)


def _analyst_failure(store: Path) -> dict:
    failed = [e for e in _events(store) if e["type"] == "node.failed"
              and e["nodeId"] == "analyst"]
    assert failed, "the analyst's turn did not fail"
    return failed[-1]["payload"]["error"]


def test_streamed_text_reaches_viewers_as_it_arrives(tmp_path, agent, log):
    run, store = _run(tmp_path, agent, "stream")
    assert run.status == "completed"
    chunks = [e["payload"] for e in _events(store) if e["type"] == "output.chunk"]
    assert chunks and all(c["nodeId"] == "analyst" for c in chunks)
    assert "".join(c["chunk"] for c in chunks) == "Sized for analyst. @writer"
    assert chunks[-1]["isLast"] is True
    assert [m.text for m in run.messages if m.sender == "analyst"] == [
        "Sized for analyst. @writer"]
    _checked(store)


def test_a_data_part_that_is_a_turn_result_is_the_result(tmp_path, agent, log):
    run, store = _run(tmp_path, agent, "result")
    assert run.status == "completed"
    done = [e["payload"]["outputs"] for e in _events(store)
            if e["type"] == "node.completed" and e["nodeId"] == "analyst"]
    assert done == [{"summary": "Market sized at 4 bn.", "data": {"size_bn": 4},
                     "posts": [{"roomId": "market", "text": "The market is 4 bn.",
                                "mentions": []}]}]
    _checked(store)


def test_a_failed_task_fails_the_turn_with_the_agents_reason(tmp_path, agent, log):
    run, store = _run(tmp_path, agent, "fail")
    assert run.status == "failed"
    error = _analyst_failure(store)
    assert error["code"] == "A2A_ERROR"
    assert "as failed: the market data source is down" in error["message"]
    assert len(received(log)) == 1
    _checked(store)


def test_an_oversize_answer_fails_the_turn_and_is_never_stored(tmp_path, agent, log):
    run, store = _run(tmp_path, agent, "big")
    assert run.status == "failed"
    error = _analyst_failure(store)
    assert error["code"] == "A2A_ERROR" and "more than" in error["message"]
    assert store.stat().st_size < 1_000_000  # the 2 MB answer is nowhere in the log
    _checked(store)


def test_escapes_in_an_answer_are_data(tmp_path, agent, log):
    run, store = _run(tmp_path, agent, "escapes")
    assert run.status == "completed"
    [post] = [m for m in run.messages if m.sender == "analyst"]
    assert post.text == "bell\x07 nul\x00 \x1b[2J\x1b]0;owned\x07 done \\n @writer"
    assert post.mentions == ["writer"]
    out = tmp_path / "rooms"
    done = subprocess.run([sys.executable, "-m", "wopdsl", "--store", str(store), "rooms", RUN,
                           "--out", str(out)], capture_output=True, text=True, timeout=60,
                          check=True)
    assert "\x1b" not in (out / json.loads(done.stdout)["rooms"][0]["path"]).read_text()
    _checked(store)


def test_a_mention_outside_the_room_fails_the_turn_and_posts_nothing(tmp_path, agent, log):
    run, store = _run(tmp_path, agent, "outside")
    assert run.status == "failed"
    assert _analyst_failure(store)["code"] == "RESULT_INVALID"
    assert not [m for m in run.messages if m.sender == "analyst"]
    _checked(store)


def test_the_members_header_value_never_reaches_the_log(tmp_path, agent, log):
    run, store = _run(tmp_path, agent, "echo")
    assert run.status == "completed"
    [post] = [m for m in run.messages if m.sender == "analyst"]
    assert "[REDACTED]" in post.text
    raw = store.read_bytes() + b"".join(p.read_bytes() for p in tmp_path.glob("runs.db*"))
    for form in (TOKEN, TOKEN.upper(), TOKEN[::-1]):
        assert form.encode() not in raw
    import base64

    assert base64.b64encode(TOKEN.encode()) not in raw
    events = subprocess.run([sys.executable, "-m", "wopdsl", "--store", str(store), "events",
                             RUN], capture_output=True, text=True, timeout=60, check=True)
    assert TOKEN not in events.stdout and TOKEN not in events.stderr


def test_a_header_whose_variable_is_unset_fails_the_turn_naming_it(tmp_path, agent, log,
                                                                  monkeypatch):
    monkeypatch.delenv("ANALYST_TOKEN")
    run, store = _run(tmp_path, agent)
    assert run.status == "failed"
    error = _analyst_failure(store)
    assert error["code"] == "A2A_ERROR" and "ANALYST_TOKEN" in error["message"]
    assert received(log) == []


def test_an_agent_that_is_down_is_never_in_doubt(tmp_path, log, monkeypatch):
    from tests.a2a.conftest import free_port

    monkeypatch.setenv("ANALYST_TOKEN", f"Bearer {TOKEN}")
    run, store = _run(tmp_path, f"http://127.0.0.1:{free_port()}",
                      member="retries = 1\nretry_backoff_ms = 1")
    assert run.status == "failed"
    error = _analyst_failure(store)
    assert error["code"] == "A2A_ERROR" and "agent card" in error["message"]
    retried = [e for e in _events(store) if e["type"] == "node.retried"]
    assert [e["nodeId"] for e in retried] == ["analyst"]


def test_a_turn_that_times_out_follows_its_task_on_retry_never_sends_twice(tmp_path, log,
                                                                          monkeypatch):
    from tests.a2a.conftest import serving

    monkeypatch.setenv("ANALYST_TOKEN", f"Bearer {TOKEN}")
    with serving(log, A2A_TEST_SLOW_S="1.2") as url:
        run, store = _run(tmp_path, url, "slow",
                          member="turn_timeout_ms = 700\nretries = 4\nretry_backoff_ms = 1")
    assert run.status == "completed", _analyst_failure(store)
    assert len(received(log)) == 1
    events = _events(store)
    retried = [e["payload"]["lastError"]["code"] for e in events if e["type"] == "node.retried"]
    assert retried and set(retried) == {"TIMEOUT"}
    assert len([e for e in events if e["type"] == "agent.toolCalled"]) == 1
    assert [m.text for m in run.messages if m.sender == "analyst"] == [
        "Sized for analyst. @writer"]
    _checked(store)


def test_a_replay_fork_sends_nothing_and_does_not_diverge(tmp_path, agent, log):
    run, store = _run(tmp_path, agent)
    assert run.status == "completed"
    opened = max(e["sequence"] for e in _events(store) if e["type"] == "conversation.opened")
    fork = subprocess.run([sys.executable, "-m", "wopdsl", "--store", str(store), "fork", RUN,
                           "--from", str(opened), "--mode", "replay", "--run-id",
                           "a2a-fork-000000000001", "--council",
                           str(tmp_path / "council.toml")],
                          capture_output=True, text=True, timeout=120, check=False)
    assert fork.returncode == 0, fork.stderr
    assert len(received(log)) == 1  # the agent was not called again
    events = _events(store, "a2a-fork-000000000001")
    assert not [e for e in events if e["type"] == "replay.diverged"]
    assert [e["payload"]["outputs"]["posts"][0]["text"] for e in events
            if e["type"] == "node.completed" and e["nodeId"] == "analyst"] == [
        "Sized for analyst. @writer"]
    _checked(store, "a2a-fork-000000000001")
