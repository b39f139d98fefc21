"""Exactly once across kill -9: a `wop run` child killed while its a2a member's task runs.

The agent counts the messages it receives. The child is killed (SIGKILL) once the agent's
task id is kept; `wop resume` then follows that task (GetTask) and never sends again.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from tests.a2a.conftest import TOKEN, TOKEN_ENV, council_toml, received, serving
from wopdsl import SqliteStore

pytestmark = pytest.mark.slow

RUN = "a2a-crash-00000000001"


def _kept_task(store: str) -> str:
    """The task id kept for the analyst's message (empty while none is)."""
    try:
        records = SqliteStore(store).read_private(RUN, "call/analyst/")
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
