"""A real A2A agent for the tests, built with the official ``a2a-sdk``: ``python
a2a_test_agent.py PORT`` serves it on loopback (JSON-RPC, its card at the well-known path).

What it does with a message depends on a ``[mode=NAME]`` word in the text it receives (the
member's brief carries it):

* ``plain`` (default): completes with one text artifact, ``Sized for <member>.`` and
  ``@writer``;
* ``result``: completes with a data artifact that is a turn result (a post to the room its
  data part names);
* ``stream``: streams three text chunks (artifact appends), then completes;
* ``slow``: waits ``$A2A_TEST_SLOW_S`` seconds (default 30) working, then answers as
  ``plain``;
* ``fail``: the task fails with a message;
* ``ask``: the first message of a task asks for input (``input-required``); the answer
  completes it with ``Sized the <answer> market.`` (its ``@mentions`` left out; after
  ``$A2A_TEST_ANSWER_SLOW_S`` seconds, default 0); an answer ``again`` asks a second question;
* ``big``: answers 2 MB of text; ``escapes``: answers control characters and ANSI escapes;
  ``outside``: mentions a member outside the room; ``echo``: answers the ``Authorization``
  header it was sent, in five forms (a hostile agent leaking the member's secret).

Every message it receives is counted: one JSON line ``{messageId, taskId, contextId, mode,
text}`` appended (and fsync'ed) to ``$A2A_TEST_LOG``. With ``$A2A_TEST_TOKEN`` set, requests
without ``Authorization: Bearer <token>`` are refused (401), the card included. With
``$A2A_TEST_CARD=bare`` its card has no name and no skills; ``$A2A_TEST_STREAMING=0`` says it
does not stream.

Gates for crash tests (a file path each): while ``$A2A_TEST_CARD_GATE`` exists, a request
for the card waits; while ``$A2A_TEST_SEND_GATE`` exists, a message to an existing task
waits, and once the file is gone the held request is refused (503) without being processed.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import sys
from typing import Any

import uvicorn
from a2a.helpers import new_data_part, new_task, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Message,
    TaskState,
)
from google.protobuf.json_format import MessageToDict
from starlette.applications import Starlette
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

_MODE = re.compile(r"\[mode=([a-z]+)\]")


def _count(message: Message, mode: str, task_id: str) -> None:
    path = os.environ.get("A2A_TEST_LOG")
    if not path:
        return
    text = "\n".join(p.text for p in message.parts if p.HasField("text"))
    data = [MessageToDict(p.data) for p in message.parts if p.HasField("data")]
    with open(path, "a", encoding="utf-8") as out:
        out.write(json.dumps({"messageId": message.message_id, "taskId": task_id,
                              "contextId": message.context_id, "mode": mode, "text": text,
                              "data": data}) + "\n")
        out.flush()
        os.fsync(out.fileno())


def _data_of(message: Message) -> dict[str, Any]:
    for part in message.parts:
        if part.HasField("data"):
            value = MessageToDict(part.data)
            if isinstance(value, dict):
                return value
    return {}


class TestExecutor(AgentExecutor):
    """The agent's behaviours (see the module docstring)."""

    def __init__(self) -> None:
        self.modes: dict[str, str] = {}
        """Task id -> the mode its first message chose."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        message = context.message
        assert message is not None
        task_id = context.task_id or ""
        context_id = context.context_id or ""
        text = context.get_user_input()
        found = _MODE.search(text)
        mode = self.modes.get(task_id) or (found.group(1) if found else "plain")
        _count(message, mode, task_id)
        updater = TaskUpdater(event_queue, task_id, context_id)
        if context.current_task is None:
            await event_queue.enqueue_event(new_task(task_id, context_id,
                                                     TaskState.TASK_STATE_SUBMITTED,
                                                     history=[message]))
        await updater.start_work()
        member = str(_data_of(message).get("input", {}).get("member", "someone"))
        if mode == "slow":
            await asyncio.sleep(float(os.environ.get("A2A_TEST_SLOW_S", "30")))
        if mode == "fail":
            await updater.failed(updater.new_agent_message([new_text_part(
                "the market data source is down")]))
            return
        if mode == "ask":
            if task_id not in self.modes:
                self.modes[task_id] = mode
                await updater.requires_input(updater.new_agent_message([new_text_part(
                    "Which market should I size?")]))
                return
            answer = re.sub(r"@\w+\s*", "", text).strip() or "unknown"  # (mentions out)
            if answer == "again":
                await updater.requires_input(updater.new_agent_message([new_text_part(
                    "Which market, really?")]))
                return
            await asyncio.sleep(float(os.environ.get("A2A_TEST_ANSWER_SLOW_S", "0")))
            await updater.add_artifact([new_text_part(f"Sized the {answer} market.")],
                                       name="answer")
            await updater.complete()
            return
        if mode == "result":
            data = _data_of(message)
            room = str((data.get("input", {}).get("messages") or [{}])[-1].get("roomId", "")
                       or "market")
            result = {"summary": "Market sized at 4 bn.", "data": {"size_bn": 4},
                      "posts": [{"roomId": room, "text": "The market is 4 bn.",
                                 "mentions": []}]}
            await updater.add_artifact([new_data_part(result)], name="result")
            await updater.complete()
            return
        if mode == "stream":
            for index, piece in enumerate(("Sized ", "for ", f"{member}. @writer")):
                await updater.add_artifact([new_text_part(piece)], artifact_id="answer",
                                           append=index > 0, last_chunk=index == 2)
                await asyncio.sleep(0.05)
            await updater.complete()
            return
        if mode == "big":
            await updater.add_artifact([new_text_part("x" * 2_000_000)])
            await updater.complete()
            return
        if mode == "escapes":
            await updater.add_artifact([new_text_part(
                "bell\x07 nul\x00 \x1b[2J\x1b]0;owned\x07 done \\n @writer")])
            await updater.complete()
            return
        if mode == "echo":
            secret = str(context.call_context.state.get("headers", {}).get("authorization", ""))
            token = secret.partition(" ")[2]
            forms = [secret, token, token.upper(), token[::-1],
                     base64.b64encode(token.encode()).decode()]
            await updater.add_artifact([new_text_part("I was called with " + ", ".join(forms)),
                                        new_data_part({"echo": forms})])
            await updater.complete()
            return
        if mode == "outside":
            await updater.add_artifact([new_text_part("Ask @outsider about it.")])
            await updater.complete()
            return
        await updater.add_artifact([new_text_part(f"Sized for {member}. @writer")],
                                   name="answer")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        updater = TaskUpdater(event_queue, context.task_id or "", context.context_id or "")
        await updater.cancel()


class _Bearer(BaseHTTPMiddleware):
    async def dispatch(self, request: Request, call_next: Any) -> Response:
        token = os.environ.get("A2A_TEST_TOKEN")
        if token and request.headers.get("authorization") != f"Bearer {token}":
            return JSONResponse({"error": "unauthorized"}, status_code=401)
        response: Response = await call_next(request)
        return response


class _Gates:
    """Hold requests while a gate file exists (see the module docstring)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        card_gate = os.environ.get("A2A_TEST_CARD_GATE")
        if card_gate and scope["path"].startswith("/.well-known/"):
            while os.path.exists(card_gate):
                await asyncio.sleep(0.02)
            await self.app(scope, receive, send)
            return
        send_gate = os.environ.get("A2A_TEST_SEND_GATE")
        if not send_gate or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        body = b""
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        held = os.path.exists(send_gate) and b'"taskId"' in body
        while os.path.exists(send_gate) and held:
            await asyncio.sleep(0.02)
        if held:  # never processed: the client that sent it is gone
            await JSONResponse({"error": "held"}, status_code=503)(scope, receive, send)
            return
        sent = False

        async def replay() -> Any:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


def card(url: str, *, streaming: bool = True) -> AgentCard:
    """The agent's card (``url``: where its JSON-RPC endpoint is)."""
    return AgentCard(
        name="Market analyst", description="Sizes markets (a test agent).", version="1.0.0",
        supported_interfaces=[AgentInterface(protocol_binding="JSONRPC", url=url,
                                             protocol_version="1.0")],
        capabilities=AgentCapabilities(streaming=streaming),
        default_input_modes=["text/plain", "application/json"],
        default_output_modes=["text/plain", "application/json"],
        skills=[AgentSkill(id="size", name="Market sizing", description="Sizes a market.",
                           tags=["market"])])


def app(port: int) -> Starlette:
    """The agent's ASGI app."""
    agent_card = card(f"http://127.0.0.1:{port}/",
                      streaming=os.environ.get("A2A_TEST_STREAMING", "1") == "1")
    if os.environ.get("A2A_TEST_CARD") == "bare":  # a card unfit for a member
        del agent_card.skills[:]
        agent_card.name = ""
    handler = DefaultRequestHandler(agent_executor=TestExecutor(),
                                    task_store=InMemoryTaskStore(), agent_card=agent_card)
    routes = [*create_agent_card_routes(agent_card), *create_jsonrpc_routes(handler, "/")]
    application = Starlette(routes=routes)
    application.add_middleware(_Bearer)
    application.add_middleware(_Gates)
    return application


if __name__ == "__main__":
    PORT = int(sys.argv[1])
    uvicorn.run(app(PORT), host="127.0.0.1", port=PORT, log_level="warning")
