"""Councils against a real model: llama.cpp's server with SmolLM2-135M-Instruct (.ci/llama.sh).

The model is small and its answers are not judged: these tests assert the wire (what was
sent, one ``provider.usage`` per call), the invariants (events validate, ``wop check``
passes, a requested turn never exceeds a cap, replay calls nothing) and provenance (the model
the server reports). A loopback :class:`~wopdsl.testing.model_proxy.ModelProxy` in front of
the server shows the wire without touching the client under test.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.llm.test_run import payloads
from tests.openwop_schemas import load_schemas
from tests.real_model import llama_url, served_model
from wopdsl import Council, SqliteStore, load
from wopdsl.declare.toml import load_spec, spec_from_data
from wopdsl.engine import fork
from wopdsl.testing.model_proxy import ModelProxy

pytestmark = [pytest.mark.real_model, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
ENDED = {"completed", "failed", "waiting-input"}


@pytest.fixture
def proxy(monkeypatch: pytest.MonkeyPatch) -> Iterator[ModelProxy]:
    """A recording proxy in front of the real server; ``OPENAI_BASE_URL`` points at it."""
    with ModelProxy(llama_url(), set_fields={"seed": 11}) as recording:
        monkeypatch.setenv("OPENAI_BASE_URL", recording.url)
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        yield recording


def wop(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "WOP_STORE"}
    return subprocess.run([sys.executable, "-m", "wopdsl", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600, check=False)


def check_invariants(events: list[dict[str, Any]], proxy: ModelProxy, served: str) -> None:
    load_schemas().check_events(events)
    usage = payloads(events, "provider.usage")
    assert len(usage) == len(proxy.calls) > 0
    assert all(call.status == 200 for call in proxy.calls)
    assert {u["model"] for u in usage} == {served}
    for exchanged in payloads(events, "conversation.exchanged"):
        agent = exchanged["turn"].get("agent")
        if agent is not None:
            assert agent["model"]["model"] == served
    failures = payloads(events, "run.failed")
    assert not any("TEAM_TURN_LIMIT" in json.dumps(f) for f in failures)


def test_the_review_council_through_the_cli(proxy: ModelProxy, tmp_path: Path) -> None:
    (tmp_path / "councils").mkdir()
    shutil.copy(REPO / "councils" / "llm-review.toml", tmp_path / "councils")
    done = wop(tmp_path, "run", "councils/llm-review.toml", "--run-id", "real", "--json")
    doc = json.loads(done.stdout)
    assert doc["status"] in ENDED, done.stderr
    for call in proxy.calls:  # the wire: the member's schema through the server's grammar
        body = call.body
        assert body["stream"] is True and body["max_tokens"] == 400
        assert body["response_format"]["type"] == "json_schema"
        assert body["response_format"]["json_schema"]["strict"] is True
    store = SqliteStore(tmp_path / ".wop" / "runs.db")
    try:
        events = store.read("real")
    finally:
        store.close()
    check_invariants(events, proxy, served_model(llama_url()))
    assert any(e["type"] == "output.chunk" for e in events)
    checked = wop(tmp_path, "check", "real")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    calls = len(proxy.calls)
    replayed = wop(tmp_path, "replay", "real", "--json")
    assert json.loads(replayed.stdout)["status"] == doc["status"]
    assert len(proxy.calls) == calls  # replay never calls the model


async def test_a_council_with_a_person_and_its_replay_fork(proxy: ModelProxy,
                                                           tmp_path: Path) -> None:
    db = str(tmp_path / "runs.db")
    council = load(REPO / "councils" / "llm-signoff.toml")
    run = await council.arun(store=db)
    if run.status == "waiting-input":  # the owner, answered by a script
        await run.reply("Approved.", room="signoff", as_="owner")
        await run.wait()
    assert run.status in ENDED, run.error
    served = served_model(llama_url())
    check_invariants(run.events, proxy, served)
    started = next((e["sequence"] for e in run.events
                    if e["type"] == "node.started" and e.get("nodeId") == "critic"), None)
    if started is None:
        return  # the planner asked nobody: nothing to fork at
    store = SqliteStore(tmp_path / "runs.db")
    try:
        forked = fork(store, run.run_id, started - 1, mode="replay")
    finally:
        store.close()
    again = council.open(forked, db)
    await again.resume()
    load_schemas().check_events(again.events)
    last = run.events[-1]["sequence"]
    assert all(0 <= d["atSequence"] <= last for d in again.state.divergences)


async def test_json_mode_without_streaming(proxy: ModelProxy, tmp_path: Path) -> None:
    data = load_spec(REPO / "councils" / "llm-review.toml").definition()
    data["models"]["default"].update(stream=False, structured_output="json_object",
                                     max_output_tokens=200)
    council = Council.from_spec(spec_from_data(data))
    run = await council.arun(store=str(tmp_path / "runs.db"))
    assert run.status in ENDED, run.error
    first = proxy.calls[0].body
    assert "stream" not in first and first["response_format"] == {"type": "json_object"}
    check_invariants(run.events, proxy, served_model(llama_url()))
    assert not any(e["type"] == "output.chunk" for e in run.events)


def test_the_llm_council_deliberates_to_its_end(proxy: ModelProxy, tmp_path: Path) -> None:
    """``councils/llm-council.toml``: two blind, anonymous rounds with votes, then the chair.

    The grammar holds the model to the votes the schema offers (one per open decision, an
    option or a score, a reason): when the run completes, both decisions close and the
    chair's summary is the answer. The small model samples at temperature 0.9 and may
    ramble past ``max_output_tokens`` in every attempt of a turn: that run fails the
    documented way (``RESULT_INVALID``, cut off). Either way the wire offered the votes and
    the log passes ``wop check`` in v1 and v2. (Its answers are not wise: the protocol is
    what is asserted, not whether it decided.)
    """
    (tmp_path / "councils").mkdir()
    shutil.copy(REPO / "councils" / "llm-council.toml", tmp_path / "councils")
    run_id = "llm-council-real-0001"
    done = wop(tmp_path, "run", "councils/llm-council.toml", "--run-id", run_id, "--json")
    doc = json.loads(done.stdout)
    assert doc["status"] in ("completed", "failed"), done.stdout + done.stderr
    store = SqliteStore(tmp_path / ".wop" / "runs.db")
    try:
        events = store.read(run_id)
    finally:
        store.close()
    check_invariants(events, proxy, served_model(llama_url()))
    advisors = {"analyst", "engineer", "skeptic"}
    for call in proxy.calls:  # the wire: votes offered to the advisors, the chair answers
        schema = call.body["response_format"]["json_schema"]["schema"]
        member = call.body["messages"][0]["content"].split("member id: ")[1].split("\n")[0]
        if member in advisors:
            assert set(schema["properties"]["votes"]["properties"]) == {
                "first_step", "confidence"}
        else:
            assert member == "chair" and list(schema["properties"]) == ["summary"]
    for flag in ((), ("--v2",)):
        checked = wop(tmp_path, "check", *flag, run_id)
        assert checked.returncode == 0, checked.stdout + checked.stderr
    if doc["status"] == "failed":
        error = doc["error"]
        assert (error["code"], error["details"]["nodeError"]) == (
            "TEAM_NODE_FAILED", "RESULT_INVALID"), doc
        assert "cut off at max_output_tokens" in error["message"], doc
        assert done.returncode != 0 and len(payloads(events, "run.failed")) == 1
        return
    assert done.returncode == 0, done.stderr
    result = doc["result"]
    closed = {d["id"]: d for d in result["decisions"]}
    assert set(closed) == {"first_step", "confidence"}
    for decision in closed.values():
        assert decision["voted"] == 3 and decision["outcome"] is not None
    closings = [p["turn"]["content"]["decision"]["id"]
                for p in payloads(events, "conversation.exchanged")
                if "decision" in p["turn"]["content"]]
    assert sorted(closings) == ["confidence", "first_step"]
    assert result["answer"]
    assert payloads(events, "run.completed")[0]["outputs"]["answer"] == result["answer"]
