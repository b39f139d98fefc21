"""Steering and several people over HTTP on a real `wop serve` (DESIGN.md §24).

The official client (openwop-client, v1 wire) posts a steering turn —
``{"resumeValue": {"operation": "exchange", "turn": {"content": {"text", "steer": true}}}}``
on the room's interrupt — while ``llm`` members stream from the scripted OpenAI-wire server:
it is answered at once with its message id, the named member's stream is closed within 200 ms
and the member runs again with the post. Two people of one room post at the same moment,
many times, while a batch runs: every post is saved once, none is refused or delayed.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

openwop_client = pytest.importorskip("openwop_client", reason="needs openwop-client (dev)")
from openwop_client import (  # noqa: E402
    CreateRunRequest,
    OpenwopClient,
    ResolveInterruptRequest,
)

from tests.llm.conftest import KEY, KEY_ENV  # noqa: E402
from tests.server.conftest import Served  # noqa: E402
from wopdsl.testing.model_server import Answer, Endless, ScriptedModelServer  # noqa: E402

BOARD = """\
[council]
id = "board"
task = "Set the budget."
global_concurrency = 2
max_turns_per_member = 40

[models.m]
model = "test-model"
api_key_env = "{key}"
retry_backoff_ms = 1

[[rooms]]
id = "board"
members = ["ann", "bob", "cfo", "cto"]

[[members]]
id = "cfo"
role = "cfo"
engine = "llm"
model = "m"
max_turns = 1

[[members]]
id = "cto"
role = "cto"
engine = "llm"
model = "m"
max_turns = 1

[[members]]
id = "ann"
role = "user"
engine = "human"
initial_turn = false

[[members]]
id = "bob"
role = "user"
engine = "human"
initial_turn = false
"""

CFO = Answer({"summary": "2M", "posts": [{"roomId": "board", "text": "Budget: 2M",
                                          "mentions": []}]})
CTO = {"summary": "fine", "posts": [{"roomId": "board", "text": "Infra is fine",
                                     "mentions": []}]}


def _turn(member: str, text: str, *mentions: str, steer: bool = False
          ) -> ResolveInterruptRequest:
    content: dict[str, Any] = {"text": text, "mentions": list(mentions),
                               **({"steer": True} if steer else {})}
    return ResolveInterruptRequest(resumeValue={"operation": "exchange", "turn": {
        "role": "user", "speakerId": f"host:{member}", "content": content}})


def _serve(serve: Any, model: ScriptedModelServer, folder: Path) -> Served:
    path = folder / "board.toml"
    path.write_text(BOARD.format(key=KEY_ENV), encoding="utf-8")
    served: Served = serve(path, env={"OPENAI_BASE_URL": model.url, KEY_ENV: KEY})
    return served


def _until(ready: Any, what: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > deadline:
            raise AssertionError(f"never happened: {what}")
        time.sleep(0.01)


def _check(served: Served, run_id: str) -> None:
    for flags in ((), ("--v2",)):
        done = subprocess.run([sys.executable, "-m", "wopdsl", "check", *flags, run_id,
                               "--store", str(served.store)],
                              capture_output=True, text=True, check=False, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr


def test_a_steer_over_http_closes_the_stream_at_once_and_the_member_runs_again(
        serve: Any, tmp_path: Path) -> None:
    with ScriptedModelServer() as model:
        model.add(Endless("thinking ", delay_s=0.005), CFO, member="cfo")
        model.add(Answer(CTO, chunks=40, chunk_delay_s=0.02), member="cto")
        served = _serve(serve, model, tmp_path)
        client = OpenwopClient(base_url=served.url, api_key="local", timeout=20)
        run_id = client.runs_create(CreateRunRequest(workflowId="board")).runId
        _until(lambda: any(r.member == "cfo" for r in model.requests), "the cfo streams")

        began = time.monotonic()
        answer = client.interrupts_resolve_by_run(
            run_id, "room:board", _turn("ann", "@cfo the budget is fixed at 2M", "cfo", steer=True))
        answered = time.monotonic() - began
        stream = next(r for r in model.requests if r.member == "cfo")
        _until(lambda: stream.ended is not None, "the cfo's stream is closed")

        assert (answer.runId, answer.nodeId, answered < 2.0) == (run_id, "room:board", True)
        assert stream.hung_up and stream.ended - began < 0.2  # type: ignore[operator]
        served.wait_status(run_id, "completed")
        cfo = [r for r in model.requests if r.member == "cfo"]
        assert len(cfo) == 2 and "team/ann/3/0" in str(cfo[1].body["messages"])
        events = served.request("GET", f"/v1/runs/{run_id}/events")[1]["events"]
        texts = [e["payload"]["turn"]["content"]["text"] for e in events
                 if e["type"] == "conversation.exchanged"
                 and e["payload"]["turn"]["role"] != "system"]
        assert texts == ["@cfo the budget is fixed at 2M", "Infra is fine", "Budget: 2M"]
        retried = [e["payload"]["lastError"] for e in events if e["type"] == "node.retried"]
        assert [r["code"] for r in retried] == ["STEERED"]
        _check(served, run_id)


def test_two_people_post_at_once_while_a_batch_runs_and_every_post_is_saved_once(
        serve: Any, tmp_path: Path) -> None:
    with ScriptedModelServer() as model:
        model.add(CFO, member="cfo")
        model.add(Answer(CTO, chunks=100, chunk_delay_s=0.02), member="cto")
        served = _serve(serve, model, tmp_path)
        run_id = OpenwopClient(base_url=served.url, api_key="local").runs_create(
            CreateRunRequest(workflowId="board")).runId
        _until(lambda: any(r.member == "cto" for r in model.requests), "the cto streams")
        answers: dict[str, list[str]] = {"ann": [], "bob": []}  # the run's status each time
        errors: list[BaseException] = []
        go = threading.Barrier(2)

        def talk(member: str) -> None:
            client = OpenwopClient(base_url=served.url, api_key="local", timeout=20)
            go.wait()
            try:
                for n in range(12):
                    answer = client.interrupts_resolve_by_run(
                        run_id, "room:board", _turn(member, f"{member} says {n}"))
                    answers[member].append(str(answer.status))
            except BaseException as exc:  # reported below, with the thread's member
                errors.append(exc)

        threads = [threading.Thread(target=talk, args=(m,)) for m in answers]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert not errors, errors
        snap = served.request("GET", f"/v1/runs/{run_id}")[1]
        assert snap["status"] == "running"  # all of it while the cto's turn streamed
        served.wait_status(run_id, "completed")

        events = served.request("GET", f"/v1/runs/{run_id}/events")[1]["events"]
        saved = [(e["payload"]["turn"]["speakerId"], e["payload"]["turn"]["messageId"],
                  e["payload"]["turn"]["content"]["text"]) for e in events
                 if e["type"] == "conversation.exchanged"
                 and e["payload"]["turn"]["role"] == "user"]
        for member in answers:
            mine = [(mid, text) for speaker, mid, text in saved if speaker == f"host:{member}"]
            assert [text for _, text in mine] == [f"{member} says {n}" for n in range(12)]
            assert set(answers[member]) == {"running"}  # none refused, none waited for
        assert len({mid for _, mid, _ in saved}) == 24
        _check(served, run_id)
