"""A steer survives kill -9 at each step (DESIGN.md §24): before, during and after the stop.

A real `wop run` child drives a board of two ``llm`` members (the scripted OpenAI-wire server
streams their answers slowly); the steer is a `wop reply --steer` child or another process's
post, and the driver is killed with SIGKILL before the post, between the post and the stop,
while the stop waits for a tool call in flight, after the stop but before the batch settles,
and after the settlement. `wop resume` then carries on from the log: the post is applied
once, nothing of a stopped attempt is anywhere, the stopped member runs again with the post
in its prompt, a finished tool call is not made again; `wop check` (v1 and v2) and `wop
replay` agree.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.tools.conftest import EFFECTS_ENV, KEY_ENV, effects_in
from wopdsl import SqliteStore, attach, load
from wopdsl.protocol.envelope import RunEventDoc
from wopdsl.testing.model_server import Answer, Endless, ScriptedModelServer, ToolCalls

pytestmark = pytest.mark.slow

RUN = "steered-board-000001"
RELEASE_ENV = "WOPDSL_TEST_RELEASE"
STEER = "@cfo stop: the budget is fixed at 2M"

OPS = '''\
import json, os, time


def slow_restart(name: str) -> str:
    """Restart a service: counts its effect, then waits for the release file."""
    with open(os.environ["WOPDSL_TEST_EFFECTS"], "a", encoding="utf-8") as out:
        out.write(json.dumps({"name": name, "pid": os.getpid()}) + "\\n")
        out.flush()
        os.fsync(out.fileno())
    deadline = time.monotonic() + 60
    while not os.path.exists(os.environ["WOPDSL_TEST_RELEASE"]) and time.monotonic() < deadline:
        time.sleep(0.01)
    return f"restarted {name}"
'''

COUNCIL = '''\
[council]
id = "board"
task = "Set the budget."
global_concurrency = 2
max_turns_per_member = 1

[models.m]
model = "test-model"
api_key_env = "{key}"
retry_backoff_ms = 1

[[rooms]]
id = "board"
members = ["me", "cfo", "cto"]

[[members]]
id = "cfo"
role = "cfo"
engine = "llm"
model = "m"
tools = ["ops:slow_restart"]
[members.tool_policy.slow_restart]
idempotent = {idempotent}

[[members]]
id = "cto"
role = "cto"
engine = "llm"
model = "m"

[[members]]
id = "me"
role = "user"
engine = "human"
initial_turn = false
'''

STREAMING = Endless("thinking about 5M ", delay_s=0.01)
CFO = Answer({"summary": "2M", "posts": [{"roomId": "board", "text": "Budget: 2M",
                                          "mentions": []}]})
CTO = Answer({"summary": "fine", "posts": [{"roomId": "board", "text": "Infra is fine",
                                            "mentions": []}]})


class Board:
    """The council folder, its environment and the `wop` children."""

    def __init__(self, server: ScriptedModelServer, folder: Path, *,
                 idempotent: bool = False) -> None:
        self.server = server
        self.folder = folder
        (folder / "ops.py").write_text(OPS, encoding="utf-8")
        (folder / "board.toml").write_text(
            COUNCIL.format(key=KEY_ENV, idempotent=str(idempotent).lower()), encoding="utf-8")
        self.release = folder / "release"
        self.env = {**os.environ, "OPENAI_BASE_URL": server.url, KEY_ENV: "sk-test",
                    EFFECTS_ENV: str(folder / "effects.jsonl"), RELEASE_ENV: str(self.release),
                    "PYTHONIOENCODING": "utf-8"}
        self.env.pop("WOP_STORE", None)

    def start(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen([sys.executable, "-m", "wopdsl", *args, "--store", "runs.db"],
                                cwd=self.folder, env=self.env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)

    def wop(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "wopdsl", *args, "--store", "runs.db"],
                              cwd=self.folder, env=self.env, capture_output=True, text=True,
                              timeout=120, check=False)

    def drive(self) -> subprocess.Popen[str]:
        return self.start("run", "board.toml", "--run-id", RUN)

    def log(self) -> list[RunEventDoc]:
        store = SqliteStore(self.folder / "runs.db")
        try:
            return store.read(RUN) if store.exists(RUN) else []
        finally:
            store.close()

    def effects(self) -> int:
        return len(effects_in(self.folder / "effects.jsonl"))

    def steer_elsewhere(self) -> str:
        """Post the steer from this process (another process than the driver)."""

        async def post() -> str:
            store = SqliteStore(self.folder / "runs.db")
            try:
                council = load(self.folder / "board.toml")
                posted = await attach(store, RUN, council).reply(STEER, room="board", steer=True)
            finally:
                store.close()
            assert posted is not None
            return posted

        return asyncio.run(post())

    def streaming(self, member: str) -> Callable[[], bool]:
        return lambda: any(e["type"] == "output.chunk" and e.get("nodeId") == member
                           for e in self.log())

    def resume(self) -> None:
        done = self.wop("resume", RUN)
        assert done.returncode == 0, done.stdout + done.stderr

    def check(self, post: str, *, cfo_calls: int) -> list[RunEventDoc]:
        """The run completed with the post applied once; checks and replay agree."""
        events = self.log()
        assert events[-1]["type"] == "run.completed"
        messages = [e["payload"]["turn"] for e in events if e["type"] == "conversation.exchanged"
                    and e["payload"]["turn"]["role"] != "system"]
        assert [t["content"]["text"] for t in messages if t["messageId"] == post] == [STEER]
        assert sorted(t["content"]["text"] for t in messages) == sorted(
            [STEER, "Budget: 2M", "Infra is fine"])  # once; nothing of a stopped attempt
        cfo = [r for r in self.server.requests if r.member == "cfo"]
        assert len(cfo) == cfo_calls
        assert STEER in str(cfo[-1].body["messages"]) and post in str(cfo[-1].body["messages"])
        started = [e["payload"] for e in events if e["type"] == "node.started"
                   and e.get("nodeId") == "cfo"]
        assert started[-1]["triggers"] == [post] and started[-1]["turn"] == 1
        assert "STEERED" in [e["payload"].get("lastError", {}).get("code") for e in events
                             if e["type"] == "node.retried" and e.get("nodeId") == "cfo"]
        for flags in ((), ("--v2",)):
            checked = self.wop("check", *flags, RUN)
            assert checked.returncode == 0, checked.stdout + checked.stderr
        replayed = self.wop("replay", RUN, "--json")
        assert json.loads(replayed.stdout)["status"] == "completed", replayed.stderr
        assert self.log() == events  # replay appended nothing
        return events


def kill_when(proc: subprocess.Popen[str], ready: Callable[[], bool], what: str) -> None:
    """SIGKILL ``proc`` once ``ready()`` holds."""
    wait_until(proc, ready, what)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate()


def wait_until(proc: subprocess.Popen[str], ready: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            out, err = proc.communicate()
            raise AssertionError(f"the child ended before {what}: {out}\n{err}")
        if ready():
            return
        time.sleep(0.02)
    proc.kill()
    out, err = proc.communicate()
    raise AssertionError(f"timed out waiting for {what}: {out}\n{err}")


def posted(events: list[RunEventDoc]) -> str | None:
    return next((e["payload"]["turn"]["messageId"] for e in events
                 if e["type"] == "conversation.exchanged"
                 and e["payload"]["turn"]["content"].get("steer")), None)


def steered(events: list[RunEventDoc]) -> bool:
    return any(e["type"] == "node.retried" and
               e["payload"].get("lastError", {}).get("code") == "STEERED" for e in events)


def test_killed_before_the_post_a_resumed_driver_takes_a_steer_from_wop_reply(
        server: ScriptedModelServer, tmp_path: Path) -> None:
    board = Board(server, tmp_path)
    server.add(STREAMING, STREAMING, CFO, member="cfo")
    server.add(STREAMING, CTO, member="cto")
    kill_when(board.drive(), board.streaming("cfo"), "the cfo streams")
    resumed = board.start("resume", RUN)
    wait_until(resumed, lambda: sum(r.member == "cfo" for r in server.requests) == 2,
               "the resumed cfo streams again")
    reply = board.wop("reply", RUN, "--room", "board", "--steer", STEER)
    assert reply.returncode == 0, reply.stdout + reply.stderr  # followed the run to its end
    out, err = resumed.communicate(timeout=60)
    assert resumed.returncode == 0, out + err
    post = posted(board.log())
    assert post is not None
    events = board.check(post, cfo_calls=3)
    cfo = [(e["type"], e["payload"].get("lastError", {}).get("code")) for e in events
           if e.get("nodeId") == "cfo" and e["type"] in ("node.retried", "node.started")]
    assert cfo == [("node.started", None), ("node.retried", None), ("node.started", None),
                   ("node.retried", "STEERED"), ("node.started", None)]


def test_killed_between_the_post_and_the_stop_resume_applies_the_steer(
        server: ScriptedModelServer, tmp_path: Path) -> None:
    board = Board(server, tmp_path)
    server.add(STREAMING, CFO, member="cfo")
    server.add(STREAMING, CTO, member="cto")
    driver = board.drive()
    wait_until(driver, lambda: board.streaming("cfo")() and board.streaming("cto")(),
               "both stream")
    os.kill(driver.pid, signal.SIGSTOP)  # frozen: it cannot react to the post
    post = board.steer_elsewhere()
    os.kill(driver.pid, signal.SIGKILL)
    driver.communicate()
    assert not steered(board.log())  # the post is durable, the stop never happened
    board.resume()
    board.check(post, cfo_calls=2)
    assert len([r for r in server.requests if r.member == "cto"]) == 2  # crashed: again


def test_killed_while_the_stop_waits_for_a_tool_call_resume_applies_the_steer_once(
        server: ScriptedModelServer, tmp_path: Path) -> None:
    board = Board(server, tmp_path, idempotent=True)
    server.add(ToolCalls(("slow_restart", {"name": "api"})), CFO, member="cfo")
    server.add(STREAMING, CTO, member="cto")
    driver = board.drive()
    wait_until(driver, lambda: board.effects() == 1, "the tool call is in flight")
    post = board.steer_elsewhere()
    # The driver sees the post and stops the cfo's turn, which waits for its call.
    kill_when(driver, lambda: len([r for r in server.requests if r.member == "cto"]) == 1 and
              time.sleep(0.3) is None, "the stop waits for the call")
    log = board.log()
    assert not steered(log)
    assert [e["type"] for e in log if e["type"].startswith("agent.tool")] == [
        "agent.toolCalled"]
    board.release.touch()
    board.resume()
    board.check(post, cfo_calls=2)
    assert board.effects() == 2  # in doubt at the kill and idempotent: made again, once


def test_killed_after_the_stop_before_the_batch_settles_the_call_is_not_made_again(
        server: ScriptedModelServer, tmp_path: Path) -> None:
    board = Board(server, tmp_path)
    server.add(ToolCalls(("slow_restart", {"name": "api"})), CFO, member="cfo")
    server.add(STREAMING, CTO, member="cto")
    driver = board.drive()
    wait_until(driver, lambda: board.effects() == 1, "the tool call is in flight")
    post = board.steer_elsewhere()
    time.sleep(0.3)  # the driver has seen the post: the stop waits for the call
    board.release.touch()
    # The call ends and is recorded; the cfo's turn stops; the cto streams on (no settle).
    kill_when(driver, lambda: any(e["type"] == "agent.toolReturned" for e in board.log()) and
              time.sleep(0.3) is None, "the call was recorded")
    assert not steered(board.log())
    board.resume()
    events = board.check(post, cfo_calls=2)
    assert board.effects() == 1  # recorded before the kill: never made again
    assert [e["type"] for e in events if e["type"].startswith("agent.tool")] == [
        "agent.toolCalled", "agent.toolReturned"]


def test_killed_after_the_settlement_the_restarted_turn_keeps_the_post(
        server: ScriptedModelServer, tmp_path: Path) -> None:
    board = Board(server, tmp_path)
    server.add(STREAMING, STREAMING, CFO, member="cfo")
    server.add(Answer({"summary": "fine", "posts": [
        {"roomId": "board", "text": "Infra is fine", "mentions": []}]}, delay_s=0.5),
        member="cto")
    driver = board.drive()
    wait_until(driver, board.streaming("cfo"), "the cfo streams")
    post = board.steer_elsewhere()
    kill_when(driver, lambda: steered(board.log()) and
              sum(r.member == "cfo" for r in server.requests) == 2, "the restart streams")
    board.resume()
    board.check(post, cfo_calls=3)
