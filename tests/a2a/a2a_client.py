"""The official A2A SDK's client against a served council (``wop serve --a2a``), for the tests."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx


def agent_url(url: str, council: str = "desk") -> str:
    """The A2A endpoint of ``council`` on the host at ``url``."""
    return f"{url}/a2a/{council}"


async def connect(http: httpx.AsyncClient, url: str, *, streaming: bool,
                 council: str = "desk") -> Any:
    """The official SDK's client for ``council``, made from its agent card."""
    from a2a.client import A2ACardResolver, ClientConfig, ClientFactory

    card = await A2ACardResolver(http, agent_url(url, council)).get_agent_card()
    return ClientFactory(ClientConfig(httpx_client=http, streaming=streaming)).create(card)


def message(text: str, message_id: str, task_id: str = "", **extra: Any) -> Any:
    """A user message (``extra``: more fields of its JSON form, ``contextId``…)."""
    from a2a.types import Message
    from google.protobuf.json_format import ParseDict

    doc = {"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": text}], **extra}
    if task_id:
        doc["taskId"] = task_id
    return ParseDict(doc, Message())


async def send(a2a: Any, sent: Any) -> list[dict[str, Any]]:
    """Send ``sent`` through the client ``a2a``; every response of the agent (JSON form)."""
    from a2a.types import SendMessageRequest
    from google.protobuf.json_format import MessageToDict

    return [MessageToDict(r) async for r in a2a.send_message(SendMessageRequest(message=sent))]


def rpc(url: str, method: str, params: Any, *, token: str | None = None,
        raw: bytes | None = None, council: str = "desk") -> dict[str, Any]:
    """One JSON-RPC request to ``council``'s endpoint; its JSON answer."""
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    body = raw if raw is not None else json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
    response = httpx.post(agent_url(url, council), content=body, headers=headers, timeout=30)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def code(answer: dict[str, Any]) -> int:
    """The JSON-RPC error code of ``answer`` (which must be an error)."""
    assert "error" in answer, answer
    return int(answer["error"]["code"])


def checked(store: Path, run_id: str) -> None:
    """``wop check`` and ``wop check --v2`` pass on the run's log."""
    for extra in ([], ["--v2"]):
        done = subprocess.run([sys.executable, "-m", "wopdsl", "--store", str(store), "check",
                               *extra, run_id], capture_output=True, text=True, timeout=120,
                              check=False)
        assert done.returncode == 0, (extra, done.stdout, done.stderr)
