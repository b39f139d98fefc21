"""Which server a member calls, what a failed connection says, and forks calling their run's."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tests.llm.conftest import llm_council
from tests.llm.test_run import events_of, kinds, payloads, post, run_it
from wopdsl import SqliteStore
from wopdsl.agents.llm.endpoint import resolve
from wopdsl.engine import fork
from wopdsl.errors import ValidationError
from wopdsl.model.llm import ModelProfile
from wopdsl.testing.model_server import Answer, Drop, ScriptedModelServer


def closed_port() -> int:
    """A loopback port nobody listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


async def test_no_server_fails_at_once_naming_the_url_and_its_origin(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    run, events = await run_it(llm_council(members={"writer": {}}, rooms={}),
                               tmp_path / "runs.db")
    assert run.status == "failed"
    error = payloads(events, "node.failed")[0]["error"]
    assert error["code"] == "MODEL_ERROR"
    assert error["message"].startswith(
        f"model profile 'm': cannot connect to {url} (from OPENAI_BASE_URL)")
    assert "start the model server" in error["message"]
    assert "node.retried" not in kinds(events)  # nobody there: no retries, no backoff


async def test_the_profile_base_url_is_named_as_the_origin(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    url = f"http://127.0.0.1:{closed_port()}/v1"
    council = llm_council(members={"writer": {}}, rooms={}, profile={"base_url": url})
    run = await council.arun(store=str(tmp_path / "runs.db"))
    assert f"cannot connect to {url} (from the profile's base_url)" in run.error["message"]


def test_an_unset_base_url_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    shown = resolve(ModelProfile(model="m")).describe()
    assert shown == ("https://api.openai.com/v1 (OPENAI_BASE_URL is unset and the profile "
                     "has no base_url: the openai client's default)")
    secret = resolve(ModelProfile(model="m", base_url="https://u:pw@host.example/v1?k=1"))
    assert secret.describe() == "https://host.example/v1 (from the profile's base_url)"


async def test_a_dropped_keep_alive_connection_is_sent_again_at_once(
        server: ScriptedModelServer, tmp_path: Path) -> None:
    server.add(Drop(), Answer({"summary": "ok"}))
    run, events = await run_it(llm_council(members={"writer": {}}, rooms={}),
                               tmp_path / "runs.db")
    assert run.status == "completed", run.error
    assert len(server.requests) == 2
    assert "node.retried" not in kinds(events)  # no turn retry, no backoff


async def test_a_fork_calls_the_server_its_run_recorded(
        server: ScriptedModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "runs.db"
    server.add(Answer(post("asked", "desk", "check", "critic")), member="writer")
    server.add(Answer({"summary": "checked"}), member="critic")
    council = llm_council()
    source = await council.arun(store=str(db))
    assert source.status == "completed"
    started = source.events[0]["payload"]["metadata"]
    assert started["models"] == {"m": {"baseUrl": server.url}}
    critic_start = next(e["sequence"] for e in source.events
                        if e["type"] == "node.started" and e.get("nodeId") == "critic")
    with ScriptedModelServer() as other:
        monkeypatch.setenv("OPENAI_BASE_URL", other.url)  # the shell points elsewhere now
        store = SqliteStore(db)
        try:
            same = fork(store, source.run_id, critic_start - 1, mode="replay")
            moved = fork(store, source.run_id, critic_start - 1, mode="replay",
                         base_url=other.url)
            with pytest.raises(ValidationError, match="without user info"):
                fork(store, source.run_id, critic_start - 1, base_url="http://u:p@h/v1")
        finally:
            store.close()
        server.add(Answer({"summary": "checked"}), member="critic")
        assert await council.open(same, str(db)).resume() == "completed"
        assert [r.member for r in server.requests] == ["writer", "critic", "critic"]
        assert other.requests == []
        other.add(Answer({"summary": "checked"}), member="critic")
        assert await council.open(moved, str(db)).resume() == "completed"
        assert [r.member for r in other.requests] == ["critic"]
        assert events_of(db, moved)[0]["payload"]["metadata"]["models"] == {
            "m": {"baseUrl": other.url}}


async def test_a_base_url_with_credentials_is_never_recorded(
        server: ScriptedModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", server.url.replace("://", "://user:pw@"))
    server.add(Answer({"summary": "ok"}))
    run, events = await run_it(llm_council(members={"writer": {}}, rooms={}),
                               tmp_path / "runs.db")
    assert run.status == "completed", run.error
    assert "models" not in events[0]["payload"]["metadata"]
    assert b"user:pw" not in (tmp_path / "runs.db").read_bytes()


async def test_replay_divergence_sequences_name_the_source_run(
        server: ScriptedModelServer, tmp_path: Path) -> None:
    """An extra turn in a replay fork is reported at the source run's last sequence, never
    at a sequence of the fork's own log."""
    db = tmp_path / "runs.db"
    server.add(Answer(post("asked", "desk", "check", "critic")), member="writer")
    server.add(Answer({"summary": "checked"}), member="critic")
    council = llm_council()
    source = await council.arun(store=str(db))
    critic_start = next(e["sequence"] for e in source.events
                        if e["type"] == "node.started" and e.get("nodeId") == "critic")
    store = SqliteStore(db)
    try:
        forked = fork(store, source.run_id, critic_start - 1, mode="replay")
    finally:
        store.close()
    server.add(Answer(post("checked", "desk", "back to you", "writer")), member="critic")
    server.add(Answer({"summary": "done"}), member="writer")
    run = council.open(forked, str(db))
    assert await run.resume() == "completed"
    kinds_at = [(d["divergenceKind"], d["atSequence"]) for d in run.state.divergences]
    last = source.events[-1]["sequence"]
    assert kinds_at[0][0] == "output" and kinds_at[-1] == ("extra", last)


def test_wop_run_without_a_server_says_where_it_looked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 24: the CLI's error names the URL tried and where it came from, at once."""
    from tests.llm.test_cli import REPO, wop

    (tmp_path / "councils").mkdir()
    (tmp_path / "councils" / "llm-review.toml").write_bytes(
        (REPO / "councils" / "llm-review.toml").read_bytes())
    url = f"http://127.0.0.1:{closed_port()}/v1"
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    done = wop(tmp_path, "run", "councils/llm-review.toml", "--run-id", "nobody")
    assert done.returncode == 1
    shown = done.stdout + done.stderr
    assert "error[TEAM_NODE_FAILED]: member proposer failed: MODEL_ERROR: model profile " \
           f"'default': cannot connect to {url} (from OPENAI_BASE_URL)" in shown, shown
    assert "Traceback" not in shown
    events = wop(tmp_path, "events", "nobody").stdout
    assert "node.retried" not in events
