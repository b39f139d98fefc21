"""An a2a member's agent asks for input (``input-required``): the room answers, the same task
gets the answer (DESIGN.md §25).

The real test agent (official SDK) in mode ``ask`` asks "Which market should I size?", and
sizes the market the answer names; an answer ``again`` makes it ask a second question.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.a2a.conftest import council_toml, received
from wopdsl import SqliteStore, ValidationError, load

RUN = "a2a-ask-0000000000001"
QUESTION = "Which market should I size?"
BOSS = '\n[[members]]\nid = "boss"\nrole = "person"\nengine = "human"\ninitial_turn = false\n'


def _council(tmp_path: Path, url: str, *, boss_rooms: tuple[str, ...] = ("market",),
             mode: str = "ask") -> Path:
    """The test council with a human member ``boss`` in ``boss_rooms``."""
    text = council_toml(url, mode)
    for room, members in (("market", '"writer", "analyst"'), ("side", '"writer", "outsider"')):
        if room in boss_rooms:
            text = text.replace(f"members = [{members}]", f'members = [{members}, "boss"]')
    path = tmp_path / "council.toml"
    path.write_text(text + (BOSS if boss_rooms else ""), encoding="utf-8")
    return path


def _events(store: Path, run_id: str = RUN) -> list[dict[str, Any]]:
    return SqliteStore(str(store)).read(run_id)


def _checked(store: Path, run_id: str = RUN) -> None:
    for extra in ([], ["--v2"]):
        done = subprocess.run([sys.executable, "-m", "wopdsl", "--store", str(store), "check",
                               *extra, run_id], capture_output=True, text=True, timeout=120,
                              check=False)
        assert done.returncode == 0, (extra, done.stdout, done.stderr)


def test_the_question_is_put_to_the_room_and_the_answer_goes_to_the_same_task(
        tmp_path, agent, log):
    store = tmp_path / "runs.db"
    run = load(_council(tmp_path, agent)).run(store=str(store), run_id=RUN)
    assert run.status == "waiting-input"
    state = run.state
    [ask] = state.asks.open.values()
    assert (ask.member, ask.room, ask.question) == ("analyst", "market", QUESTION)
    assert run.snapshot()["currentNodeId"] == "room:market"
    assert [m.text for m in run.messages if m.room == "market"][-1] == \
        f"analyst's agent asks: {QUESTION}"
    asked = [e for e in _events(store) if e["type"] == "interrupt.requested"
             and e["nodeId"] == "analyst"]
    assert [e["payload"]["data"]["prompt"] for e in asked] == [QUESTION]
    message = run.reply_sync("Germany")
    assert run.wait_sync() == "completed", run.snapshot()
    first, answer = received(log)
    assert answer["taskId"] == first["taskId"]  # the same task, not a new one
    assert answer["text"] == "Germany"
    assert answer["data"] == [{"answer": {"messageId": message, "from": "boss",
                                          "text": "Germany", "mentions": []}}]
    assert [(m.sender, m.text) for m in run.messages if m.room == "market"][-2:] == [
        ("boss", "Germany"), ("analyst", "Sized the Germany market.")]
    assert not run.state.asks.open
    events = _events(store)
    assert [e["payload"]["callId"] for e in events if e["type"] == "agent.toolCalled"] == [
        "call/analyst/2/0", "call/analyst/2/1"]
    resolved = [e for e in events if e["type"] == "interrupt.resolved"
                and e["payload"]["interruptId"] == "a2a/call/analyst/2/0"]
    assert len(resolved) == 1 and resolved[0]["payload"]["resumeValue"]["messageId"] == message
    assert run.state.members["analyst"].turns == 1
    _checked(store)


def test_a_second_question_waits_again_on_the_same_task(tmp_path, agent, log):
    store = tmp_path / "runs.db"
    run = load(_council(tmp_path, agent)).run(store=str(store), run_id=RUN)
    run.reply_sync("again")
    assert run.wait_sync() == "waiting-input"
    [ask] = run.state.asks.open.values()
    assert ask.question == "Which market, really?"
    assert ask.key == "a2a/call/analyst/2/1"
    run.reply_sync("Spain")
    assert run.wait_sync() == "completed"
    assert [m["text"] for m in received(log)][1:] == ["again", "Spain"]
    assert len({m["taskId"] for m in received(log)}) == 1
    assert [m.text for m in run.messages if m.sender == "analyst"] == ["Sized the Spain market."]
    _checked(store)


def test_mentioning_the_asking_member_answers_it_without_a_second_turn(tmp_path, agent, log):
    store = tmp_path / "runs.db"
    run = load(_council(tmp_path, agent)).run(store=str(store), run_id=RUN)
    run.reply_sync("@analyst France")
    assert run.wait_sync() == "completed"
    assert [m["text"] for m in received(log)][1:] == ["@analyst France"]
    assert run.state.members["analyst"].turns == 1
    assert [m.text for m in run.messages if m.sender == "analyst"] == [
        "Sized the France market."]


def test_a_reply_without_a_room_goes_where_the_question_waits(tmp_path, agent, log):
    store = tmp_path / "runs.db"
    run = load(_council(tmp_path, agent, boss_rooms=("market", "side"))).run(
        store=str(store), run_id=RUN)
    assert run.status == "waiting-input"
    message = run.reply_sync("Italy")  # boss is in two open rooms: the asked one is meant
    assert run.wait_sync() == "completed"
    assert [m.room for m in run.messages if m.id == message] == ["market"]
    assert received(log)[-1]["text"] == "Italy"
    with pytest.raises(ValidationError, match="boss is in rooms market, side; say which"):
        run.reply_sync("and now?")  # nothing is asked any more: the room must be named


def test_a_question_nobody_can_answer_fails_the_turn_saying_so(tmp_path, agent, log):
    store = tmp_path / "runs.db"
    run = load(_council(tmp_path, agent, boss_rooms=())).run(store=str(store), run_id=RUN)
    assert run.status == "failed"
    [failed] = [e for e in _events(store) if e["type"] == "node.failed"]
    error = failed["payload"]["error"]
    assert error["code"] == "A2A_ERROR"
    assert error["message"] == (f"analyst's agent asks for input in room market ({QUESTION}), "
                                "but it has no human or external member to answer")
    assert len(received(log)) == 1
    _checked(store)


def test_wop_run_shows_the_question_and_wop_reply_answers_it(tmp_path, agent, log):
    path = _council(tmp_path, agent)
    store = str(tmp_path / "runs.db")
    wop = [sys.executable, "-m", "wopdsl", "--store", store]
    ran = subprocess.run([*wop, "run", str(path), "--run-id", RUN], capture_output=True,
                         text=True, timeout=120, check=False)
    assert f"-- analyst's agent asks: {QUESTION}" in ran.stdout, ran.stdout
    assert f"waiting for an answer in room market: analyst's agent asks: {QUESTION}" in \
        ran.stdout
    assert f'answer with: wop --store {store} reply {RUN} --room market "your answer"' in \
        ran.stdout
    replied = subprocess.run([*wop, "reply", RUN, "--room", "market", "Norway", "--json"],
                             capture_output=True, text=True, timeout=120, check=False)
    assert replied.returncode == 0, (replied.stdout, replied.stderr)
    assert json.loads(replied.stdout)["status"] == "completed"
    assert [m["text"] for m in received(log)][1:] == ["Norway"]


def test_an_http_client_answers_at_the_members_node(tmp_path, agent, log):
    from tests.server.conftest import start_server

    path = _council(tmp_path, agent)
    served = start_server(tmp_path, path)
    try:
        status, created, _ = served.request("POST", "/v1/runs", {"workflowId": "market"})
        assert status == 201, created
        run_id = created["runId"]
        snap = served.wait_status(run_id, "waiting-input")
        assert snap["currentNodeId"] == "room:market"
        turn = {"role": "user", "content": {"text": "Poland"}}
        status, body, _ = served.request("POST", f"/v1/runs/{run_id}/interrupts/analyst",
                                         {"resumeValue": turn})
        assert status == 200, body
        served.wait_status(run_id, "completed")
    finally:
        served.stop()
    assert [m["text"] for m in received(log)][1:] == ["Poland"]


def test_a_replay_fork_replays_the_question_and_its_answer_sending_nothing(tmp_path, agent,
                                                                          log):
    store = tmp_path / "runs.db"
    path = _council(tmp_path, agent)
    run = load(path).run(store=str(store), run_id=RUN)
    run.reply_sync("Germany")
    assert run.wait_sync() == "completed"
    opened = max(e["sequence"] for e in _events(store) if e["type"] == "conversation.opened")
    fork = "a2a-askfork-00000001"
    done = subprocess.run([sys.executable, "-m", "wopdsl", "--store", str(store), "fork", RUN,
                           "--from", str(opened), "--mode", "replay", "--run-id", fork,
                           "--council", str(path)], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert len(received(log)) == 2  # nothing was sent again
    events = _events(store, fork)
    assert not [e for e in events if e["type"] == "replay.diverged"]
    assert [e["payload"]["data"]["prompt"] for e in events if e["type"] ==
            "interrupt.requested" and e["nodeId"] == "analyst"] == [QUESTION]
    assert [e["payload"]["outputs"]["posts"][0]["text"] for e in events
            if e["type"] == "node.completed" and e["nodeId"] == "analyst"] == [
        "Sized the Germany market."]
    _checked(store, fork)


def test_closing_the_room_while_the_question_waits_fails_the_turn(tmp_path, agent, log):
    store = tmp_path / "runs.db"
    run = load(_council(tmp_path, agent)).run(store=str(store), run_id=RUN)
    assert run.status == "waiting-input"
    run.close_sync(room="market", outcome="no answer")
    assert run.wait_sync() == "failed"
    [failed] = [e for e in _events(store) if e["type"] == "node.failed"]
    assert failed["nodeId"] == "analyst"
    assert failed["payload"]["error"] == {
        "code": "A2A_ERROR", "message": "analyst's agent asks for input in room market "
        f"({QUESTION}), but it closed before anyone answered",
        "details": {"room": "market", "question": QUESTION}}
    assert run.error is not None and run.error["code"] == "TEAM_NODE_FAILED"
    assert len(received(log)) == 1
    _checked(store)
