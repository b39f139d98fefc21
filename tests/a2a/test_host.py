"""``wop serve --a2a``: a council served as an A2A 1.0 agent, driven by the official SDK's client.

A real ``wop serve`` subprocess serves ``examples/a2a-desk.toml`` (the analyst asks the boss,
a person, and the A2A client answers for the boss; the lead, as chair, gives the answer).
The checks on the wire are those of the official A2A TCK (github.com/a2aproject/a2a-tck,
tests/mandatory) that apply to a council: the card, SendMessage and its continuation,
GetTask with historyLength, CancelTask, ListTasks paging, the streaming methods, and the
JSON-RPC error codes.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("a2a.client", reason="the a2a extra (wopdsl[a2a]) is not installed")

from tests.a2a.a2a_client import agent_url, checked, code, connect, message, rpc, send
from tests.server.conftest import ALICE, BOB, Served, start_server

DESK = Path(__file__).resolve().parents[2] / "examples" / "a2a-desk.toml"
QUESTION = "Which market should I size, @boss?"


@pytest.fixture
def host(tmp_path: Path) -> Iterator[Served]:
    """``wop serve examples/a2a-desk.toml --a2a`` on loopback."""
    served = start_server(tmp_path, DESK, args=("--a2a",))
    yield served
    served.stop()


def test_the_agent_card_says_what_is_served(host: Served) -> None:
    for path in ("/a2a/desk/.well-known/agent-card.json", "/.well-known/agent-card.json"):
        card = httpx.get(host.url + path, timeout=10).json()
        assert card["name"] == "desk"
        assert card["supportedInterfaces"] == [{"url": agent_url(host.url),
                                                "protocolBinding": "JSONRPC",
                                                "protocolVersion": "1.0"}]
        assert card["capabilities"] == {"streaming": True, "pushNotifications": False,
                                        "extendedAgentCard": False}
        [skill] = card["skills"]
        assert skill["id"] == "desk" and skill["tags"] == ["lead", "market analyst", "person"]
        assert "boss" in skill["description"]  # people take part: input may be required
        assert "securitySchemes" not in card  # no tokens, no scheme
    assert httpx.get(host.url + "/a2a/nope/.well-known/agent-card.json",
                     timeout=10).status_code == 404


def test_a_client_convenes_the_council_with_a_human_turn_in_the_middle(host: Served) -> None:
    async def go() -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
        from a2a.types import GetTaskRequest
        from google.protobuf.json_format import MessageToDict

        async with httpx.AsyncClient(timeout=30) as http:
            client = await connect(http, host.url, streaming=False)
            first = await send(client, message("Size the EU heat-pump market.", "m-1",
                                                 contextId="ctx-7"))
            task_id = first[0]["task"]["id"]
            second = await send(client, message("Germany", "m-2", task_id))
            task = MessageToDict(await client.get_task(GetTaskRequest(id=task_id)))
            await client.close()
            return first, second, task

    first, second, task = asyncio.run(go())
    [asked] = first
    assert asked["task"]["contextId"] == "ctx-7"
    status = asked["task"]["status"]
    assert status["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert status["message"]["parts"][0]["text"] == \
        f"boss is asked in room market: analyst said: {QUESTION}"
    assert status["message"]["metadata"] == {"member": "boss", "room": "market"}
    [done] = second
    assert done["task"]["id"] == task["id"] and done["task"]["status"]["state"] == \
        "TASK_STATE_COMPLETED"
    answer, result = task["artifacts"]
    assert answer["parts"] == [{"text": "Sized the Germany market."}]
    assert result["parts"][0]["data"]["task"] == "Size the EU heat-pump market."
    assert [(m["role"], m["parts"][0]["text"]) for m in task["history"]] == [
        ("ROLE_USER", "Size the EU heat-pump market."), ("ROLE_AGENT", QUESTION),
        ("ROLE_USER", "Germany"),
        ("ROLE_AGENT", "Every decision is closed: the chair has the last word.")]
    assert task["history"][0]["messageId"] == "m-1"
    checked(host.store, task["id"])


def test_streaming_sends_each_post_and_the_state_it_stops_in(host: Served) -> None:
    async def go() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        async with httpx.AsyncClient(timeout=30) as http:
            client = await connect(http, host.url, streaming=True)
            first = await send(client, message("Size it.", "s-1"))
            second = await send(client, message("Spain", "s-2",
                                                  first[0]["task"]["id"]))
            await client.close()
            return first, second

    first, second = asyncio.run(go())
    assert "task" in first[0] and "task" in second[0]
    updates = [e.get("statusUpdate") or e.get("artifactUpdate") for e in first[1:]]
    assert [(u["status"]["state"], u["status"]["message"]["parts"][0]["text"])
            for u in updates] == [("TASK_STATE_WORKING", QUESTION),
                                  ("TASK_STATE_INPUT_REQUIRED",
                                   f"boss is asked in room market: analyst said: {QUESTION}")]
    kinds = [next(iter(e)) for e in second[1:]]
    assert kinds == ["statusUpdate", "statusUpdate", "artifactUpdate", "artifactUpdate",
                     "statusUpdate"]
    posts = [e["statusUpdate"]["status"]["message"] for e in second[1:3]]
    assert [(m["metadata"]["from"], m["parts"][0]["text"]) for m in posts] == [
        ("boss", "Spain"), ("system", "Every decision is closed: the chair has the last word.")]
    assert second[3]["artifactUpdate"]["artifact"]["parts"] == [
        {"text": "Sized the Spain market."}]
    assert second[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"


def test_the_same_message_sent_again_finds_the_same_task(host: Served) -> None:
    params = {"message": {"messageId": "again-1", "role": "ROLE_USER",
                          "parts": [{"text": "Size it."}]}}
    first = rpc(host.url, "SendMessage", params)["result"]["task"]
    second = rpc(host.url, "SendMessage", params)["result"]["task"]
    assert first["id"] == second["id"]
    listed = rpc(host.url, "ListTasks", {})["result"]
    assert listed["totalSize"] == 1 and listed["pageSize"] == 1


def test_tasks_get_cancel_list_and_the_json_rpc_errors(host: Served) -> None:
    """What the TCK's mandatory JSON-RPC and protocol tests check, on a council."""
    def send(text: str, message_id: str, **extra: Any) -> dict[str, Any]:
        message = {"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": text}],
                   **extra}
        answer = rpc(host.url, "SendMessage", {"message": message})
        assert "result" in answer, answer
        return dict(answer["result"]["task"])

    first = send("First task.", "t-1", contextId="ctx-a")
    second = send("Second task.", "t-2", contextId="ctx-b")
    task_id = first["id"]
    got = rpc(host.url, "GetTask", {"id": task_id, "historyLength": 1})["result"]
    assert got["id"] == task_id and len(got["history"]) == 1
    assert got["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert got["status"]["timestamp"]
    assert code(rpc(host.url, "GetTask", {"id": task_id, "historyLength": -1})) == -32602
    assert code(rpc(host.url, "GetTask", {"id": "no-such-task"})) == -32001
    assert code(rpc(host.url, "CancelTask", {"id": "no-such-task"})) == -32001
    listed = rpc(host.url, "ListTasks", {})["result"]
    assert [t["id"] for t in listed["tasks"]] == [second["id"], task_id]  # newest first
    assert "artifacts" not in listed["tasks"][0]
    only = rpc(host.url, "ListTasks", {"contextId": "ctx-a"})["result"]
    assert [t["id"] for t in only["tasks"]] == [task_id]
    paged = rpc(host.url, "ListTasks", {"pageSize": 1})["result"]
    assert paged["totalSize"] == 2 and len(paged["tasks"]) == 1 and paged["nextPageToken"]
    rest = rpc(host.url, "ListTasks", {"pageSize": 1, "pageToken": paged["nextPageToken"]})
    assert [t["id"] for t in rest["result"]["tasks"]] == [task_id]
    assert rest["result"]["nextPageToken"] == ""
    for bad in ({"pageSize": 0}, {"pageSize": 101}, {"pageToken": "nope"},
                {"historyLength": -2}):
        assert code(rpc(host.url, "ListTasks", bad)) == -32602, bad
    canceled = rpc(host.url, "CancelTask", {"id": task_id})["result"]
    assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
    assert code(rpc(host.url, "CancelTask", {"id": task_id})) == -32002
    late = {"message": {"messageId": "t-3", "role": "ROLE_USER", "taskId": task_id,
                        "parts": [{"text": "too late"}]}}
    assert code(rpc(host.url, "SendMessage", late)) == -32004
    wrong = {"message": {"messageId": "t-4", "role": "ROLE_USER", "taskId": second["id"],
                         "contextId": "ctx-a", "parts": [{"text": "x"}]}}
    assert code(rpc(host.url, "SendMessage", wrong)) == -32602
    assert code(rpc(host.url, "SubscribeToTask", {"id": task_id})) == -32004
    assert code(rpc(host.url, "SendMessage", {"message": {"kind": "message"}})) == -32602
    assert code(rpc(host.url, "CreateTaskPushNotificationConfig",
                      {"taskId": task_id, "url": "https://example.com/hook"})) == -32003
    assert code(rpc(host.url, "GetExtendedAgentCard", {})) == -32007
    assert code(rpc(host.url, "NoSuchMethod", {})) == -32601
    assert code(rpc(host.url, "", None, raw=b"{not json")) == -32700
    assert code(rpc(host.url, "", None, raw=b'{"jsonrpc": "1.0", "id": 1, '
                                              b'"method": "GetTask"}')) == -32600
    # A2A 0.3 method names are served too (the SDK's 0.3 adapter).
    old = rpc(host.url, "tasks/get", {"id": second["id"]})["result"]
    assert old["id"] == second["id"] and old["status"]["state"] == "input-required"
    checked(host.store, task_id)


def test_a_body_over_the_hosts_bound_is_a_json_rpc_error(tmp_path: Path) -> None:
    served = start_server(tmp_path, DESK, args=("--a2a", "--max-body-bytes", "512"))
    try:
        answer = rpc(served.url, "SendMessage", {"message": {
            "messageId": "big", "role": "ROLE_USER", "parts": [{"text": "x" * 4096}]}})
    finally:
        served.stop()
    assert answer["error"] == {"code": -32600,
                               "message": "the request body is larger than 512 bytes"}


def test_tokens_guard_the_agent_and_its_tasks(tmp_path: Path) -> None:
    tokens_file = tmp_path / "tokens.toml"
    tokens_file.write_text(f'[tokens]\nalice = "{ALICE}"\nbob = "{BOB}"\n', encoding="utf-8")
    served = start_server(tmp_path, DESK, args=("--a2a", "--tokens", str(tokens_file)))
    try:
        card = httpx.get(served.url + "/a2a/desk/.well-known/agent-card.json", timeout=10)
        assert card.status_code == 200  # discovery needs no token
        assert card.json()["securitySchemes"] == {"bearer": {"httpAuthSecurityScheme": {
            "scheme": "Bearer", "description": "a token of the host (wop serve --tokens)"}}}
        params = {"message": {"messageId": "tok-1", "role": "ROLE_USER",
                              "parts": [{"text": "Size it."}]}}
        refused = httpx.post(agent_url(served.url), json={"jsonrpc": "2.0", "id": 1,
                                                       "method": "SendMessage",
                                                       "params": params}, timeout=10)
        assert refused.status_code == 401
        task = rpc(served.url, "SendMessage", params, token=ALICE)["result"]["task"]
        assert code(rpc(served.url, "GetTask", {"id": task["id"]}, token=BOB)) == -32001
        assert code(rpc(served.url, "CancelTask", {"id": task["id"]}, token=BOB)) == -32001
        assert rpc(served.url, "ListTasks", {}, token=BOB)["result"]["tasks"] == []
        answer = {"message": {"messageId": "tok-2", "role": "ROLE_USER",
                              "taskId": task["id"], "parts": [{"text": "hijack"}]}}
        assert code(rpc(served.url, "SendMessage", answer, token=BOB)) == -32001
        events = httpx.get(f"{served.url}/v1/runs/{task['id']}/events",
                           headers={"Authorization": f"Bearer {ALICE}"}, timeout=10).json()
        assert events["events"][0]["payload"]["metadata"]["principal"] == "alice"
    finally:
        served.stop()
    assert ALICE not in served.logs() and BOB not in served.logs()


def test_a_task_outlives_a_killed_host_and_completes_after_restart(tmp_path: Path) -> None:
    """kill -9 of `wop serve` while the task waits; the restarted host answers for it."""
    served = start_server(tmp_path, DESK, args=("--a2a",))
    task = rpc(served.url, "SendMessage", {"message": {
        "messageId": "k-1", "role": "ROLE_USER", "parts": [{"text": "Size it."}]}})
    task_id = task["result"]["task"]["id"]
    os.kill(served.proc.pid, signal.SIGKILL)
    served.proc.wait(10)
    again = start_server(tmp_path, DESK, args=("--a2a",), store=served.store)

    async def go() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        from a2a.types import SubscribeToTaskRequest
        from google.protobuf.json_format import MessageToDict

        async with httpx.AsyncClient(timeout=30) as http:
            client = await connect(http, again.url, streaming=True)
            followed = [MessageToDict(e) async for e in client.subscribe(
                SubscribeToTaskRequest(id=task_id))]
            done = await send(client, message("Italy", "k-2", task_id))
            await client.close()
            return followed, done

    try:
        followed, done = asyncio.run(go())
    finally:
        again.stop()
    assert followed[0]["task"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert followed[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert done[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    checked(served.store, task_id)



PANEL = """\
[council]
id = "panel"
task = "Review the plan."

[[rooms]]
id = "review"
members = ["author", "partner", "boss"]

[[members]]
id = "author"
role = "author"
engine = "script"
script = [
  { summary = "asked", posts = [{ room = "review", text = "Sign it?", mentions = ["partner"] }] },
]

[[members]]
id = "partner"
role = "partner agent"
engine = "external"
initial_turn = false

[[members]]
id = "boss"
role = "person"
engine = "human"
initial_turn = false
"""


def test_the_client_answers_as_the_external_member_the_run_waits_for(tmp_path: Path) -> None:
    council = tmp_path / "panel.toml"
    council.write_text(PANEL, encoding="utf-8")
    served = start_server(tmp_path, council, args=("--a2a",))
    try:
        def rpc(method: str, params: Any) -> dict[str, Any]:
            response = httpx.post(f"{served.url}/a2a/panel", json={
                "jsonrpc": "2.0", "id": 1, "method": method, "params": params}, timeout=30)
            answer: dict[str, Any] = response.json()
            return answer

        task = rpc("SendMessage", {"message": {"messageId": "p-1", "role": "ROLE_USER",
                                               "parts": [{"text": "Review it."}]}})
        task = task["result"]["task"]
        assert task["status"]["message"]["metadata"] == {"member": "partner", "room": "review"}
        wrong = rpc("SendMessage", {"message": {
            "messageId": "p-2", "role": "ROLE_USER", "taskId": task["id"],
            "metadata": {"member": "author"}, "parts": [{"text": "Signed."}]}})
        assert wrong["error"]["code"] == -32602
        assert "its human and external members: boss, partner" in wrong["error"]["message"]
        done = rpc("SendMessage", {"message": {"messageId": "p-3", "role": "ROLE_USER",
                                               "taskId": task["id"],
                                               "parts": [{"text": "Signed."}]}})
        assert done["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
        [signed] = [m for m in done["result"]["task"]["history"]
                    if m["parts"][0]["text"] == "Signed."]
        assert (signed["role"], signed["metadata"]["from"]) == ("ROLE_USER", "partner")
    finally:
        served.stop()
    checked(served.store, task["id"])
