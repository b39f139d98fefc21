"""Exactly once across kill -9: a real `wop run` child killed mid-call and mid-turn.

The tool counts its own effects in a file. The child is killed (SIGKILL) between a call and
its result, or between a result and the next model call; `wop resume` then continues from
the log: a completed call is never made again, a call in flight is made again only when its
tool is idempotent.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.openwop_schemas import load_schemas
from tests.tools.conftest import EFFECTS_ENV, KEY_ENV, effects_in
from wopdsl import SqliteStore
from wopdsl.protocol.envelope import RunEventDoc
from wopdsl.testing.model_server import Answer, ScriptedModelServer, ToolCalls

pytestmark = pytest.mark.slow

HANG_ENV = "WOPDSL_TEST_HANG"

OPS = '''\
import json, os, time


def restart_service(name: str) -> str:
    """Restart a service (counts its effect; hangs once while HANG's marker is missing)."""
    with open(os.environ["WOPDSL_TEST_EFFECTS"], "a", encoding="utf-8") as out:
        out.write(json.dumps({"name": name, "pid": os.getpid()}) + "\\n")
        out.flush()
        os.fsync(out.fileno())
    marker = os.environ.get("WOPDSL_TEST_HANG")
    if marker and not os.path.exists(marker):
        open(marker, "w").close()
        time.sleep(120)
    return f"restarted {name}"
'''

COUNCIL = '''\
[council]
id = "ops"
task = "Fix the outage."

[models.m]
model = "test-model"
api_key_env = "{key}"
retry_backoff_ms = 1

[[rooms]]
id = "ops"
members = ["sre", "oncall"]

[[members]]
id = "sre"
role = "sre"
engine = "llm"
model = "m"
tools = ["ops:restart_service"]
[members.tool_policy.restart_service]
idempotent = {idempotent}
{approval}

[[members]]
id = "oncall"
role = "user"
engine = "human"
initial_turn = false
'''

DONE = Answer({"summary": "api restarted", "posts": [
    {"roomId": "ops", "text": "api is back", "mentions": []}]})


def write_council(folder: Path, *, idempotent: bool = False, approval: str | None = None
                  ) -> Path:
    (folder / "ops.py").write_text(OPS, encoding="utf-8")
    path = folder / "ops.toml"
    path.write_text(COUNCIL.format(key=KEY_ENV, idempotent=str(idempotent).lower(),
                                   approval=f'approval = "{approval}"' if approval else ""),
                    encoding="utf-8")
    return path


def environment(server: ScriptedModelServer, folder: Path, *, hang: bool) -> dict[str, str]:
    env = {**os.environ, "OPENAI_BASE_URL": server.url, KEY_ENV: "sk-test",
           EFFECTS_ENV: str(folder / "effects.jsonl"), "PYTHONIOENCODING": "utf-8"}
    env.pop("WOP_STORE", None)
    if hang:
        env[HANG_ENV] = str(folder / "hung-once")
    return env


def wop(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "wopdsl", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120, check=False)


def start(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "wopdsl", *args], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def log(folder: Path, run_id: str) -> list[RunEventDoc]:
    store = SqliteStore(folder / "runs.db")
    try:
        return store.read(run_id)
    finally:
        store.close()


def kill_when(proc: subprocess.Popen[str], ready: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            out, err = proc.communicate()
            raise AssertionError(f"the child ended before {what}: {out}\n{err}")
        if ready():
            os.kill(proc.pid, signal.SIGKILL)
            proc.communicate()
            return
        time.sleep(0.02)
    proc.kill()
    out, err = proc.communicate()
    raise AssertionError(f"timed out waiting for {what}: {out}\n{err}")


def killed_mid_call(server: ScriptedModelServer, folder: Path) -> dict[str, str]:
    """``wop run`` r1, killed while its tool call hangs after its effect; the environment."""
    env = environment(server, folder, hang=True)
    server.add(ToolCalls(("restart_service", {"name": "api"})))
    proc = start("run", "ops.toml", "--store", "runs.db", "--run-id", "r1", cwd=folder,
                 env=env)
    kill_when(proc, lambda: len(effects_in(folder / "effects.jsonl")) == 1,
              "the tool made its effect")
    return env


def kinds(events: list[RunEventDoc], *types: str) -> list[str]:
    return [e["type"] for e in events if e["type"] in types]


def test_kill_between_a_result_and_the_next_model_call(server: ScriptedModelServer,
                                                       tmp_path: Path) -> None:
    write_council(tmp_path)
    env = environment(server, tmp_path, hang=False)
    server.add(ToolCalls(("restart_service", {"name": "api"})), Answer({"summary": "late"},
                                                                        delay_s=60))
    proc = start("run", "ops.toml", "--store", "runs.db", "--run-id", "r1", cwd=tmp_path,
                 env=env)
    # Killed once the result is durable and the next model call is on its way (its answer
    # is held back): the resume must not call the tool again.
    kill_when(proc, lambda: len(server.requests) == 2 and "agent.toolReturned" in kinds(
        log(tmp_path, "r1"), "agent.toolReturned"), "the tool's result was recorded")
    assert len(effects_in(tmp_path / "effects.jsonl")) == 1
    server.add(DONE)
    resumed = wop("resume", "r1", "ops.toml", "--store", "runs.db", cwd=tmp_path, env=env)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert len(effects_in(tmp_path / "effects.jsonl")) == 1  # never made again
    last = server.requests[-1].body["messages"]
    assert [m["content"] for m in last if m["role"] == "tool"] == ["restarted api"]
    assert [m["tool_calls"][0]["function"]["name"] for m in last
            if m["role"] == "assistant"] == ["restart_service"]
    events = log(tmp_path, "r1")
    assert kinds(events, "agent.toolCalled", "agent.toolReturned") == [
        "agent.toolCalled", "agent.toolReturned"]
    assert events[-1]["type"] == "run.completed"
    load_schemas().check_events(events)


def test_kill_mid_call_of_a_tool_that_is_not_idempotent_fails_clearly(
        server: ScriptedModelServer, tmp_path: Path) -> None:
    write_council(tmp_path)
    env = killed_mid_call(server, tmp_path)
    resumed = wop("resume", "r1", "ops.toml", "--store", "runs.db", "--json", cwd=tmp_path,
                  env=env)
    assert resumed.returncode == 1, resumed.stdout + resumed.stderr
    outcome = json.loads(resumed.stdout)
    assert outcome["status"] == "failed"
    failed = next(e for e in log(tmp_path, "r1") if e["type"] == "node.failed")["payload"]
    assert failed["error"]["code"] == "TOOL_IN_DOUBT"
    assert "was in flight when the run stopped" in failed["error"]["message"]
    assert len(effects_in(tmp_path / "effects.jsonl")) == 1
    assert len(server.requests) == 1  # nothing was asked again either
    load_schemas().check_events(log(tmp_path, "r1"))


def test_kill_mid_call_of_an_idempotent_tool_makes_it_again(
        server: ScriptedModelServer, tmp_path: Path) -> None:
    write_council(tmp_path, idempotent=True)
    env = killed_mid_call(server, tmp_path)
    server.add(DONE)
    resumed = wop("resume", "r1", "ops.toml", "--store", "runs.db", cwd=tmp_path, env=env)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert len(effects_in(tmp_path / "effects.jsonl")) == 2  # idempotent: made again, once
    events = log(tmp_path, "r1")
    called = [e["payload"] for e in events if e["type"] == "agent.toolCalled"]
    assert [c.get("repeated", False) for c in called] == [False, True]
    assert len(server.requests) == 2  # the model was not asked for the call again
    load_schemas().check_events(events)


def test_approvals_from_the_cli_and_a_call_in_doubt_asks_its_approver_again(
        server: ScriptedModelServer, tmp_path: Path) -> None:
    write_council(tmp_path, approval="oncall")
    env = environment(server, tmp_path, hang=True)
    server.add(ToolCalls(("restart_service", {"name": "api"})))
    first = wop("run", "ops.toml", "--store", "runs.db", "--run-id", "r1", cwd=tmp_path,
                env=env)
    assert first.returncode == 3, first.stdout + first.stderr  # waits for the approval
    assert "[approval] oncall to decide: sre asks to call restart_service" in first.stdout
    assert ("waiting for approval: oncall decides call/sre/1/0 (sre asks to call "
            'restart_service: restart_service({"name": "api"}))') in first.stdout
    assert "decide with: wop --store runs.db approve r1 [--reject --reason TEXT]" in \
        first.stdout
    assert effects_in(tmp_path / "effects.jsonl") == []
    # Approved: the call is made (and hangs); the process is killed mid-call.
    proc = start("approve", "r1", "--store", "runs.db", cwd=tmp_path, env=env)
    kill_when(proc, lambda: len(effects_in(tmp_path / "effects.jsonl")) == 1,
              "the approved call made its effect")
    # On resume the call is in doubt and not idempotent: its approver is asked again.
    again = wop("resume", "r1", "--store", "runs.db", cwd=tmp_path, env=env)
    assert again.returncode == 3, again.stdout + again.stderr
    assert "asks to call restart_service again (it was in flight when the run stopped)" in \
        again.stdout
    server.add(DONE)
    refused = wop("approve", "r1", "--as", "oncall", "--reject", "--reason",
                  "it restarted already", "--store", "runs.db", cwd=tmp_path, env=env)
    assert refused.returncode == 0, refused.stdout + refused.stderr
    assert "rejected call/sre/1/0 restart_service" in refused.stdout
    assert len(effects_in(tmp_path / "effects.jsonl")) == 1
    tool = [m for m in server.requests[-1].body["messages"] if m["role"] == "tool"]
    assert tool[0]["content"] == ("error (REJECTED): not called: oncall rejected this call: "
                                  "it restarted already")
    events = log(tmp_path, "r1")
    assert [e["type"] for e in events if e["type"].startswith("approval.")] == [
        "approval.requested", "approval.granted", "approval.requested", "approval.rejected"]
    load_schemas().check_events(events)
    nothing = wop("approve", "r1", "--store", "runs.db", cwd=tmp_path, env=env)
    assert nothing.returncode == 2 and "has ended" in nothing.stderr
