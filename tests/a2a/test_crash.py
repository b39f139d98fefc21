"""Exactly once across kill -9: a `wop run` child killed while its a2a member's task runs.

The agent counts the messages it receives. The child is killed (SIGKILL) once the agent's
task id is kept; `wop resume` then follows that task (GetTask) and never sends again. The
same for the answer to the agent's question (``input-required``), sent by a `wop reply`
child killed mid-way, and for a `wop serve --a2a` host killed while the a2a member's turn of
a task an A2A client started runs: the restarted host completes the client's task.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from typing import Any

import pytest

from tests.a2a.conftest import TOKEN, TOKEN_ENV, council_toml, received, serving
from wopdsl import SqliteStore

pytestmark = pytest.mark.slow

RUN = "a2a-crash-00000000001"


def _kept_task(store: str, run: str = RUN) -> str:
    """The task id kept for the analyst's message (empty while none is)."""
    try:
        records = SqliteStore(store).read_private(run, "call/analyst/")
    except Exception:
        return ""
    for key, value in records.items():
        if key.endswith("#call"):
            return str(json.loads(value).get("remote", ""))
    return ""


@pytest.mark.parametrize("kept", [True, False], ids=["task-id-kept", "task-id-not-kept-yet"])
def test_a_killed_run_resumes_by_following_the_task_never_sending_twice(tmp_path, log, kept):
    path = tmp_path / "council.toml"
    store = str(tmp_path / "runs.db")
    env = {**os.environ, TOKEN_ENV: f"Bearer {TOKEN}"}
    with serving(log, A2A_TEST_SLOW_S="3") as url:
        path.write_text(council_toml(url, "slow"), encoding="utf-8")
        child = subprocess.Popen([sys.executable, "-m", "wopdsl", "--store", store, "run",
                                  str(path), "--run-id", RUN], env=env,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while not _kept_task(store) and time.monotonic() < deadline:
            assert child.poll() is None, "the run ended before its agent's task was kept"
            time.sleep(0.02)
        task = _kept_task(store)
        assert task, "the agent's task id was never kept"
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=10)
        assert [m["taskId"] for m in received(log)] == [task]
        if not kept:  # as if killed after the message left, before its task id was kept:
            # the resume finds the task among the agent's tasks of the member's context
            sqlite = SqliteStore(store)
            records = sqlite.read_private(RUN, "call/analyst/")
            key = next(k for k in records if k.endswith("#call"))
            record = json.loads(records[key])
            del record["remote"]
            sqlite.save_private(RUN, {key: json.dumps(record)})
            assert not _kept_task(store)
        done = subprocess.run([sys.executable, "-m", "wopdsl", "--store", store, "resume",
                               RUN, str(path), "--json"], env=env, capture_output=True,
                              text=True, timeout=120, check=False)
        assert done.returncode == 0, (done.stdout, done.stderr)
    assert len(received(log)) == 1  # the agent counted one message: never sent twice
    events = SqliteStore(store).read(RUN)
    assert len([e for e in events if e["type"] == "agent.toolCalled"]) == 1
    [returned] = [e["payload"] for e in events if e["type"] == "agent.toolReturned"]
    assert returned["a2a"] == {"taskId": task, "state": "completed"}
    assert [e["payload"]["outputs"]["posts"][0]["text"] for e in events
            if e["type"] == "node.completed" and e.get("nodeId") == "analyst"] == [
        "Sized for analyst. @writer"]
    for extra in ([], ["--v2"]):
        check = subprocess.run([sys.executable, "-m", "wopdsl", "--store", store, "check",
                                *extra, RUN], capture_output=True, text=True, timeout=120,
                               check=False)
        assert check.returncode == 0, (extra, check.stdout)


ASK_RUN = "a2a-crash-ask-000000001"
HUMAN = '\n[[members]]\nid = "boss"\nrole = "person"\nengine = "human"\ninitial_turn = false\n'


def _answer_called(store: str) -> bool:
    """Whether the message carrying the answer is recorded as sent (``agent.toolCalled``)."""
    return any(e["type"] == "agent.toolCalled" and e["payload"]["callId"] == "call/analyst/2/1"
               for e in SqliteStore(store).read(ASK_RUN))


@pytest.mark.parametrize("where", ["agent-working", "answer-held"])
def test_a_killed_reply_resumes_and_the_answer_reaches_the_task_once(tmp_path, log, where):
    """Killed while the agent works on the answer (the resume follows the task), or after the
    answer was recorded as sent but before the agent got it (the resume sends it, once)."""
    path = tmp_path / "council.toml"
    store = str(tmp_path / "runs.db")
    gate = tmp_path / "gate"
    env = {**os.environ, TOKEN_ENV: f"Bearer {TOKEN}"}
    wop = [sys.executable, "-m", "wopdsl", "--store", store]
    with serving(log, A2A_TEST_ANSWER_SLOW_S="3", A2A_TEST_SEND_GATE=str(gate)) as url:
        text = council_toml(url, "ask").replace('members = ["writer", "analyst"]',
                                                'members = ["writer", "analyst", "boss"]')
        path.write_text(text + HUMAN, encoding="utf-8")
        ran = subprocess.run([*wop, "run", str(path), "--run-id", ASK_RUN], env=env,
                             capture_output=True, text=True, timeout=120, check=False)
        assert "waiting for an answer in room market" in ran.stdout, ran.stdout
        if where == "answer-held":
            gate.touch()
        child = subprocess.Popen([*wop, "reply", ASK_RUN, "--room", "market", "Germany"],
                                 env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (
                len(received(log)) == 2 if where == "agent-working" else _answer_called(store)):
            assert child.poll() is None, "the reply ended before the answer was sent"
            time.sleep(0.02)
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=10)
        gate.unlink(missing_ok=True)  # a held answer is refused, never processed
        assert len(received(log)) == (2 if where == "agent-working" else 1)
        done = subprocess.run([*wop, "resume", ASK_RUN, str(path), "--json"], env=env,
                              capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, (done.stdout, done.stderr)
    sent = received(log)
    assert [m["text"] for m in sent][1:] == ["Germany"]  # the answer reached the task once
    assert sent[1]["taskId"] == sent[0]["taskId"]
    events = SqliteStore(store).read(ASK_RUN)
    calls = [e["payload"]["callId"] for e in events if e["type"] == "agent.toolCalled"]
    # followed (the agent had it), or recorded again and sent (it never got there)
    assert calls[1:] == ["call/analyst/2/1"] * (1 if where == "agent-working" else 2)
    assert [e["payload"]["outputs"]["posts"][0]["text"] for e in events
            if e["type"] == "node.completed" and e.get("nodeId") == "analyst"] == [
        "Sized the Germany market."]
    for extra in ([], ["--v2"]):
        check = subprocess.run([*wop, "check", *extra, ASK_RUN], capture_output=True,
                               text=True, timeout=120, check=False)
        assert check.returncode == 0, (extra, check.stdout)


def test_a_killed_a2a_host_completes_the_clients_task_sending_once(tmp_path, log):
    """kill -9 of `wop serve --a2a` mid-turn (its a2a member's call runs), then a restart."""
    import asyncio

    import httpx

    from tests.a2a.a2a_client import checked, connect, rpc
    from tests.server.conftest import start_server

    path = tmp_path / "council.toml"
    env = {TOKEN_ENV: f"Bearer {TOKEN}"}
    with serving(log, A2A_TEST_SLOW_S="3") as url:
        path.write_text(council_toml(url, "slow"), encoding="utf-8")
        served = start_server(tmp_path, path, args=("--a2a",), env=env)
        try:
            started = rpc(served.url, "SendMessage", {
                "message": {"messageId": "c-1", "role": "ROLE_USER", "contextId": "ctx-9",
                            "parts": [{"text": "Size the EU heat-pump market."}]},
                "configuration": {"returnImmediately": True}}, council="market")
            task_id = started["result"]["task"]["id"]
            deadline = time.monotonic() + 60
            while not _kept_task(str(served.store), task_id) and time.monotonic() < deadline:
                assert served.proc.poll() is None, served.logs()
                time.sleep(0.02)  # the analyst's turn runs: its agent works on the message
            assert _kept_task(str(served.store), task_id)
        finally:
            os.kill(served.proc.pid, signal.SIGKILL)
            served.proc.wait(10)
        assert len(received(log)) == 1
        again = start_server(tmp_path, path, args=("--a2a",), env=env, store=served.store)

        async def get() -> dict[str, Any]:
            from a2a.types import GetTaskRequest
            from google.protobuf.json_format import MessageToDict

            async with httpx.AsyncClient(timeout=30) as http:
                a2a = await connect(http, again.url, streaming=False, council="market")
                try:
                    return MessageToDict(await a2a.get_task(GetTaskRequest(id=task_id)))
                finally:
                    await a2a.close()

        try:
            again.wait_status(task_id, "completed", timeout=60)
            task = asyncio.run(get())
        finally:
            again.stop()
    assert (task["id"], task["contextId"]) == (task_id, "ctx-9")
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert [(m["metadata"]["from"], m["parts"][0]["text"]) for m in task["history"][1:]] == [
        ("writer", "Size it, please."), ("analyst", "Sized for analyst. @writer")]
    assert len(received(log)) == 1  # the agent counted one message: never sent twice
    events = SqliteStore(str(served.store)).read(task_id)
    assert len([e for e in events if e["type"] == "agent.toolCalled"]) == 1
    checked(served.store, task_id)
